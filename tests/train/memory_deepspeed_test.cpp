// `zerotune estimate --deepspeed`'s reading of a user's config: the ZeRO block through the
// trainer's parser with HF's "auto" sizes, the precision and micro-batch where the config sets
// them, the flags where it leaves them, and a flag that contradicts the config refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/error.h"
#include "runtime/usage_error.h"
#include "tests/common/process_test_util.h"
#include "train/memory_deepspeed.h"

namespace zt::train {
namespace {

constexpr std::int64_t kHidden = 896;

MemorySettings flags() {
  MemorySettings s;
  s.gpus_per_node = 4;
  s.micro_batch = 3;
  return s;
}

MemorySettings read(const std::string& json, const GivenFlags& given = {}) {
  return memory_settings_from_deepspeed(json, flags(), given, kHidden).settings;
}

TEST(MemoryDeepSpeed, ZeroBlockGoesThroughTheTrainersParserWithHfsAutoSizes) {
  const MemorySettings s = read(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
      "reduce_bucket_size": "auto", "stage3_param_persistence_threshold": "auto"}, "bf16": {"enabled": "auto"}})");
  EXPECT_EQ(s.stage, 3);
  EXPECT_TRUE(s.offload);
  EXPECT_EQ(s.reduce_bucket_size, kHidden * kHidden);
  EXPECT_EQ(s.persistence_threshold, 10 * kHidden);
  EXPECT_EQ(s.dtype, DType::kBF16) << "auto keeps the estimate's --dtype";
  EXPECT_EQ(s.micro_batch, 3) << "auto keeps the estimate's --micro_batch";
  EXPECT_EQ(s.gpus_per_node, 4);

  const MemorySettings plain = read("{}");
  EXPECT_EQ(plain.stage, 0);
  EXPECT_FALSE(plain.offload);
  EXPECT_EQ(plain.reduce_bucket_size, 500'000'000) << "DeepSpeed's default";

  // What the trainer would warn about, the estimate passes on.
  const DeepSpeedMemorySettings ignored = memory_settings_from_deepspeed(
      R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})", flags(), {}, kHidden);
  ASSERT_EQ(ignored.warnings.size(), 1u);
  EXPECT_NE(ignored.warnings[0].find("offloads parameters under ZeRO stage 3 only"), std::string::npos);
  EXPECT_FALSE(ignored.settings.offload_param);
  const MemorySettings offloaded = read(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"},
                                     "offload_optimizer": {"device": "cpu"}}})");
  EXPECT_TRUE(offloaded.offload_param);
  EXPECT_TRUE(offloaded.offload);
}

TEST(MemoryDeepSpeed, PrecisionAndMicroBatchComeFromTheConfigWhereItSetsThem) {
  EXPECT_EQ(read(R"({"fp16": {"enabled": true}})").dtype, DType::kF16);
  EXPECT_EQ(read(R"({"bfloat16": {"enabled": true}})").dtype, DType::kBF16);
  EXPECT_EQ(read(R"({"fp16": {"enabled": false}, "bf16": {"enabled": false}})").dtype, DType::kF32);
  EXPECT_EQ(read(R"({"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 4,
                     "optimizer": {"type": "AdamW", "params": {"lr": 3e-5}}})")
                .micro_batch,
            8)
      << "the rest of the config changes no memory and is not checked against flags the estimate lacks";
}

// data_types.grad_accum_dtype reaches the estimate: fp32 keeps the gradient partition of
// stages 1 and 2 at 4 bytes an element, unset it takes the working dtype.
TEST(MemoryDeepSpeed, GradAccumDtypeComesFromTheConfig) {
  const MemorySettings fp32 = read(R"({"bf16": {"enabled": true}, "zero_optimization": {"stage": 2},
                                      "data_types": {"grad_accum_dtype": "fp32"}})");
  EXPECT_EQ(fp32.grad_accum_dtype, DType::kF32);
  EXPECT_EQ(gradient_partition_dtype(fp32), DType::kF32);
  const MemorySettings unset = read(R"({"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})");
  EXPECT_FALSE(unset.grad_accum_dtype.has_value());
  EXPECT_EQ(gradient_partition_dtype(unset), DType::kBF16);
}

TEST(MemoryDeepSpeed, TheMicroBatchIsReadAsTheTrainerReadsIt) {
  EXPECT_EQ(read(R"({"train_micro_batch_size_per_gpu": "auto"})", {.micro_batch = true}).micro_batch, 3);
  EXPECT_EQ(read(R"({"train_micro_batch_size_per_gpu": 5})").micro_batch, 5);
  try {
    read(R"({"train_micro_batch_size_per_gpu": 0})");
    FAIL() << "a micro-batch of 0 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("train_micro_batch_size_per_gpu must be > 0"), std::string::npos) << e.what();
  }
}

// A config that sets train_batch_size and leaves the micro-batch out gets it from DeepSpeed's
// batch rules over the estimate's 4 GPUs, as `zerotune train` derives it; an "auto" one is the
// --micro_batch flag's, as HF fills it, and a batch the GPUs do not divide is the trainer's error.
TEST(MemoryDeepSpeed, TrainBatchSizeGivesTheMicroBatchByDeepSpeedsRules) {
  EXPECT_EQ(read(R"({"train_batch_size": 64, "zero_optimization": {"stage": 2}})").micro_batch, 16);
  EXPECT_EQ(read(R"({"train_batch_size": 64, "gradient_accumulation_steps": 2})").micro_batch, 8);
  EXPECT_EQ(read(R"({"train_batch_size": 64, "gradient_accumulation_steps": "auto"})").micro_batch, 16);
  EXPECT_EQ(read(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto"})").micro_batch, 3)
      << "HF fills an auto micro-batch from its flag";
  EXPECT_EQ(read(R"({"train_batch_size": null, "train_micro_batch_size_per_gpu": 4})").micro_batch, 4);
  EXPECT_EQ(
      read(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto"})", {.micro_batch = true}).micro_batch,
      3);
  EXPECT_EQ(read(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2})").micro_batch, 2);
  EXPECT_EQ(read(R"({"train_batch_size": "auto"})").micro_batch, 3);
  try {
    read(R"({"train_batch_size": 10})");
    FAIL() << "a train_batch_size that 4 GPUs do not divide was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("train_batch_size"), std::string::npos) << e.what();
  }
}

// HF fills an "auto" enabled from --fp16 and --bf16; the estimate fills it from --dtype.
TEST(MemoryDeepSpeed, AnAutoPrecisionIsTheEstimatesDtype) {
  const std::string both_auto = R"({"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}})";
  MemorySettings half = flags();
  half.dtype = DType::kF16;
  EXPECT_EQ(memory_settings_from_deepspeed(both_auto, half, {.dtype = true}, kHidden).settings.dtype, DType::kF16);
  EXPECT_EQ(read(both_auto, {.dtype = true}).dtype, DType::kBF16);
  EXPECT_EQ(read(R"({"fp16": {"enabled": false}, "bf16": {"enabled": "auto"}})", {.dtype = true}).dtype, DType::kBF16);
  EXPECT_EQ(read(R"({"fp16": {"loss_scale_window": 100}, "bf16": {"enabled": false}})").dtype, DType::kBF16)
      << "fp16 sets no enabled: the flags decide";
}

TEST(MemoryDeepSpeed, AFlagThatContradictsTheConfigIsRefused) {
  try {
    read(R"({"train_micro_batch_size_per_gpu": 8})", {.micro_batch = true});
    FAIL() << "a contradiction was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sets train_micro_batch_size_per_gpu 8 but --micro_batch is 3"),
              std::string::npos)
        << e.what();
  }
  try {
    read(R"({"fp16": {"enabled": true}})", {.dtype = true});
    FAIL() << "a contradiction was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trains in float16 but --dtype is bfloat16"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(R"({"fp16": {"enabled": false}})", {.dtype = true}).dtype, DType::kBF16);
}

TEST(MemoryDeepSpeed, AFileIsNamedInItsErrors) {
  const std::filesystem::path path = zt::testing::test_folder("memory_deepspeed_test", true) / "ds_config.json";
  std::ofstream(path) << R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})";
  try {
    memory_settings_from_deepspeed(path.string(), flags(), {}, kHidden);
    FAIL() << "parameter offload to NVMe was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(memory_settings_from_deepspeed((path.parent_path() / "absent.json").string(), flags(), {}, kHidden),
               Error);
}

}  // namespace
}  // namespace zt::train
