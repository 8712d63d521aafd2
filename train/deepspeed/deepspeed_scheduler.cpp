// The scheduler block as DeepSpeed builds its scheduler from it: lr_schedules.py's class named
// by `type`, given `params` as keyword arguments, so each type takes its own parameters with
// its constructor's defaults and refuses any other. The rates themselves are
// train/optim/lr_scheduler.h's.
#include <algorithm>

#include "runtime/terminal/text_list.h"
#include "train/deepspeed/deepspeed_blocks.h"

namespace zt::train {
namespace {

// The parameters each type's constructor takes.
std::vector<std::string> parameters_of(ScheduleKind kind) {
  const std::vector<std::string> warmup = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type"};
  std::vector<std::string> names;
  switch (kind) {
    case ScheduleKind::kWarmupLR:
      names = warmup;
      break;
    case ScheduleKind::kWarmupDecayLR:
      names = warmup, names.push_back("total_num_steps");
      break;
    case ScheduleKind::kWarmupCosineLR:
      names = {"total_num_steps", "warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type"};
      break;
    case ScheduleKind::kOneCycle:
      names = {"cycle_min_lr",
               "cycle_max_lr",
               "decay_lr_rate",
               "cycle_first_step_size",
               "cycle_second_step_size",
               "cycle_first_stair_count",
               "cycle_second_stair_count",
               "decay_step_size",
               "cycle_momentum",
               "cycle_min_mom",
               "cycle_max_mom",
               "decay_mom_rate"};
      break;
    default:
      names = {"lr_range_test_min_lr", "lr_range_test_step_size", "lr_range_test_step_rate", "lr_range_test_staircase"};
  }
  names.push_back("last_batch_iteration");
  return names;
}

// warmup_num_steps and warmup_type, shared by the three warmup schedules. DeepSpeed warms up
// over max(2, warmup_num_steps) steps (its newest release refuses 0 outright; earlier ones,
// and zerotune, take 0 as that minimum of 2).
void read_warmup(ConfigBlock& params, LrScheduleConfig& schedule, std::vector<std::string>& warnings) {
  schedule.warmup_steps = params.get_at_least<std::int64_t>("warmup_num_steps", 1000, 0);
  const std::string type = params.get<std::string>("warmup_type", "log");
  if (type != "log" && type != "linear")
    warnings.push_back(params.where("warmup_type") + " '" + type +
                       "' is not one DeepSpeed knows (log, linear): DeepSpeed warns and warms up logarithmically, "
                       "and so does zerotune");
  schedule.warmup_log = type != "linear";
}

void read_total(ConfigBlock& params, LrScheduleConfig& schedule, const std::string& type,
                std::vector<std::string>& warnings) {
  std::optional<std::int64_t> total = params.find<std::int64_t>("total_num_steps");
  ZT_REQUIRE(total, params.where("total_num_steps") + " is required by " + type);
  ZT_REQUIRE(*total >= 0, params.where("total_num_steps") + " must be >= 0, got " + std::to_string(*total));
  schedule.total_steps = *total;
  // DeepSpeed's warning prints warmup_num_steps as written; a value below 2 needs the 2 it
  // compares with beside it, or "1 is less than 0" reads as nonsense.
  const std::int64_t warmup_read = std::max<std::int64_t>(2, schedule.warmup_steps);
  if (schedule.total_steps < warmup_read)
    warnings.push_back(params.where("total_num_steps") + " " + std::to_string(*total) +
                       " is less than warmup_num_steps " + std::to_string(schedule.warmup_steps) +
                       (warmup_read != schedule.warmup_steps ? " (read as 2, DeepSpeed's shortest warmup)" : "") +
                       ": the run ends during the warmup (DeepSpeed warns too)");
}

void read_one_cycle(ConfigBlock& params, OneCycleConfig& cycle) {
  for (const char* key : {"cycle_min_lr", "cycle_max_lr"})
    ZT_REQUIRE(params.has(key), params.where(key) + " is required by OneCycle");
  cycle.min_lr = params.get("cycle_min_lr", 0.0);
  cycle.max_lr = params.get("cycle_max_lr", 0.0);
  cycle.decay_lr_rate = params.get("decay_lr_rate", 0.0);
  cycle.first_step_size = params.get("cycle_first_step_size", 2000.0);
  ZT_REQUIRE(cycle.first_step_size > 0.0, params.where("cycle_first_step_size") + " must be > 0 (DeepSpeed's range)");
  cycle.second_step_size = params.get("cycle_second_step_size", cycle.first_step_size);
  ZT_REQUIRE(cycle.second_step_size >= 0.0,
             params.where("cycle_second_step_size") + " must be >= 0 (DeepSpeed's range)");
  cycle.first_stair_count = params.get<std::int64_t>("cycle_first_stair_count", 0);
  cycle.second_stair_count = params.get<std::int64_t>("cycle_second_stair_count", cycle.first_stair_count);
  cycle.decay_step_size = params.get("decay_step_size", 0.0);
  // DeepSpeed's OneCycle also cycles Adam's beta1 (and sets beta2 to 0.99) unless told not to.
  ZT_REQUIRE(!params.get("cycle_momentum", true),
             params.where("cycle_momentum") +
                 " is true (OneCycle's default): DeepSpeed would cycle Adam's beta1 between cycle_max_mom and "
                 "cycle_min_mom and set beta2 to 0.99, which zerotune does not do; set \"cycle_momentum\": false to "
                 "train on the learning-rate cycle with the optimizer's own betas");
  for (const char* key : {"cycle_min_mom", "cycle_max_mom", "decay_mom_rate"}) params.accept<double>(key);
}

void read_range_test(ConfigBlock& params, RangeTestConfig& test) {
  test.min_lr = params.get("lr_range_test_min_lr", test.min_lr);
  test.step_size = params.get("lr_range_test_step_size", test.step_size);
  ZT_REQUIRE(test.step_size > 0, params.where("lr_range_test_step_size") + " must be > 0 (DeepSpeed's range)");
  test.step_rate = params.get("lr_range_test_step_rate", test.step_rate);
  test.staircase = params.get("lr_range_test_staircase", test.staircase);
}

}  // namespace

LrScheduleConfig read_scheduler(ConfigBlock block, std::vector<std::string>& warnings) {
  const std::string type = block.get<std::string>("type", "");
  const std::vector<std::string>& types = deepspeed_schedule_names();
  ZT_REQUIRE(std::find(types.begin(), types.end(), type) != types.end(),
             block.where("type") + " '" + type + "' is not supported; accepted: " + join_list(types));
  LrScheduleConfig schedule;
  schedule.kind = deepspeed_schedule_kind(type);
  ConfigBlock params = block.child("params", BlockKind::kAsWritten);
  switch (schedule.kind) {
    case ScheduleKind::kOneCycle:
      read_one_cycle(params, schedule.one_cycle);
      break;
    case ScheduleKind::kLRRangeTest:
      read_range_test(params, schedule.range_test);
      break;
    case ScheduleKind::kWarmupCosineLR:
      read_warmup(params, schedule, warnings);
      schedule.warmup_min_ratio = params.get("warmup_min_ratio", 0.0);
      schedule.cos_min_ratio = params.get("cos_min_ratio", 1e-4);
      schedule.peak_lr_from_optimizer = true;
      read_total(params, schedule, type, warnings);
      break;
    default:
      read_warmup(params, schedule, warnings);
      schedule.warmup_min_lr = params.get("warmup_min_lr", 0.0);
      // WarmupLR without warmup_max_lr peaks at the optimizer's lr; WarmupDecayLR at 0.001.
      schedule.peak_lr_from_optimizer = schedule.kind == ScheduleKind::kWarmupLR && !params.has("warmup_max_lr");
      schedule.peak_lr = params.get("warmup_max_lr", 1e-3);
      if (schedule.kind == ScheduleKind::kWarmupDecayLR) read_total(params, schedule, type, warnings);
  }
  params.ignore_unless<std::int64_t>("last_batch_iteration", -1,
                                     "starts the schedule part-way, as a resumed run would; zerotune starts it at "
                                     "the first step (a resumed run continues where its checkpoint stopped)",
                                     warnings);
  params.refuse_unknown(type + " (its parameters: " + join_list(parameters_of(schedule.kind)) + ")");
  block.note_unread("is not read by DeepSpeed's scheduler block", warnings);
  return schedule;
}

}  // namespace zt::train
