// What `zerotune train` tells a first-time user, on the shipped tiny model (CPU): the start line
// names the fine-tuning method and says when LoRA is so by default; --fp16 on the CPU, which
// trains in float32, logs no loss scale; and a resumed run's train_log.jsonl lists the entries
// its trainer_state.json lists, no more.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/common/process_test_util.h"
#include "tests/common/train_log_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

class TrainFirstRun : public testing::FolderTest {
 protected:
  testing::CliRun train(const std::string& extra) {
    return testing::run_zerotune("train --model_name_or_path " +
                                     (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string() + " --train_file " +
                                     (fs::path(ZT_SOURCE_DIR) / "examples/data/alpaca_demo.json").string() +
                                     " --template qwen --device cpu --per_device_train_batch_size 2 --logging_steps 1 "
                                     "--output_dir " +
                                     (dir_ / "out").string() + " " + extra,
                                 dir_);
  }
  // The line that starts with "run ".
  static std::string start_line(const std::string& output) {
    const std::size_t at = output.find("] run ");
    return at == std::string::npos ? "" : output.substr(at, output.find('\n', at) - at);
  }
};

TEST_F(TrainFirstRun, TheStartLineNamesTheMethodAndSaysWhenLoraIsTheDefault) {
  const testing::CliRun lora = train("--max_steps 1 --save_strategy no");
  ASSERT_EQ(lora.exit_code, 0) << lora.output;
  EXPECT_NE(start_line(lora.output)
                .find("LoRA rank 8, alpha 16, on all linear modules (--finetuning_type lora is "
                      "the default, as in LLaMA-Factory; --finetuning_type full trains every "
                      "parameter)"),
            std::string::npos)
      << lora.output;
  const testing::CliRun full = train("--max_steps 1 --save_strategy no --finetuning_type full --overwrite_output_dir");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  EXPECT_NE(start_line(full.output).find(", full fine-tuning, "), std::string::npos) << full.output;
  EXPECT_EQ(full.output.find("is the default"), std::string::npos) << full.output;
  // QLoRA says its base is held in 4 bits.
  const testing::CliRun qlora = train("--max_steps 1 --save_strategy no --quantization_bit 4 --overwrite_output_dir");
  ASSERT_EQ(qlora.exit_code, 0) << qlora.output;
  EXPECT_NE(start_line(qlora.output).find("on all linear modules, on a 4-bit base (nf4, double quantization)"),
            std::string::npos)
      << qlora.output;
}

// fp16 on the CPU trains in float32 (said once), where gradients do not underflow: no loss
// scaling, and no loss_scale in the log.
TEST_F(TrainFirstRun, Fp16OnTheCpuLogsNoLossScale) {
  const testing::CliRun run = train("--max_steps 2 --save_strategy no --fp16");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--fp16 on the CPU: training in float32 instead"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("loss_scale"), std::string::npos) << run.output;
  const std::vector<nlohmann::json> entries = testing::train_log_entries(dir_ / "out");
  ASSERT_FALSE(entries.empty());
  for (const nlohmann::json& entry : entries) EXPECT_FALSE(entry.contains("loss_scale")) << entry.dump();
}

// A run of 4 steps (its closing summary at step 4), resumed from its checkpoint at step 4 to
// step 6: the log restarts from the checkpoint's history, so the old summary is not kept.
TEST_F(TrainFirstRun, AResumedRunsLogListsWhatItsTrainerStateLists) {
  ASSERT_EQ(train("--max_steps 4 --save_steps 2").exit_code, 0);
  const testing::CliRun resumed = train("--max_steps 6 --save_steps 2 --resume_from_checkpoint true");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const nlohmann::json state = nlohmann::json::parse(testing::read_text(dir_ / "out/trainer_state.json"));
  const std::vector<nlohmann::json> logged = testing::train_log_entries(dir_ / "out");
  ASSERT_EQ(logged.size(), state["log_history"].size());
  for (std::size_t i = 0; i < logged.size(); ++i) EXPECT_EQ(logged[i], state["log_history"][i]) << i;
  std::size_t summaries = 0;
  for (const nlohmann::json& entry : logged) summaries += entry.contains("train_runtime") ? 1 : 0;
  EXPECT_EQ(summaries, 1u) << "the first run's summary stays out of the resumed run's log";
}

}  // namespace
}  // namespace zt
