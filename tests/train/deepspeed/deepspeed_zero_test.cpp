// The zero_optimization block as DeepSpeed's DeepSpeedZeroConfig model reads it: its ranges
// (pydantic's ge), its fields under two names, its deprecated names, the numbers it converts,
// its offload blocks, and its refusal of unknown keys.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "tests/train/deepspeed/deepspeed_test_arguments.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

DeepSpeedConfig zero(const std::string& block) { return with_block("zero_optimization", block); }

std::string zero_error(const std::string& block) { return block_error("zero_optimization", block); }

TEST(DeepSpeedZero, DefaultsAreDeepSpeeds) {
  const ZeroConfig z = zero(R"({"stage": 3})").zero;
  EXPECT_EQ(z.reduce_bucket_size, 500'000'000);
  EXPECT_EQ(z.sub_group_size, 1'000'000'000);
  EXPECT_EQ(z.stage3_prefetch_bucket_size, 50'000'000);
  EXPECT_EQ(z.stage3_param_persistence_threshold, 100'000);
  EXPECT_EQ(z.stage3_max_live_parameters, 1'000'000'000);
  EXPECT_EQ(z.stage3_max_reuse_distance, 1'000'000'000);
  EXPECT_TRUE(z.overlap_comm);
  EXPECT_FALSE(zero(R"({"stage": 2})").zero.overlap_comm);
  EXPECT_TRUE(zero(R"({"stage": 2, "offload_optimizer": {"device": "cpu"}})").zero.offload_pin_memory);
}

// pydantic's Field(alias=...) with populate_by_name: either name sets the field.
TEST(DeepSpeedZero, FieldsTakeBothOfTheirNames) {
  ZeroConfig z = zero(R"({"stage": 3, "max_live_parameters": 0, "max_reuse_distance": 7, "prefetch_bucket_size": 11,
                          "param_persistence_threshold": 13, "gather_16bit_weights_on_model_save": true})")
                     .zero;
  EXPECT_EQ(z.stage3_max_live_parameters, 0);
  EXPECT_EQ(z.stage3_max_reuse_distance, 7);
  EXPECT_EQ(z.stage3_prefetch_bucket_size, 11);
  EXPECT_EQ(z.stage3_param_persistence_threshold, 13);
  EXPECT_TRUE(z.stage3_gather_16bit_weights_on_model_save);
  z = zero(R"({"stage": 3, "stage3_max_live_parameters": 5, "max_live_parameters": 5.0})").zero;
  EXPECT_EQ(z.stage3_max_live_parameters, 5);
  testing::expect_mentions(zero_error(R"({"stage": 3, "stage3_max_live_parameters": 1e9, "max_live_parameters": 0})"),
                           {"ds.json: zero_optimization.max_live_parameters = 0",
                            "zero_optimization.stage3_max_live_parameters = 1000000000.0", "two names"});
  testing::expect_mentions(zero_error(R"({"stage": 3, "model_persistence_threshold": -1})"),
                           {"model_persistence_threshold must be >= 0"});
  EXPECT_TRUE(
      has_warning(zero(R"({"stage": 3, "stage3_model_persistence_threshold": 1000})"), "model_persistence_threshold"));
}

// Deprecated names are read with DeepSpeed's warning, and refused beside their replacement.
TEST(DeepSpeedZero, DeprecatedNames) {
  DeepSpeedConfig config = zero(R"({"stage": 3, "stage3_gather_fp16_weights_on_model_save": true})");
  EXPECT_TRUE(config.zero.stage3_gather_16bit_weights_on_model_save);
  EXPECT_TRUE(has_warning(config, "stage3_gather_fp16_weights_on_model_save is deprecated"));
  testing::expect_mentions(zero_error(R"({"stage": 3, "stage3_gather_fp16_weights_on_model_save": true,
                                          "gather_16bit_weights_on_model_save": true})"),
                           {"deprecated", "gather_16bit_weights_on_model_save"});
  config = zero(R"({"stage": 2, "cpu_offload": true})");
  EXPECT_TRUE(config.zero.offload_optimizer);
  EXPECT_TRUE(has_warning(config, "cpu_offload is deprecated; use offload_optimizer"));
  EXPECT_FALSE(zero(R"({"stage": 2, "cpu_offload": false})").zero.offload_optimizer);
  testing::expect_mentions(zero_error(R"({"stage": 2, "cpu_offload": true, "offload_optimizer": {"device": "cpu"}})"),
                           {"cpu_offload", "offload_optimizer"});
  config = zero(R"({"stage": 3, "cpu_offload_param": true})");
  EXPECT_TRUE(config.zero.offload_param);
  EXPECT_TRUE(has_warning(config, "cpu_offload_param is deprecated; use offload_param"));
  EXPECT_FALSE(zero(R"({"stage": 3, "cpu_offload_param": false})").zero.offload_param);
  EXPECT_TRUE(has_warning(zero(R"({"stage": 2, "cpu_offload_use_pin_memory": true})"), "cpu_offload_use_pin_memory"));
  config = zero("true");  // the oldest form: stage 1
  EXPECT_EQ(config.zero.stage, 1);
  EXPECT_TRUE(has_warning(config, "deprecated"));
}

// Ranges are DeepSpeed's: 0 is legal where it declares ge=0, and integers may be written as
// floats with no fraction, or (in its config models) as strings of an integer.
TEST(DeepSpeedZero, RangesAndNumbersAreDeepSpeeds) {
  ZeroConfig z = zero(R"({"stage": 3, "reduce_bucket_size": 0, "sub_group_size": 0, "stage3_prefetch_bucket_size": 0,
                          "stage3_param_persistence_threshold": 0, "allgather_bucket_size": 0})")
                     .zero;
  EXPECT_EQ(z.reduce_bucket_size, 1);  // every gradient reduced alone, as DeepSpeed does with 0
  EXPECT_EQ(z.sub_group_size, 0);
  EXPECT_EQ(z.stage3_prefetch_bucket_size, 0);
  z = zero(R"({"stage": "2", "reduce_bucket_size": 5e8, "sub_group_size": "1_000", "overlap_comm": "yes",
               "stage3_max_live_parameters": "300.0", "contiguous_gradients": 0})")
          .zero;
  EXPECT_EQ(z.stage, 2);
  EXPECT_EQ(z.reduce_bucket_size, 500'000'000);
  EXPECT_EQ(z.sub_group_size, 1000);
  EXPECT_TRUE(z.overlap_comm);
  EXPECT_EQ(z.stage3_max_live_parameters, 300);
  EXPECT_FALSE(z.contiguous_gradients);
  testing::expect_mentions(zero_error(R"({"stage": 2, "reduce_bucket_size": -1})"),
                           {"ds.json: zero_optimization.reduce_bucket_size must be >= 0 (DeepSpeed's range), got -1"});
  testing::expect_mentions(zero_error(R"({"stage": 2, "reduce_bucket_size": "5e8"})"),
                           {"reduce_bucket_size must be a whole number, got \"5e8\""});
  testing::expect_mentions(zero_error(R"({"stage": 2, "reduce_bucket_size": 1.5})"), {"must be a whole number"});
  testing::expect_mentions(zero_error(R"({"stage": 2, "reduce_bucket_size": 1e30})"), {"must be a whole number"});
  testing::expect_mentions(zero_error(R"({"stage": 2, "overlap_comm": "maybe"})"), {"must be true or false"});
  testing::expect_mentions(zero_error(R"({"stage": 4})"), {"stage must be 0, 1, 2 or 3"});
}

TEST(DeepSpeedZero, OffloadBlocks) {
  ZeroConfig z = zero(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": false, "buffer_count": 4,
                          "fast_init": false}})")
                     .zero;
  EXPECT_TRUE(z.offload_optimizer);
  EXPECT_FALSE(z.offload_pin_memory);
  EXPECT_FALSE(zero(R"({"stage": 2, "offload_optimizer": {"device": "none"}})").zero.offload_optimizer);
  EXPECT_FALSE(zero(R"({"stage": 2, "offload_optimizer": "auto"})").zero.offload_optimizer);
  // Parameter offload happens under stage 3 only; below it DeepSpeed offloads nothing.
  EXPECT_TRUE(has_warning(zero(R"({"stage": 2, "offload_param": {"device": "cpu"}})"), "stage 3 only"));
  EXPECT_FALSE(zero(R"({"stage": 2, "offload_param": {"device": "cpu"}})").zero.offload_param);
  for (const char* bad : {R"({"stage": 2, "offload_optimizer": {"device": "nvme"}})",
                          R"({"stage": 2, "offload_optimizer": {"device": "gpu"}})",
                          R"({"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 1.5}})",
                          R"({"stage": 3, "offload_param": {"device": "nvme"}})",
                          R"({"stage": 2, "offload_optimizer": {"device": "cpu", "pin_mem": true}})",
                          R"({"stage": 2, "offload_optimizer": {"device": "cpu", "buffer_count": -1}})"})
    EXPECT_NE(zero_error(bad).find("ds.json: zero_optimization.offload_"), std::string::npos) << bad << "\n"
                                                                                              << zero_error(bad);
}

// Optimizer offload moves the partitioned optimizer state: the config is refused at stage 0,
// under the block's name or its deprecated boolean's.
TEST(DeepSpeedZero, OptimizerOffloadNeedsAStageThatPartitions) {
  testing::expect_mentions(zero_error(R"({"stage": 0, "offload_optimizer": {"device": "cpu"}})"),
                           {"ds.json: zero_optimization.offload_optimizer", "stage 1, 2 or 3"});
  testing::expect_mentions(zero_error(R"({"stage": 0, "cpu_offload": true})"),
                           {"ds.json: zero_optimization.cpu_offload", "stage 1, 2 or 3"});
  EXPECT_FALSE(zero(R"({"stage": 0, "offload_optimizer": {"device": "none"}})").zero.offload_optimizer);
  EXPECT_TRUE(zero(R"({"stage": 1, "offload_optimizer": {"device": "cpu"}})").zero.offload_optimizer);
}

// DeepSpeed's partial offload (ZeRO-Offload++, stage 3 there) is honoured at stages 1-3: the
// CPU Adam's share of the partition.
TEST(DeepSpeedZero, OffloadRatioIsTheCpuShare) {
  EXPECT_EQ(zero(R"({"stage": 3, "offload_optimizer": {"device": "cpu"}})").zero.offload_ratio, 1.0);
  for (const int stage : {1, 2, 3}) {
    const DeepSpeedConfig config =
        zero(R"({"stage": )" + std::to_string(stage) + R"(, "offload_optimizer": {"device": "cpu", "ratio": 0.3}})");
    EXPECT_EQ(config.zero.offload_ratio, 0.3);
    EXPECT_TRUE(config.warnings.empty()) << config.warnings.at(0);
  }
}

// The offload_optimizer fields of NVMe swapping are named in a warning with device cpu;
// cpuadam_cores_perc, when given, is the CPU Adam's share of the rank's cores.
TEST(DeepSpeedZero, OffloadOptimizerFieldsAreHonouredOrNamed) {
  const DeepSpeedConfig nvme_fields = zero(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "buffer_count": 4,
                                               "fast_init": false, "pipeline_read": false}})");
  for (const char* key : {"buffer_count", "fast_init", "pipeline_read"})
    EXPECT_TRUE(has_warning(nvme_fields, std::string("offload_optimizer.") + key + " applies to NVMe offload only"))
        << key;
  EXPECT_FALSE(nvme_fields.zero.offload_cpu_cores_share.has_value());
  EXPECT_EQ(zero(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "cpuadam_cores_perc": 0.5}})")
                .zero.offload_cpu_cores_share,
            0.5);
  EXPECT_NE(zero_error(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "cpuadam_cores_perc": 0}})")
                .find("cpuadam_cores_perc"),
            std::string::npos);
}

// Under stage 3, offload_param {device: cpu} keeps the weights' shards in host memory; the
// NVMe buffer sizes are named in a warning, and NVMe itself is refused with what to write.
TEST(DeepSpeedZero, ParameterOffloadUnderStage3) {
  DeepSpeedConfig config = zero(R"({"stage": 3, "offload_param": {"device": "cpu", "pin_memory": false}})");
  EXPECT_TRUE(config.zero.offload_param);
  EXPECT_FALSE(config.zero.offload_param_pin_memory);
  EXPECT_FALSE(config.zero.offload_optimizer);
  EXPECT_TRUE(config.warnings.empty());
  EXPECT_TRUE(zero(R"({"stage": 3, "offload_param": {"device": "cpu"}})").zero.offload_param_pin_memory);
  EXPECT_FALSE(zero(R"({"stage": 3, "offload_param": {"device": "none"}})").zero.offload_param);
  config = zero(R"({"stage": 3, "offload_param": {"device": "cpu", "buffer_count": 4, "buffer_size": 1e8,
                                                  "max_in_cpu": 1e9}})");
  EXPECT_TRUE(config.zero.offload_param);
  for (const char* key : {"offload_param.buffer_count", "offload_param.buffer_size", "offload_param.max_in_cpu"})
    EXPECT_TRUE(has_warning(config, std::string(key) + " applies to NVMe offload only")) << key;
  testing::expect_mentions(zero_error(R"({"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/x"}})"),
                           {"zero_optimization.offload_param.device 'nvme' is not supported", "\"device\": \"cpu\""});
}

// DeepSpeedConfigModel forbids extra keys: a misspelt one is refused by name, with the name it
// misspells.
TEST(DeepSpeedZero, UnknownKeysAreRefusedByName) {
  testing::expect_mentions(
      zero_error(R"({"stage": 3, "stage3_prefetch_bucket": 5, "mystery_knob": 1})"),
      {"ds.json: zero_optimization.mystery_knob, zero_optimization.stage3_prefetch_bucket (did you mean "
       "zero_optimization.stage3_prefetch_bucket_size?) are not settings of DeepSpeed's zero_optimization block",
       "check the spelling"});
  testing::expect_mentions(zero_error(R"({"stage": 2, "offload_optimzer": {"device": "cpu"}})"),
                           {"zero_optimization.offload_optimzer (did you mean zero_optimization.offload_optimizer?)"});
  testing::expect_mentions(zero_error(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memroy": true}})"),
                           {"zero_optimization.offload_optimizer.pin_memroy (did you mean "
                            "zero_optimization.offload_optimizer.pin_memory?)"});
}

TEST(DeepSpeedZero, FeaturesZerotuneDoesNotHaveWarnOnlyWhenOn) {
  DeepSpeedConfig config = zero(R"({"stage": 2, "zero_hpz_partition_size": 1, "mics_shard_size": -1,
                                    "zero_quantized_weights": false, "legacy_stage1": false})");
  EXPECT_TRUE(config.warnings.empty());
  config = zero(R"({"stage": 3, "zero_hpz_partition_size": 8, "mics_shard_size": 4, "zero_quantized_weights": true,
                    "zenflow": {"topk_ratio": 0.1}})");
  for (const char* key : {"zero_hpz_partition_size = 8", "mics_shard_size = 4", "zero_quantized_weights = true",
                          "zero_optimization.zenflow"})
    EXPECT_TRUE(has_warning(config, key)) << key;
}

}  // namespace
}  // namespace zt::train
