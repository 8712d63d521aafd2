// ds_config.json as DeepSpeed and HF Trainer read it: "auto" filling, mismatches reported
// together, the batch triple's inference rules and error, typed blocks, and warnings for
// keys that are not used.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

using nlohmann::json;

TrainingArguments flags() {
  return parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t",
                                   "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
                                   "--learning_rate", "2e-5", "--bf16"});
}

DeepSpeedConfig filled(json ds, int world_size = 2) {
  TrainingArguments args = flags();
  fill_hf_auto(ds, AutoFillContext{args, world_size, 64, 100, 10}, "ds.json");
  return parse_deepspeed_config(ds, world_size, "ds.json");
}

bool has_warning(const DeepSpeedConfig& config, const std::string& part) {
  for (const std::string& w : config.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

TEST(DeepSpeedConfig, AutoTakesTheFlags) {
  DeepSpeedConfig config = filled(json::parse(R"({
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto", "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"},
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                  "warmup_num_steps": "auto", "total_num_steps": "auto"}},
    "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                          "stage3_param_persistence_threshold": "auto"}})"));
  EXPECT_EQ(config.micro_batch_per_gpu, 4);
  EXPECT_EQ(config.gradient_accumulation_steps, 2);
  EXPECT_EQ(config.train_batch_size, 16);
  EXPECT_EQ(config.gradient_clipping, 1.0);
  EXPECT_TRUE(config.bf16);
  EXPECT_FALSE(config.fp16);
  ASSERT_TRUE(config.optimizer);
  EXPECT_EQ(config.optimizer->lr, 2e-5);
  EXPECT_EQ(config.optimizer->beta2, 0.999);
  ASSERT_TRUE(config.scheduler);
  EXPECT_EQ(config.scheduler->peak_lr, 2e-5);
  EXPECT_EQ(config.scheduler->warmup_steps, 10);
  EXPECT_EQ(config.scheduler->total_steps, 100);
  EXPECT_EQ(config.zero.stage, 3);
  EXPECT_EQ(config.zero.reduce_bucket_size, 64 * 64);
  EXPECT_EQ(config.zero.stage3_prefetch_bucket_size, 3686);  // floor(0.9 * 4096)
  EXPECT_EQ(config.zero.stage3_param_persistence_threshold, 640);
  EXPECT_TRUE(config.zero.overlap_comm);  // DeepSpeed's default under stage 3
}

TEST(DeepSpeedConfig, EveryMismatchIsListedTogetherSuggestingAuto) {
  json ds = json::parse(R"({"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 0.5,
                            "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "bf16": {"enabled": false}})");
  TrainingArguments args = flags();
  std::string msg = testing::error_of([&] { fill_hf_auto(ds, AutoFillContext{args, 1, 0, 10, 0}, "ds.json"); });
  for (const char* part : {"ds train_micro_batch_size_per_gpu=8 vs hf per_device_train_batch_size=4",
                           "ds gradient_clipping=0.5 vs hf max_grad_norm=1.0", "ds optimizer.params.lr=0.0001",
                           "ds bf16.enabled=false vs hf bf16=true", "\"auto\""})
    EXPECT_NE(msg.find(part), std::string::npos) << part << "\n" << msg;
}

TEST(DeepSpeedConfig, BatchTripleInferenceFollowsDeepSpeed) {
  DeepSpeedConfig config =
      parse_deepspeed_config(json{{"train_batch_size", 32}, {"train_micro_batch_size_per_gpu", 4}}, 2, "d");
  EXPECT_EQ(config.gradient_accumulation_steps, 4);
  config = parse_deepspeed_config(json{{"train_batch_size", 32}, {"gradient_accumulation_steps", 4}}, 2, "d");
  EXPECT_EQ(config.micro_batch_per_gpu, 4);
  config = parse_deepspeed_config(json{{"train_batch_size", 32}}, 4, "d");
  EXPECT_EQ(config.micro_batch_per_gpu, 8);
  EXPECT_EQ(config.gradient_accumulation_steps, 1);
  config = parse_deepspeed_config(json{{"train_micro_batch_size_per_gpu", 3}}, 4, "d");
  EXPECT_EQ(config.train_batch_size, 12);
  EXPECT_EQ(config.inferred.size(), 2u);
}

TEST(DeepSpeedConfig, BatchTripleMismatchShowsTheNumbersAndTheFormula) {
  std::string msg = testing::error_of([] {
    parse_deepspeed_config(
        json{{"train_batch_size", 30}, {"train_micro_batch_size_per_gpu", 4}, {"gradient_accumulation_steps", 2}}, 2,
        "ds.json");
  });
  EXPECT_NE(msg.find("micro_batch_per_gpu * gradient_acc_step * world_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 * 2 * 2 = 16"), std::string::npos) << msg;
  msg = testing::error_of([] {
    parse_deepspeed_config(json{{"train_batch_size", 3}, {"train_micro_batch_size_per_gpu", 4}}, 1, "ds.json");
  });
  EXPECT_NE(msg.find("gradient_accumulation_steps 0 (inferred)"), std::string::npos) << msg;
  msg = testing::error_of([] { parse_deepspeed_config(json::object(), 1, "ds.json"); });
  EXPECT_NE(msg.find("train_micro_batch_size_per_gpu must be set"), std::string::npos) << msg;
}

TEST(DeepSpeedConfig, Fp16BlockWithDeepSpeedDefaults) {
  DeepSpeedConfig config = parse_deepspeed_config(
      json::parse(R"({"train_batch_size": 8, "fp16": {"enabled": true, "loss_scale_window": 500, "hysteresis": 1}})"),
      1, "d");
  EXPECT_TRUE(config.fp16);
  EXPECT_EQ(config.loss_scaler.loss_scale_window, 500);
  EXPECT_EQ(config.loss_scaler.hysteresis, 1);
  EXPECT_EQ(config.loss_scaler.initial_scale_power, 16);
  config = parse_deepspeed_config(json::parse(R"({"train_batch_size": 8, "fp16": {"enabled": true}})"), 1, "d");
  EXPECT_TRUE(has_warning(config, "documented defaults"));
  std::string msg = testing::error_of([] {
    parse_deepspeed_config(
        json::parse(R"({"train_batch_size": 8, "fp16": {"enabled": true}, "bf16": {"enabled": true}})"), 1, "d");
  });
  EXPECT_NE(msg.find("both enabled"), std::string::npos) << msg;
}

TEST(DeepSpeedConfig, OptimizerAndSchedulerBlocks) {
  DeepSpeedConfig config = parse_deepspeed_config(json::parse(R"({"train_batch_size": 8,
      "optimizer": {"type": "Adam", "params": {"lr": 3e-4, "betas": [0.8, 0.95], "adam_w_mode": false}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 50, "warmup_type": "linear"}}})"),
                                                  1, "d");
  EXPECT_FALSE(config.optimizer->decoupled_weight_decay);
  EXPECT_EQ(config.optimizer->beta1, 0.8);
  EXPECT_EQ(config.scheduler->kind, ScheduleKind::kWarmupLR);
  EXPECT_FALSE(config.scheduler->warmup_log);
  EXPECT_EQ(config.scheduler->peak_lr, 1e-3);  // WarmupLR's own default warmup_max_lr
  std::string msg = testing::error_of([] {
    parse_deepspeed_config(json::parse(R"({"train_batch_size": 8, "optimizer": {"type": "Lamb"}})"), 1, "ds.json");
  });
  EXPECT_NE(msg.find("ds.json: optimizer.type 'Lamb'"), std::string::npos) << msg;
  msg = testing::error_of([] {
    parse_deepspeed_config(json::parse(R"({"train_batch_size": 8, "scheduler": {"type": "WarmupDecayLR"}})"), 1, "d");
  });
  EXPECT_NE(msg.find("total_num_steps"), std::string::npos) << msg;
}

TEST(DeepSpeedConfig, ZeroBlockValidatesAndWarnsOnIgnoredKeys) {
  DeepSpeedConfig config = parse_deepspeed_config(json::parse(R"({"train_batch_size": 8,
      "wall_clock_breakdown": false, "flops_profiler": {},
      "zero_optimization": {"stage": 2, "allgather_partitions": true, "allgather_bucket_size": 5e8,
                            "reduce_bucket_size": 5e8, "offload_optimizer": {"device": "cpu", "pin_memory": true},
                            "mystery_knob": 1}})"),
                                                  1, "ds.json");
  EXPECT_EQ(config.zero.stage, 2);
  EXPECT_FALSE(config.zero.overlap_comm);
  EXPECT_TRUE(config.zero.offload_optimizer);
  EXPECT_TRUE(config.zero.offload_pin_memory);
  EXPECT_EQ(config.zero.reduce_bucket_size, 500000000);
  EXPECT_TRUE(has_warning(config, "ds.json: zero_optimization.allgather_partitions is never read"));
  EXPECT_TRUE(has_warning(config, "zero_optimization.allgather_bucket_size"));
  EXPECT_TRUE(has_warning(config, "zero_optimization.mystery_knob is not used"));
  EXPECT_TRUE(has_warning(config, "ds.json: wall_clock_breakdown"));
  EXPECT_TRUE(has_warning(config, "ds.json: flops_profiler is not used"));
  for (const char* bad :
       {R"({"train_batch_size": 8, "zero_optimization": {"stage": 4}})",
        R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}})",
        R"({"train_batch_size": 8, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})",
        R"({"train_batch_size": 8, "zero_optimization": {"stage": "two"}})"}) {
    std::string msg = testing::error_of([&] { parse_deepspeed_config(json::parse(bad), 1, "ds.json"); });
    EXPECT_NE(msg.find("ds.json: zero_optimization."), std::string::npos) << bad << "\n" << msg;
  }
}

TEST(DeepSpeedConfig, UnfilledAutoIsAnError) {
  json ds = json::parse(R"({"train_batch_size": 16, "zero_optimization": {"reduce_bucket_size": "auto"}})");
  TrainingArguments args = flags();
  std::string msg = testing::error_of([&] { fill_hf_auto(ds, AutoFillContext{args, 2, 0, 10, 0}, "ds.json"); });
  EXPECT_NE(msg.find("zero_optimization.reduce_bucket_size"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt::train

namespace zt::train {
namespace {

TEST(DeepSpeedConfig, CommunicationDataTypeIsReadAndGradientsStayFp32) {
  EXPECT_FALSE(has_warning(filled(json::parse(R"({"train_batch_size": "auto", "communication_data_type": "fp32"})")),
                           "communication_data_type"));
  EXPECT_FALSE(has_warning(filled(json::parse(R"({"train_batch_size": "auto", "communication_data_type": "fp32"})")),
                           "not used"));
  EXPECT_TRUE(has_warning(filled(json::parse(R"({"train_batch_size": "auto", "communication_data_type": "bf16"})")),
                          "reduces gradients in fp32"));
  testing::expect_mentions(testing::error_of([] {
                             filled(json::parse(R"({"train_batch_size": "auto", "communication_data_type": "int8"})"));
                           }),
                           {"communication_data_type", "int8", "fp32, fp16, bf16"});
}

}  // namespace
}  // namespace zt::train
