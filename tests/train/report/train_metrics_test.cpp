// What the training log reports besides the loss: the FLOPs estimate behind mfu, the GPU
// peak table and its ZT_PEAK_TFLOPS override, the progress line, and train_log.jsonl's
// rule for a resumed run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "models/config/config.h"
#include "runtime/error.h"
#include "runtime/terminal/progress_bar.h"
#include "tests/common/process_test_util.h"
#include "tests/common/train_log_test_util.h"
#include "train/report/train_log.h"
#include "train/report/train_metrics.h"

namespace zt::train {
namespace {
namespace fs = std::filesystem;

models::ModelConfig config(bool tied) {
  models::ModelConfig c;
  c.vocab_size = 100;
  c.hidden_size = 8;
  c.num_layers = 3;
  c.num_heads = 4;
  c.head_dim = 4;
  c.tie_word_embeddings = tied;
  return c;
}

TEST(TrainMetrics, AnUntiedEmbeddingIsNoMatmul) {
  EXPECT_EQ(flops_model(config(false), 5000).matmul_parameters, 5000 - 800);
  EXPECT_EQ(flops_model(config(true), 5000).matmul_parameters, 5000);
  EXPECT_EQ(flops_model(config(true), 5000).attention_width, 16);
  EXPECT_EQ(flops_model(config(true), 5000).layers, 3);
}

TEST(TrainMetrics, FlopsAreSixPerParameterPerTokenPlusQuadraticAttention) {
  EXPECT_DOUBLE_EQ(squared_sequence_lengths({0, 3, 7, 7, 12}), 9.0 + 16.0 + 0.0 + 25.0);
  const FlopsModel model{.matmul_parameters = 1000, .layers = 2, .attention_width = 16};
  // 12 tokens in sequences of 3, 4 and 5.
  EXPECT_DOUBLE_EQ(training_flops(model, 12, 50), 6.0 * 1000 * 12 + 12.0 * 2 * 16 * 50);
  ThroughputWindow window;
  window.add_batch({0, 3, 7});
  window.add_batch({0, 5});
  EXPECT_DOUBLE_EQ(window.tokens, 12);
  EXPECT_DOUBLE_EQ(window.squared_lengths, 50);
}

class PeakFlops : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("ZT_PEAK_TFLOPS"); }
  void TearDown() override { unsetenv("ZT_PEAK_TFLOPS"); }
  static DeviceProperties gpu(int major, int minor, int sms) {
    DeviceProperties p;
    p.compute_major = major, p.compute_minor = minor, p.multiprocessors = sms;
    return p;
  }
};

TEST_F(PeakFlops, DataSheetFiguresFollowFromSmsAndClock) {
  EXPECT_NEAR(*gpu_peak_flops(gpu(9, 0, 132), 1830000) / 1e12, 989.4, 0.1);  // H100/H200 SXM
  EXPECT_NEAR(*gpu_peak_flops(gpu(8, 0, 108), 1410000) / 1e12, 311.9, 0.1);  // A100 SXM
  EXPECT_NEAR(*gpu_peak_flops(gpu(8, 9, 58), 2040000) / 1e12, 121.2, 0.1);   // L4
  EXPECT_FALSE(gpu_peak_flops(gpu(7, 0, 80), 1530000));                      // V100: not in the table
  EXPECT_FALSE(gpu_peak_flops(gpu(9, 0, 132), 0));
}

TEST_F(PeakFlops, EnvironmentOverridesAndIsChecked) {
  setenv("ZT_PEAK_TFLOPS", "500", 1);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops(gpu(7, 0, 80), 1530000), 500e12);
  setenv("ZT_PEAK_TFLOPS", "fast", 1);
  try {
    gpu_peak_flops(gpu(9, 0, 132), 1830000);
    ADD_FAILURE() << "a bad ZT_PEAK_TFLOPS was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ZT_PEAK_TFLOPS='fast'"), std::string::npos) << e.what();
  }
  setenv("ZT_PEAK_TFLOPS", "-3", 1);
  EXPECT_THROW(gpu_peak_flops(gpu(9, 0, 132), 1830000), Error);
}

TEST(ProgressLine, ShowsStepPercentElapsedEtaSpeedAndLoss) {
  EXPECT_EQ(
      progress_line({.step = 42, .max_steps = 100, .steps_this_run = 42, .elapsed_seconds = 12.0, .loss = 2.34123}),
      "42/100 42% [00:12<00:17, 3.50it/s, loss=2.3412]");
  // A resumed run's speed counts its own steps; slow steps show s/it; hours appear when needed.
  EXPECT_EQ(progress_line({.step = 60, .max_steps = 1000, .steps_this_run = 10, .elapsed_seconds = 25.0, .loss = {}}),
            "60/1000 6% [00:25<39:10, 2.50s/it]");
  EXPECT_EQ(format_duration(3723.4), "1:02:03");
  EXPECT_EQ(progress_line({.step = 0, .max_steps = 10, .steps_this_run = 0, .elapsed_seconds = 0, .loss = {}}),
            "0/10 0% [00:00<?]");
}

class TrainLog : public testing::FolderTest {};

TEST_F(TrainLog, EachEntryIsALineAtOnce) {
  TrainLogFile log(dir_.string(), nlohmann::json::array());
  log.append({{"loss", 1.5}, {"step", 1}});
  ASSERT_EQ(testing::train_log_entries(dir_).size(), 1u);  // flushed while the file is still open
  log.append({{"eval_loss", 1.25}, {"step", 1}});
  ASSERT_EQ(testing::train_log_entries(dir_).size(), 2u);
  EXPECT_EQ(testing::train_log_entries(dir_)[1]["eval_loss"], 1.25);
}

// A resumed run's file starts with the checkpoint's log_history, whatever the earlier run wrote
// after it (the steps it will log again, its closing summary, a line cut short by a kill).
TEST_F(TrainLog, AFreshRunStartsOverAndAResumedOneStartsFromTheCheckpointsHistory) {
  {
    TrainLogFile log(dir_.string(), nlohmann::json::array());
    for (int step = 1; step <= 4; ++step) log.append({{"loss", step}, {"step", step}});
    log.append({{"step", 4}, {"train_loss", 2.5}, {"train_runtime", 1.0}});
  }
  std::ofstream(dir_ / TrainLogFile::kFileName, std::ios::app) << R"({"loss": 5, "st)";  // killed mid-line
  const nlohmann::json history = nlohmann::json::array({{{"loss", 1}, {"step", 2}}, {{"loss", 2}, {"step", 4}}});
  {
    TrainLogFile log(dir_.string(), history);  // resumed from checkpoint-4, which logged every second step
    log.append({{"loss", 30}, {"step", 5}});
  }
  std::vector<nlohmann::json> kept = testing::train_log_entries(dir_);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0], history[0]);
  EXPECT_EQ(kept[1], history[1]);
  EXPECT_EQ(kept[2]["loss"], 30);
  TrainLogFile fresh(dir_.string(), nlohmann::json::array());
  EXPECT_TRUE(testing::train_log_entries(dir_).empty());
}

}  // namespace
}  // namespace zt::train
