#include "train/args/lr_scheduler_kwargs.h"

#include <cmath>
#include <optional>
#include <set>

#include "runtime/terminal/text_list.h"

namespace zt::train {
namespace {

using nlohmann::json;

// The options one schedule takes: each read at most once and checked; what is left unread is an
// unknown key.
class KwargsReader {
 public:
  KwargsReader(const json& kwargs, std::string schedule, std::vector<std::string>& errors)
      : kwargs_(kwargs), schedule_(std::move(schedule)), errors_(errors) {}

  std::optional<double> number(const std::string& key) {
    const json* value = take(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_number()) return value->get<double>();
    fail(key + " must be a number, got " + value->dump());
    return std::nullopt;
  }

  std::optional<std::int64_t> whole(const std::string& key) {
    const std::optional<double> value = number(key);
    if (!value) return std::nullopt;
    if (*value == std::floor(*value) && std::abs(*value) < 9.0e15) return static_cast<std::int64_t>(*value);
    fail(key + " must be a whole number of steps, got " + kwargs_.at(key).dump());
    return std::nullopt;
  }

  bool has(const std::string& key) const {
    const auto found = kwargs_.find(key);
    return found != kwargs_.end() && !found->is_null();
  }

  std::optional<std::string> choice(const std::string& key, const std::vector<std::string>& choices) {
    const json* value = take(key);
    if (value == nullptr) return std::nullopt;
    for (const std::string& accepted : choices)
      if (*value == accepted) return accepted;
    std::string listed;
    for (const std::string& accepted : choices) listed += (listed.empty() ? "'" : ", '") + accepted + "'";
    fail(key + " " + value->dump() + " is unknown; expected " + listed);
    return std::nullopt;
  }

  // Keys nobody read: transformers passes them on as keyword arguments and Python refuses them.
  void refuse_the_rest(const std::vector<std::string>& accepted) {
    const std::string listed = join_list(accepted);
    for (const auto& [key, value] : kwargs_.items())
      if (!read_.count(key))
        fail(key + " is not an option of this schedule (" + (listed.empty() ? "it takes none" : "it takes " + listed) +
             ")");
  }

  void fail(const std::string& what) { errors_.push_back("--lr_scheduler_kwargs for " + schedule_ + ": " + what); }

 private:
  // The value of `key`, nullptr when absent; a null value counts as absent, as Python's None
  // leaves a default in place.
  const json* take(const std::string& key) {
    read_.insert(key);
    const auto found = kwargs_.find(key);
    return found == kwargs_.end() || found->is_null() ? nullptr : &*found;
  }

  const json& kwargs_;
  std::string schedule_;
  std::vector<std::string>& errors_;
  std::set<std::string> read_;
};

std::optional<WsdShape> wsd_shape(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  if (*name == "linear") return WsdShape::kLinear;
  if (*name == "cosine") return WsdShape::kCosine;
  return WsdShape::kOneMinusSqrt;
}

// cosine_with_min_lr's and cosine_warmup_with_min_lr's floor: min_lr or min_lr_rate, exactly one.
void read_min_lr(KwargsReader& reader, double learning_rate, LrScheduleConfig& config) {
  const std::optional<double> min_lr = reader.number("min_lr"), rate = reader.number("min_lr_rate");
  if (min_lr && rate) return reader.fail("only one of min_lr or min_lr_rate should be set");
  if (!min_lr && !rate)
    return reader.fail(
        "one of min_lr or min_lr_rate should be set, e.g. '{\"min_lr_rate\": 0.1}' or "
        "'{\"min_lr\": 1e-6}'");
  if (min_lr && learning_rate <= 0) return reader.fail("min_lr is a share of --learning_rate, which is 0");
  config.min_lr_rate = rate ? *rate : *min_lr / learning_rate;
  if (config.min_lr_rate < 0 || config.min_lr_rate > 1)
    reader.fail("the floor must lie between 0 and the peak rate (min_lr_rate in [0, 1]), got min_lr_rate " +
                json(config.min_lr_rate).dump());
}

void read_plateau(KwargsReader& reader, PlateauConfig& c) {
  if (auto mode = reader.choice("mode", {"min", "max"})) c.maximize = *mode == "max";
  if (auto factor = reader.number("factor")) c.factor = *factor;
  if (c.factor >= 1.0) reader.fail("factor should be < 1.0, got " + json(c.factor).dump());
  if (auto patience = reader.whole("patience")) c.patience = *patience;
  if (auto threshold = reader.number("threshold")) c.threshold = *threshold;
  if (auto mode = reader.choice("threshold_mode", {"rel", "abs"})) c.relative_threshold = *mode == "rel";
  if (auto cooldown = reader.whole("cooldown")) c.cooldown = *cooldown;
  if (auto min_lr = reader.number("min_lr")) c.min_lr = *min_lr;
  if (auto eps = reader.number("eps")) c.eps = *eps;
  reader.refuse_the_rest({"mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps"});
}

void read_warmup_stable_decay(KwargsReader& reader, HfScheduleOptions& o) {
  const std::vector<std::string> shapes = {"linear", "cosine", "1-sqrt"};
  if (!reader.has("num_decay_steps"))
    reader.fail("num_decay_steps is required (the steps of the decay phase), e.g. '{\"num_decay_steps\": 100}'");
  const std::optional<std::int64_t> decay = reader.whole("num_decay_steps");
  if (decay && *decay < 0) reader.fail("num_decay_steps must be >= 0");
  o.num_decay_steps = decay.value_or(0);
  o.num_stable_steps = reader.whole("num_stable_steps");
  if (auto shape = wsd_shape(reader.choice("warmup_type", shapes))) o.warmup_type = *shape;
  if (auto shape = wsd_shape(reader.choice("decay_type", shapes))) o.decay_type = *shape;
  if (auto ratio = reader.number("min_lr_ratio")) o.min_lr_ratio = *ratio;
  o.num_cycles = reader.number("num_cycles");
  reader.refuse_the_rest(
      {"num_decay_steps", "num_stable_steps", "warmup_type", "decay_type", "min_lr_ratio", "num_cycles"});
}

}  // namespace

void read_lr_scheduler_kwargs(const json& kwargs, double learning_rate, LrScheduleConfig& config,
                              std::vector<std::string>& errors, std::vector<std::string>& warnings) {
  std::string name;
  for (const std::string& candidate : hf_schedule_names())
    if (hf_schedule_kind(candidate) == config.kind) name = candidate;
  KwargsReader reader(kwargs, name, errors);
  HfScheduleOptions& o = config.hf;
  switch (config.kind) {
    case ScheduleKind::kConstant:
    case ScheduleKind::kConstantWithWarmup:
    case ScheduleKind::kInverseSqrt:
      if (!kwargs.empty())
        warnings.push_back("--lr_scheduler_kwargs " + kwargs.dump() + " has no effect: transformers' get_scheduler " +
                           "passes no options to " + name + " (in HF's Trainer as here)" +
                           (config.kind == ScheduleKind::kInverseSqrt
                                ? "; its timescale is the warmup steps, 10000 without warmup"
                                : ""));
      return;
    case ScheduleKind::kLinear:
      return reader.refuse_the_rest({});
    case ScheduleKind::kCosine:
    case ScheduleKind::kCosineWithRestarts:
      o.num_cycles = reader.number("num_cycles");
      return reader.refuse_the_rest({"num_cycles"});
    case ScheduleKind::kPolynomial:
      if (auto lr_end = reader.number("lr_end")) o.lr_end = *lr_end;
      if (auto power = reader.number("power")) o.power = *power;
      if (!(learning_rate > o.lr_end))
        reader.fail("lr_end (" + json(o.lr_end).dump() + ") must be smaller than the initial lr (--learning_rate " +
                    json(learning_rate).dump() + ")");
      return reader.refuse_the_rest({"lr_end", "power"});
    case ScheduleKind::kCosineWithMinLr:
      o.num_cycles = reader.number("num_cycles");
      read_min_lr(reader, learning_rate, config);
      return reader.refuse_the_rest({"num_cycles", "min_lr", "min_lr_rate"});
    case ScheduleKind::kCosineWarmupWithMinLr:
      o.num_cycles = reader.number("num_cycles");
      o.warmup_lr_rate = reader.number("warmup_lr_rate");
      read_min_lr(reader, learning_rate, config);
      return reader.refuse_the_rest({"num_cycles", "min_lr", "min_lr_rate", "warmup_lr_rate"});
    case ScheduleKind::kWarmupStableDecay:
      return read_warmup_stable_decay(reader, o);
    case ScheduleKind::kReduceOnPlateau:
      return read_plateau(reader, config.plateau);
    default:
      return;  // DeepSpeed's schedules read their scheduler block instead
  }
}

std::vector<std::string> lr_schedule_warnings(const LrScheduleConfig& config) {
  if (config.kind != ScheduleKind::kWarmupStableDecay) return {};
  const HfScheduleOptions& o = config.hf;
  const std::int64_t stable = o.num_stable_steps.value_or(config.total_steps - config.warmup_steps - o.num_decay_steps);
  const std::int64_t phases = config.warmup_steps + stable + o.num_decay_steps;
  if (phases == config.total_steps && stable >= 0) return {};
  return {"warmup_stable_decay: warmup " + std::to_string(config.warmup_steps) + " + stable " + std::to_string(stable) +
          " + decay " + std::to_string(o.num_decay_steps) + " steps make " + std::to_string(phases) +
          ", but training runs " + std::to_string(config.total_steps) +
          " steps: the steps after the decay train at min_lr_ratio, and a negative stable phase starts the decay "
          "part-way (as transformers does); set num_decay_steps (and num_stable_steps) to fit"};
}

}  // namespace zt::train
