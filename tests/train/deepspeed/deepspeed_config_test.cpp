// ds_config.json as DeepSpeed and HF Trainer read it: "auto" filling and where "auto" is left
// to DeepSpeed, mismatches reported together, the batch triple's rules, the precision and
// optimizer blocks, and the config given as text. Which keys warn: deepspeed_keys_test.cpp.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "tests/train/deepspeed/deepspeed_test_arguments.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

using nlohmann::json;

TrainingArguments flags(std::vector<std::string> extra = {"--bf16"}) { return deepspeed_test_arguments(extra); }

DeepSpeedConfig filled(json ds, int world_size = 2, std::vector<std::string> extra = {"--bf16"}) {
  TrainingArguments args = flags(extra);
  fill_hf_auto(ds, deepspeed_auto_context(args, world_size, 64, 100, 10), "ds.json");
  return parse_deepspeed_config(ds, world_size, "ds.json");
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
  EXPECT_EQ(config.zero.stage3_prefetch_bucket_size, 3686);  // int(0.9 * 64 * 64)
  EXPECT_EQ(config.zero.stage3_param_persistence_threshold, 640);
  EXPECT_TRUE(config.zero.overlap_comm);  // DeepSpeed's default under stage 3
  EXPECT_TRUE(config.warnings.empty()) << all_warnings(config);
}

// HF fills the two stage-3 sizes under ZeRO-3 only; elsewhere their "auto" reaches DeepSpeed,
// whose config model drops it for its default, as it does for every key HF does not fill.
TEST(DeepSpeedConfig, AutoThatHfDoesNotFillIsDeepSpeedsDefault) {
  DeepSpeedConfig config = filled(json::parse(R"({"train_batch_size": "auto",
      "fp16": {"enabled": "auto", "initial_scale_power": "auto", "hysteresis": "auto"},
      "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
          "stage3_param_persistence_threshold": "auto", "sub_group_size": "auto", "stage3_max_live_parameters": "auto",
          "stage3_max_reuse_distance": "auto", "overlap_comm": "auto", "offload_optimizer": {"device": "auto"},
          "offload_param": {"device": "auto"}}})"),
                                  2, {"--fp16"});
  EXPECT_TRUE(config.fp16);
  EXPECT_EQ(config.loss_scaler.initial_scale_power, 16);
  EXPECT_EQ(config.loss_scaler.hysteresis, 2);
  EXPECT_EQ(config.zero.reduce_bucket_size, 64 * 64);
  EXPECT_EQ(config.zero.stage3_prefetch_bucket_size, 50'000'000);
  EXPECT_EQ(config.zero.stage3_param_persistence_threshold, 100'000);
  EXPECT_EQ(config.zero.sub_group_size, 1'000'000'000);
  EXPECT_EQ(config.zero.stage3_max_live_parameters, 1'000'000'000);
  EXPECT_EQ(config.zero.stage3_max_reuse_distance, 1'000'000'000);
  EXPECT_FALSE(config.zero.overlap_comm);
  EXPECT_FALSE(config.zero.offload_optimizer);
}

// Outside DeepSpeed's config models a value is used as written, so an "auto" nothing filled
// is an error that says what the key takes.
TEST(DeepSpeedConfig, UnfilledAutoSaysWhatTheKeyTakes) {
  testing::expect_mentions(testing::error_of([] {
                             filled(json::parse(R"({"train_batch_size": "auto", "optimizer": {"type": "AdamW",
                                 "params": {"amsgrad": "auto"}}})"));
                           }),
                           {"ds.json: optimizer.params.amsgrad is \"auto\"", "set true or false there"});
  const std::string msg =
      testing::error_of([] { filled(json::parse(R"({"train_batch_size": "auto", "steps_per_print": "auto"})")); });
  testing::expect_mentions(msg, {"steps_per_print", "set a whole number there"});
  EXPECT_EQ(msg.find("set a number"), std::string::npos) << msg;
  // The hidden size the three bucket sizes follow must be known, as HF insists.
  json ds = json::parse(R"({"train_batch_size": 16, "zero_optimization": {"reduce_bucket_size": "auto"}})");
  TrainingArguments args = flags();
  testing::expect_mentions(
      testing::error_of([&] { fill_hf_auto(ds, deepspeed_auto_context(args, 2, 0, 10, 0), "ds.json"); }),
      {"zero_optimization.reduce_bucket_size", "hidden_size"});
}

TEST(DeepSpeedConfig, EveryMismatchIsListedTogetherSuggestingAuto) {
  json ds = json::parse(R"({"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 0.5,
                            "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "bf16": {"enabled": false}})");
  TrainingArguments args = flags();
  std::string msg = testing::error_of([&] { fill_hf_auto(ds, deepspeed_auto_context(args, 1, 0, 10, 0), "ds.json"); });
  for (const char* part : {"ds train_micro_batch_size_per_gpu=8 vs hf per_device_train_batch_size=4",
                           "ds gradient_clipping=0.5 vs hf max_grad_norm=1.0", "ds optimizer.params.lr=0.0001",
                           "ds bf16.enabled=false vs hf bf16=true", "\"auto\""})
    EXPECT_NE(msg.find(part), std::string::npos) << part << "\n" << msg;
}

// HF compares with Python's ==: 1 == 1.0 == true, and a null value is not compared.
TEST(DeepSpeedConfig, MismatchesCompareAsPythonDoes) {
  json ds = json::parse(R"({"train_micro_batch_size_per_gpu": 4.0, "gradient_accumulation_steps": 2,
                            "gradient_clipping": 1, "bf16": {"enabled": 1}, "optimizer": {"type": "AdamW",
                            "params": {"lr": null}}})");
  TrainingArguments args = flags();
  EXPECT_EQ(testing::error_of([&] { fill_hf_auto(ds, deepspeed_auto_context(args, 1, 0, 10, 0), "ds.json"); }),
            "no error");
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
  config = parse_deepspeed_config(json::parse(R"({"train_batch_size": 3.2e1})"), 1, "d");  // a whole number
  EXPECT_EQ(config.train_batch_size, 32);
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
  EXPECT_NE(msg.find(R"(add "train_micro_batch_size_per_gpu": "auto" to take --per_device_train_batch_size)"),
            std::string::npos)
      << msg;
  msg = testing::error_of([] { parse_deepspeed_config(json{{"train_micro_batch_size_per_gpu", 0}}, 1, "ds.json"); });
  EXPECT_NE(msg.find("ds.json: train_micro_batch_size_per_gpu must be > 0, got 0"), std::string::npos) << msg;
  msg = testing::error_of([] {
    parse_deepspeed_config(json::parse(R"({"train_micro_batch_size_per_gpu": 4e18, "gradient_accumulation_steps": 4,
                                           "train_batch_size": 16})"),
                           1, "ds.json");
  });
  EXPECT_NE(msg.find("more than 2^63"), std::string::npos) << msg;
}

TEST(DeepSpeedConfig, Fp16BlockWithDeepSpeedDefaultsAndRanges) {
  DeepSpeedConfig config = parsed_deepspeed(
      R"({"train_batch_size": 8, "fp16": {"enabled": true, "loss_scale_window": 500, "hysteresis": 1}})");
  EXPECT_TRUE(config.fp16);
  EXPECT_EQ(config.loss_scaler.loss_scale_window, 500);
  EXPECT_EQ(config.loss_scaler.hysteresis, 1);
  EXPECT_EQ(config.loss_scaler.initial_scale_power, 16);
  config = parsed_deepspeed(R"({"train_batch_size": 8, "fp16": {"enabled": true}})");
  EXPECT_TRUE(has_warning(config, "documented defaults"));
  // A config model converts as pydantic does: "true" is true, "1000" is 1000.
  config = parsed_deepspeed(R"({"train_batch_size": 8, "fp16": {"enabled": "true", "loss_scale_window": "1000",
                      "min_loss_scale": 2.0, "auto_cast": false, "fp16_master_weights_and_grads": false}})");
  EXPECT_TRUE(config.fp16);
  EXPECT_EQ(config.loss_scaler.loss_scale_window, 1000);
  EXPECT_EQ(config.loss_scaler.min_loss_scale, 2.0);
  EXPECT_TRUE(config.warnings.empty()) << all_warnings(config);
  for (const char* bad : {R"({"train_batch_size": 8, "fp16": {"enabled": true, "loss_scale": -1}})",
                          R"({"train_batch_size": 8, "fp16": {"enabled": true, "loss_scale_window": 0}})",
                          R"({"train_batch_size": 8, "fp16": {"enabled": true, "min_loss_scale": true}})",
                          R"({"train_batch_size": 8, "fp16": {"enabled": true, "hysteresis": 1.5}})",
                          R"({"train_batch_size": 8, "fp16": {"enabled": true, "loss_scale_windw": 100}})"})
    EXPECT_NE(testing::error_of([&] { parsed_deepspeed(bad); }).find("ds.json: fp16."), std::string::npos) << bad;
  testing::expect_mentions(
      testing::error_of(
          [] { parsed_deepspeed(R"({"train_batch_size": 8, "fp16": {"enabled": true}, "bf16": {"enabled": true}})"); }),
      {"both enabled"});
  EXPECT_TRUE(has_warning(parsed_deepspeed(R"({"train_batch_size": 8, "fp16": {"enabled": true, "auto_cast": true}})"),
                          "fp16.auto_cast"));
}

// "bfloat16" is bf16's older name: DeepSpeed reads it when there is no "bf16".
TEST(DeepSpeedConfig, Bf16UnderEitherName) {
  EXPECT_TRUE(parsed_deepspeed(R"({"train_batch_size": 8, "bfloat16": {"enabled": true}})").bf16);
  EXPECT_TRUE(
      parsed_deepspeed(R"({"train_batch_size": 8, "bf16": {"enabled": true}, "bfloat16": {"enabled": true}})").bf16);
  testing::expect_mentions(testing::error_of([] {
                             parsed_deepspeed(R"({"train_batch_size": 8, "bf16": {"enabled": true},
                                        "bfloat16": {"enabled": false}})");
                           }),
                           {"bf16", "bfloat16", "differ"});
  DeepSpeedConfig config =
      parsed_deepspeed(R"({"train_batch_size": 8, "bf16": {"enabled": true, "immediate_grad_update": false,
                                      "check_grad_overflow": true, "bf16_master_weights_and_grads": true}})");
  EXPECT_TRUE(has_warning(config, "bf16.bf16_master_weights_and_grads = true"));
  EXPECT_EQ(config.warnings.size(), 1u) << all_warnings(config);
}

TEST(DeepSpeedConfig, OptimizerBlock) {
  DeepSpeedConfig config = parsed_deepspeed(R"({"train_batch_size": 8,
      "optimizer": {"type": "Adam", "params": {"lr": 3e-4, "betas": [0.8, 0.95], "adam_w_mode": false,
                    "torch_adam": true}}})");
  EXPECT_FALSE(config.optimizer->decoupled_weight_decay);
  EXPECT_EQ(config.optimizer->beta1, 0.8);
  EXPECT_EQ(config.optimizer->lr, 3e-4);
  EXPECT_TRUE(config.warnings.empty()) << all_warnings(config);
  EXPECT_TRUE(
      parsed_deepspeed(R"({"train_batch_size": 8, "optimizer": {"type": "adamw", "params": {"adam_w_mode": false}}})")
          .optimizer->decoupled_weight_decay);  // AdamW is decoupled whatever adam_w_mode says
  testing::expect_mentions(
      testing::error_of([] { parsed_deepspeed(R"({"train_batch_size": 8, "optimizer": {"type": "Lamb"}})"); }),
      {"ds.json: optimizer.type 'Lamb'"});
  testing::expect_mentions(testing::error_of([] {
                             parsed_deepspeed(R"({"train_batch_size": 8, "optimizer": {"type": "AdamW",
                                        "params": {"max_grad_norm": 1.0}}})");
                           }),
                           {"optimizer.params.max_grad_norm", "gradient_clipping"});
}

TEST(DeepSpeedConfig, WallClockBreakdownIsHonouredWithoutAWarning) {
  EXPECT_FALSE(parsed_deepspeed(R"({"train_batch_size": 8})").wall_clock_breakdown);
  const DeepSpeedConfig config = parsed_deepspeed(R"({"train_batch_size": 8, "wall_clock_breakdown": true})");
  EXPECT_TRUE(config.wall_clock_breakdown);
  EXPECT_TRUE(config.warnings.empty()) << all_warnings(config);
  EXPECT_THROW(parsed_deepspeed(R"({"train_batch_size": 8, "wall_clock_breakdown": "yes"})"), Error);
}

// ZeRO reduces gradients in the dtype asked for, without a warning; unset, in the working
// dtype (DeepSpeed's default).
TEST(DeepSpeedConfig, CommunicationDataTypeIsHonoured) {
  EXPECT_FALSE(filled(json::parse(R"({"train_batch_size": "auto"})")).zero.communication_data_type.has_value());
  for (const auto& [text, dtype] :
       {std::pair{"fp32", DType::kF32}, std::pair{"BF16", DType::kBF16}, std::pair{"fp16", DType::kF16}}) {
    const DeepSpeedConfig config = filled(json::parse(std::string(R"({"train_batch_size": "auto", )") +
                                                      R"("communication_data_type": ")" + text + R"("})"));
    EXPECT_EQ(config.zero.communication_data_type, dtype) << text;
    EXPECT_TRUE(config.warnings.empty()) << all_warnings(config);
  }
  testing::expect_mentions(testing::error_of([] {
                             filled(json::parse(R"({"train_batch_size": "auto", "communication_data_type": "int8"})"));
                           }),
                           {"communication_data_type", "int8", "fp32, fp16, bf16"});
}

TEST(DeepSpeedConfig, TextAndArgumentsGiveTheConfigItself) {
  TrainingArguments args = flags();
  const AutoFillContext context = deepspeed_auto_context(args, 1, 64, 10, 0);
  DeepSpeedConfig config = load_deepspeed_config(
      read_deepspeed_input("  \n{\"train_micro_batch_size_per_gpu\": \"auto\", \"zero_optimization\": {\"stage\": 1}}"),
      context);
  EXPECT_EQ(config.micro_batch_per_gpu, 4);
  EXPECT_EQ(config.zero.stage, 1);
  EXPECT_EQ(config.source, "the deepspeed config in the arguments");
  const std::string msg = testing::error_of([&] {
    load_deepspeed_config(read_deepspeed_input(R"({"train_batch_size": 8, "zero_optimization": {"stage": 7}})"),
                          context);
  });
  testing::expect_mentions(msg,
                           {"the deepspeed config in the arguments: zero_optimization.stage must be 0, 1, 2 or 3"});
  EXPECT_EQ(msg.find("train_batch_size"), std::string::npos) << msg;  // the object is not echoed
  testing::expect_mentions(
      testing::error_of([&] { load_deepspeed_config(read_deepspeed_input("/no/such/ds.json"), context); }),
      {"the DeepSpeed config (--deepspeed) /no/such/ds.json does not exist"});
}

TEST(DeepSpeedConfig, TextThatIsNotAConfigIsAClearError) {
  TrainingArguments args = flags();
  const AutoFillContext context = deepspeed_auto_context(args, 1, 64, 10, 0);
  auto error = [&](const std::string& text) {
    return testing::error_of([&] { parse_deepspeed_text(text, context, "ds.json"); });
  };
  testing::expect_mentions(error("{\"train_batch_size\": 8,\n  \"zero_optimization\": {\"stage\": 2,}}"),
                           {"ds.json:2:36: not valid JSON: syntax error while parsing object key"});
  testing::expect_mentions(error("[1, 2]"), {"ds.json must hold a JSON object"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "zero_optimization": {"stage": 1, "stage": 2}})"),
                           {"ds.json: zero_optimization.stage is given twice"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "fp16": true})"), {"ds.json: fp16 must be a JSON object"});
  testing::expect_mentions(error(std::string(100, '[') + std::string(100, ']')), {"nests deeper than"});
  testing::expect_mentions(error(R"({"train_batch_size": 1e999})"),
                           {"ds.json: not valid JSON: number overflow parsing '1e999'"});
}

}  // namespace
}  // namespace zt::train
