#include "train/deepspeed/deepspeed_config.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/error.h"
#include "runtime/json_text.h"
#include "runtime/usage_error.h"
#include "runtime/user_paths.h"
#include "train/deepspeed/deepspeed_blocks.h"

namespace zt::train {
namespace {

constexpr int kMaxDepth = 64;  // far deeper than any DeepSpeed config nests

// What a config says is part of the arguments (HF's TrainingArguments takes it as a dict too):
// JSON that does not parse, a key refused, a value of the wrong type or out of range, a value
// that contradicts a flag are usage errors (exit code 2), as a bad flag is. A file that cannot
// be read stays an error of its own, as a data file's.
template <class Read>
auto as_usage_error(Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const UsageError&) {
    throw;
  } catch (const NoGpuError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// a * b * c, or nullopt when it does not fit in 64 bits.
std::optional<std::int64_t> product(std::int64_t a, std::int64_t b, std::int64_t c) {
  std::int64_t ab = 0, abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return std::nullopt;
  return abc;
}

// DeepSpeed's rules (runtime/config.py): infer the missing member of
// train_batch_size = micro_batch_per_gpu * gradient_accumulation_steps * world_size.
void resolve_batch(ConfigBlock& root, int world_size, DeepSpeedConfig& config) {
  const std::string where = root.where("") + ": ";
  std::optional<std::int64_t> given[3];
  const char* names[3] = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"};
  for (int i = 0; i < 3; ++i) {
    given[i] = root.find<std::int64_t>(names[i]);
    ZT_REQUIRE(!given[i] || *given[i] > 0, root.where(names[i]) + " must be > 0, got " + std::to_string(*given[i]));
  }
  auto [tb, mb, gas] = given;
  const std::int64_t ws = world_size;
  // HF fills only the batch keys a config names, so one that names neither reaches DeepSpeed,
  // which refuses it; "auto" is what lets the flags decide.
  ZT_REQUIRE(tb || mb, where +
                           "either train_batch_size or train_micro_batch_size_per_gpu must be set, as DeepSpeed "
                           "requires: add \"train_micro_batch_size_per_gpu\": \"auto\" to take "
                           "--per_device_train_batch_size");
  if (tb && mb && !gas) gas = *tb / *mb / ws, config.inferred.push_back("gradient_accumulation_steps");
  if (tb && gas && !mb) mb = *tb / ws / *gas, config.inferred.push_back("train_micro_batch_size_per_gpu");
  if (mb && gas && !tb) tb = product(*mb, *gas, ws).value_or(-1), config.inferred.push_back("train_batch_size");
  if (tb && !mb && !gas) {
    gas = 1, mb = *tb / ws;
    config.inferred.insert(config.inferred.end(), {"gradient_accumulation_steps", "train_micro_batch_size_per_gpu"});
  }
  if (mb && !tb && !gas) {
    gas = 1, tb = product(*mb, 1, ws).value_or(-1);
    config.inferred.insert(config.inferred.end(), {"gradient_accumulation_steps", "train_batch_size"});
  }
  auto describe = [&](const char* name, std::int64_t value) {
    bool was_inferred = std::find(config.inferred.begin(), config.inferred.end(), name) != config.inferred.end();
    return std::string(name) + " " + std::to_string(value) + (was_inferred ? " (inferred)" : "");
  };
  const std::string numbers = describe("train_batch_size", *tb) + ", " +
                              describe("train_micro_batch_size_per_gpu", *mb) + ", " +
                              describe("gradient_accumulation_steps", *gas) + ", world_size " + std::to_string(ws);
  ZT_REQUIRE(*tb > 0 && *mb > 0 && *gas > 0, where + "the batch sizes must all be > 0: " + numbers);
  const std::optional<std::int64_t> expected = product(*mb, *gas, ws);
  ZT_REQUIRE(expected == *tb, where +
                                  "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * "
                                  "world_size: " +
                                  numbers + " (" + std::to_string(*mb) + " * " + std::to_string(*gas) + " * " +
                                  std::to_string(ws) + " = " +
                                  (expected ? std::to_string(*expected) : std::string("more than 2^63")) + ")");
  config.train_batch_size = *tb, config.micro_batch_per_gpu = *mb, config.gradient_accumulation_steps = *gas;
}

// The dtype ZeRO reduces gradients in: unset, the working dtype, as DeepSpeed's default.
std::optional<DType> read_communication_data_type(ConfigBlock& root) {
  if (!root.has("communication_data_type")) return std::nullopt;
  std::string type = root.get<std::string>("communication_data_type", "");
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  ZT_REQUIRE(type == "fp32" || type == "fp16" || type == "bf16",
             root.where("communication_data_type") + " '" + type + "' is not one of fp32, fp16, bf16");
  return deepspeed_dtype(type);
}

// The config's JSON object; a key given twice in one object is an error, as DeepSpeed makes it
// when it reads a file, and nesting is bounded so that no input can exhaust the stack.
nlohmann::json read_json_object(std::string_view text, const std::string& source) {
  std::vector<std::pair<std::set<std::string>, std::string>> objects;  // keys seen, and the last one
  std::string duplicate;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth > kMaxDepth) fail(source + " nests deeper than " + std::to_string(kMaxDepth) + " levels");
    if (event == nlohmann::json::parse_event_t::object_start) objects.emplace_back();
    if (event == nlohmann::json::parse_event_t::object_end && !objects.empty()) objects.pop_back();
    if (event == nlohmann::json::parse_event_t::key && duplicate.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!objects.back().first.insert(key).second) {
        for (auto it = objects.begin(); it + 1 != objects.end(); ++it) duplicate += it->second + ".";
        duplicate += key;
      }
      objects.back().second = key;
    }
    return true;
  };
  const nlohmann::json ds = parse_json(text, source, callback);
  ZT_REQUIRE(duplicate.empty(),
             source + ": " + duplicate + " is given twice; DeepSpeed refuses duplicate keys: keep one of them");
  ZT_REQUIRE(ds.is_object(), source + " must hold a JSON object, got " + ds.dump());
  return ds;
}

// read_json_object, its errors usage errors.
nlohmann::json parse_json_object(std::string_view text, const std::string& source) {
  return as_usage_error([&] { return read_json_object(text, source); });
}

bool is_inline(const std::string& path_or_json) {
  const std::size_t first = path_or_json.find_first_not_of(" \t\r\n");
  return first != std::string::npos && path_or_json[first] == '{';
}

std::string source_of(const std::string& path_or_json) {
  return is_inline(path_or_json) ? "the deepspeed config in the arguments" : path_or_json;
}

// parse_deepspeed_config's reading, its errors still plain zt::Errors.
DeepSpeedConfig read_config(const nlohmann::json& ds, int world_size, const std::string& source) {
  ZT_REQUIRE(world_size >= 1, source + ": the world size must be >= 1, got " + std::to_string(world_size));
  ConfigBlock root(ds, "", source, BlockKind::kAsWritten);
  DeepSpeedConfig config;
  config.source = source;
  resolve_batch(root, world_size, config);
  config.gradient_clipping = root.get("gradient_clipping", 0.0);
  ZT_REQUIRE(config.gradient_clipping >= 0.0, root.where("gradient_clipping") + " must be >= 0");
  if (root.has("optimizer"))
    config.optimizer = read_optimizer(root.child("optimizer", BlockKind::kAsWritten), config.warnings);
  if (root.has("scheduler"))
    config.scheduler = read_scheduler(root.child("scheduler", BlockKind::kAsWritten), config.warnings);
  read_precision(root, config);
  read_zero(root, config.zero, config.warnings);
  config.steps_per_print = root.find<std::int64_t>("steps_per_print");
  config.wall_clock_breakdown = root.get("wall_clock_breakdown", false);
  config.zero.communication_data_type = read_communication_data_type(root);
  read_other_features(root, config, config.warnings);
  root.note_unread("is not a DeepSpeed setting: DeepSpeed ignores it, and so does zerotune", config.warnings);
  return config;
}

}  // namespace

DeepSpeedConfig parse_deepspeed_config(const nlohmann::json& ds, int world_size, const std::string& source) {
  return as_usage_error([&] { return read_config(ds, world_size, source); });
}

DeepSpeedConfig parse_deepspeed_without_flags(nlohmann::json ds, std::int64_t hidden_size, const std::string& source,
                                              EstimateFlags flags) {
  ZT_REQUIRE(ds.is_object(), source + " must hold a JSON object, got " + ds.dump());
  const auto set = [&](const char* key) {
    return ds.contains(key) && !ds[key].is_null() && !(ds[key].is_string() && ds[key] == "auto");
  };
  // HF fills an "auto" micro-batch from its flag; one the config leaves out, DeepSpeed derives.
  const bool rules_give_micro_batch = set("train_batch_size") && !ds.contains("train_micro_batch_size_per_gpu");
  if (rules_give_micro_batch) {
    if (!set("gradient_accumulation_steps")) ds.erase("gradient_accumulation_steps");  // "auto": counted as 1
  } else {
    for (const char* key : {"train_batch_size", "gradient_accumulation_steps"}) ds.erase(key);
    if (!ds.contains("train_micro_batch_size_per_gpu")) ds["train_micro_batch_size_per_gpu"] = "auto";
  }
  // A schedule long enough that no warmup written in the config outlasts it; the other flags'
  // values are the context's defaults, each of its flag's shape.
  constexpr std::int64_t kLongRun = 1'000'000'000;
  const AutoFillContext context{.per_device_train_batch_size = flags.micro_batch,
                                .fp16 = flags.fp16,
                                .bf16 = flags.bf16,
                                .hidden_size = hidden_size,
                                .total_steps = kLongRun,
                                .compare_with_flags = false};
  as_usage_error([&] { fill_hf_auto(ds, context, source); });
  return parse_deepspeed_config(ds, rules_give_micro_batch ? flags.world_size : 1, source);
}

DeepSpeedConfig parse_deepspeed_text(std::string_view json_text, const AutoFillContext& context,
                                     const std::string& source) {
  nlohmann::json ds = parse_json_object(json_text, source);
  as_usage_error([&] { fill_hf_auto(ds, context, source); });
  return parse_deepspeed_config(ds, context.world_size, source);
}

DeepSpeedInput read_deepspeed_input(const std::string& path_or_json) {
  const std::string source = source_of(path_or_json);
  if (is_inline(path_or_json)) return {parse_json_object(path_or_json, source), source};
  require_readable_file(path_or_json, "the DeepSpeed config (--deepspeed)");
  std::ifstream in(path_or_json);
  ZT_REQUIRE(in, "cannot read the DeepSpeed config " + path_or_json + " (--deepspeed): check the path");
  std::stringstream text;
  text << in.rdbuf();
  return {parse_json_object(text.str(), source), source};
}

DeepSpeedConfig load_deepspeed_config(const DeepSpeedInput& input, const AutoFillContext& context) {
  nlohmann::json ds = input.json;
  as_usage_error([&] { fill_hf_auto(ds, context, input.source); });
  return parse_deepspeed_config(ds, context.world_size, input.source);
}

}  // namespace zt::train
