// `zerotune train --offload_delayed_update` on the shipped tiny model (CPU, ZeRO with optimizer
// offload): each step's forward runs on the weights before the previous step's update. With
// every batch the same sample, the delayed run's losses are the immediate run's one step late
// (its second step sees the initial weights again, its third the first update's); the end of
// training sees every update (the last lands before the evaluation and the save); and the flag
// is refused, naming what to change, without offload and with a partial offload. Stage 3 with
// both offloads over two in-process ranks runs one step late the same way.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/common/process_test_util.h"
#include "tests/common/train_log_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

class OffloadDelayedUpdate : public testing::FolderTest {
 protected:
  void SetUp() override {
    testing::FolderTest::SetUp();
    // One sample, repeated: every step trains on the same batch.
    nlohmann::json records = nlohmann::json::array();
    for (int i = 0; i < 8; ++i)
      records.push_back({{"instruction", "Name a colour."}, {"input", ""}, {"output", "Blue, like the sky."}});
    std::ofstream(dir_ / "same.json") << records.dump();
  }
  std::string ds_config(const std::string& zero) {
    const fs::path path = dir_ / ("ds_" + std::to_string(++configs_) + ".json");
    std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                               "zero_optimization": )"
                        << zero << "}";
    return path.string();
  }
  testing::CliRun train(const std::string& out, const std::string& extra) {
    return testing::run_zerotune(
        "train --model_name_or_path " + (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string() + " --train_file " +
            (dir_ / "same.json").string() +
            " --template qwen --device cpu --finetuning_type full "
            "--per_device_train_batch_size 1 --logging_steps 1 --max_steps 3 "
            "--learning_rate 1e-2 --lr_scheduler_type constant --save_strategy no --report_to none --output_dir " +
            (dir_ / out).string() + " " + extra,
        dir_);
  }
  std::vector<double> losses(const std::string& out) {
    std::vector<double> values;
    for (const nlohmann::json& e : testing::train_log_entries(dir_ / out))
      if (e.contains("loss")) values.push_back(e["loss"].get<double>());
    return values;
  }
  std::string offload_stage2() { return ds_config(R"({"stage": 2, "offload_optimizer": {"device": "cpu"}})"); }
  int configs_ = 0;
};

TEST_F(OffloadDelayedUpdate, LossesRunOneStepLateAndTheEndHoldsEveryUpdate) {
  const testing::CliRun now = train("now", "--deepspeed " + offload_stage2());
  ASSERT_EQ(now.exit_code, 0) << now.output;
  const std::string same = (dir_ / "same.json").string();
  const testing::CliRun late = train(
      "late", "--deepspeed " + offload_stage2() + " --offload_delayed_update --do_eval --validation_file " + same);
  ASSERT_EQ(late.exit_code, 0) << late.output;
  const std::vector<double> a = losses("now"), b = losses("late");
  ASSERT_EQ(a.size(), 3u) << now.output;
  ASSERT_EQ(b.size(), 3u) << late.output;
  EXPECT_GT(a[0] - a[1], 0.01) << "the immediate run learns the sample";
  EXPECT_EQ(b[0], a[0]);
  EXPECT_EQ(b[1], a[0]) << "step 2 runs on the initial weights again";
  EXPECT_EQ(b[2], a[1]) << "step 3 runs on the first update's weights";
  // The evaluation at the end sees the third update, which a delayed run's fifth step trains on.
  double eval_loss = -1.0;
  for (const nlohmann::json& e : testing::train_log_entries(dir_ / "late"))
    if (e.contains("eval_loss")) eval_loss = e["eval_loss"].get<double>();
  const testing::CliRun five =
      train("late5", "--deepspeed " + offload_stage2() + " --offload_delayed_update --max_steps 5");
  ASSERT_EQ(five.exit_code, 0) << five.output;
  const std::vector<double> c = losses("late5");
  ASSERT_EQ(c.size(), 5u) << five.output;
  EXPECT_NEAR(eval_loss, c[4], 2e-4) << late.output;
  EXPECT_GT(std::abs(eval_loss - b[2]), 1e-3) << "the evaluation does not see step 3's stale weights";
  EXPECT_TRUE(fs::exists(dir_ / "late" / "model.safetensors")) << late.output;
}

TEST_F(OffloadDelayedUpdate, StageThreeWithBothOffloadsOnTwoRanksRunsOneStepLate) {
  const std::string zero3 =
      ds_config(R"({"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}})");
  const testing::CliRun now = train("z3now", "--deepspeed " + zero3 + " --inprocess_ranks 2");
  ASSERT_EQ(now.exit_code, 0) << now.output;
  const testing::CliRun late =
      train("z3late", "--deepspeed " + zero3 + " --inprocess_ranks 2 --offload_delayed_update");
  ASSERT_EQ(late.exit_code, 0) << late.output;
  const std::vector<double> a = losses("z3now"), b = losses("z3late");
  ASSERT_EQ(a.size(), 3u) << now.output;
  ASSERT_EQ(b.size(), 3u) << late.output;
  EXPECT_EQ(b[1], a[0]);
  EXPECT_EQ(b[2], a[1]);
  EXPECT_NE(a[1], a[0]);
}

TEST_F(OffloadDelayedUpdate, RefusedWhereItCannotRun) {
  struct Case {
    std::string extra, message;
  };
  for (const Case& c :
       {Case{"", "add --deepspeed with zero_optimization.offload_optimizer"},
        Case{"--deepspeed " + ds_config(R"({"stage": 2})"), "the DeepSpeed config offloads no optimizer"},
        Case{"--deepspeed " + ds_config(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}})"),
             "offload_optimizer.ratio is 0.5"}}) {
    const testing::CliRun run = train("refused", c.extra + " --offload_delayed_update");
    EXPECT_EQ(run.exit_code, 2) << c.extra << "\n" << run.output;
    EXPECT_NE(run.output.find(c.message), std::string::npos) << c.extra << "\n" << run.output;
  }
}

}  // namespace
}  // namespace zt
