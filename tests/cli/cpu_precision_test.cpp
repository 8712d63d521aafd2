// What the CPU computes in when a 16-bit precision is asked, said on the command line's output:
// `zerotune train --bf16/--fp16` trains in float32 on the CPU and its start line says so;
// `generate` and `evaluate --dtype bfloat16/float16` keep 16-bit weights and activations and
// compute each op in float32, and say that.
#include <gtest/gtest.h>

#include "tests/common/process_test_util.h"

namespace {

using zt::testing::CliRun;
using zt::testing::kAlpacaDemo;
using zt::testing::kTinyQwen;

class CpuPrecisionCli : public zt::testing::CliTest {
 protected:
  CliRun train(const std::string& precision) {
    return zerotune("train " + precision + " --device cpu --model_name_or_path " + kTinyQwen + " --train_file " +
                    kAlpacaDemo +
                    " --finetuning_type full --max_steps 1 --per_device_train_batch_size 2 --save_strategy no "
                    "--overwrite_output_dir --output_dir " +
                    (dir_ / "out").string());
  }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(CpuPrecisionCli, TrainingStatesItRunsInFloat32) {
  for (const std::string precision : {"bf16", "fp16"}) {
    const CliRun run = train("--" + precision);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_TRUE(contains(run.output, "on cpu, fp32 (--" + precision + " runs as fp32 on the CPU)")) << run.output;
    EXPECT_TRUE(contains(run.output, "--" + precision + " on the CPU: training in float32 instead")) << run.output;
    EXPECT_FALSE(contains(run.output, "on cpu, " + precision + ",")) << run.output;
  }
  const CliRun plain = train("");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_TRUE(contains(plain.output, "on cpu, fp32, ")) << plain.output;
  EXPECT_FALSE(contains(plain.output, "runs as fp32")) << plain.output;
}

TEST_F(CpuPrecisionCli, GenerateAndEvaluateStateSixteenBitStorageWithFloat32Arithmetic) {
  const std::string generate =
      "generate --device cpu --model_name_or_path " + kTinyQwen + " --max_new_tokens 2 --prompt hello";
  const CliRun bf16 = zerotune(generate + " --dtype bfloat16");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  EXPECT_TRUE(contains(bf16.output,
                       "--dtype bfloat16 on the CPU: bfloat16 weights and activations, float32 arithmetic inside "
                       "every op (each result rounded to bfloat16"))
      << bf16.output;
  const CliRun f32 = zerotune(generate);
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  EXPECT_FALSE(contains(f32.output, "on the CPU")) << f32.output;

  const CliRun fp16 = zerotune("evaluate --device cpu --dtype float16 --model_name_or_path " + kTinyQwen +
                               " --validation_file " + kAlpacaDemo);
  ASSERT_EQ(fp16.exit_code, 0) << fp16.output;
  EXPECT_TRUE(contains(fp16.output, "--dtype float16 on the CPU: float16 weights and activations, float32 arithmetic"))
      << fp16.output;
}

}  // namespace
