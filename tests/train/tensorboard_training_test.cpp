// `zerotune train --report_to tensorboard` and DeepSpeed's `tensorboard` block end to end on
// the shipped tiny Qwen model (the training job the CLI runs, on the CPU): the event files are
// where HF and DeepSpeed put them, every record's framing and CRCs hold, and every number of
// every train_log.jsonl entry is a scalar under HF's tag at the entry's step. A resumed run's
// SessionLog START makes TensorBoard's view of the folder what train_log.jsonl says.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>

#include "tests/common/process_test_util.h"
#include "tests/common/tensorboard_event_reader.h"
#include "tests/common/tiny_trainer_model.h"
#include "tests/common/train_log_test_util.h"
#include "train/report/event_file_writer.h"
#include "train/report/tensorboard_log.h"
#include "train/training_job.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using testing::ReadEvent;

// One log entry as TensorBoard holds it: the step and each tag's value.
struct Logged {
  std::int64_t step = 0;
  std::map<std::string, float> scalars;
  bool operator==(const Logged&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Logged& logged) {
  out << "step " << logged.step << ":";
  for (const auto& [tag, value] : logged.scalars) out << " " << tag << "=" << value;
  return out;
}

// What HF's TensorBoardCallback makes of train_log.jsonl's entries.
std::vector<Logged> expected_from(const fs::path& output_dir) {
  std::vector<Logged> expected;
  for (const nlohmann::json& entry : testing::train_log_entries(output_dir)) {
    Logged logged{entry.at("step").get<std::int64_t>(), {}};
    for (const auto& [key, value] : entry.items())
      if (key != "step") logged.scalars[tensorboard_tag(key)] = value.get<float>();
    expected.push_back(logged);
  }
  return expected;
}

// The scalar events of a folder's files, read as TensorBoard reads them: file after file, a
// SessionLog START at step S dropping what came before it at S and later.
std::vector<Logged> scalars_in(const fs::path& folder) {
  std::vector<Logged> seen;
  for (const fs::path& file : testing::event_files(folder))
    for (const ReadEvent& event : testing::read_events(file)) {
      if (event.session_status == 1u)
        std::erase_if(seen, [&](const Logged& logged) { return logged.step >= event.step; });
      Logged logged{event.step, {}};
      for (const testing::ReadValue& value : event.values)
        if (value.simple_value) logged.scalars[value.tag] = *value.simple_value;
      if (!logged.scalars.empty()) seen.push_back(logged);
    }
  return seen;
}

class TensorBoardTraining : public testing::FolderTest {
 protected:
  void train(const fs::path& output_dir, std::vector<std::string> extra) {
    extra.insert(extra.begin(), {"--finetuning_type", "full", "--max_steps", "4", "--logging_steps", "1",
                                 "--save_strategy", "no", "--output_dir", output_dir.string()});
    run_training_job(parse_training_arguments(testing::tiny_qwen_job_flags(extra)));
  }
};

TEST_F(TensorBoardTraining, ReportToTensorboardLogsEveryEntryUnderHfsTagsInTheDefaultFolder) {
  const fs::path out = dir_ / "out";
  train(out, {"--report_to", "tensorboard", "--val_size", "5", "--eval_strategy", "steps", "--eval_steps", "2"});
  // transformers 4's default: output_dir/runs/<Mon DD_HH-MM-SS>_<hostname>, one file in it.
  std::vector<fs::path> runs;
  for (const auto& entry : fs::directory_iterator(out / "runs")) runs.push_back(entry.path());
  ASSERT_EQ(runs.size(), 1u);
  const std::string run = runs[0].filename().string();
  EXPECT_TRUE(std::regex_match(run, std::regex("[A-Z][a-z]{2}[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2}_" + host_name())))
      << run;
  const std::vector<fs::path> files = testing::event_files(runs[0]);
  ASSERT_EQ(files.size(), 1u);

  const std::vector<ReadEvent> events = testing::read_events(files[0]);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  ASSERT_EQ(events[1].values.size(), 1u);
  EXPECT_EQ(events[1].values[0].tag, "args/text_summary");
  const nlohmann::json args = nlohmann::json::parse(events[1].values[0].strings.at(0));
  EXPECT_EQ(args["report_to"], "tensorboard");
  EXPECT_EQ(args["output_dir"], out.string());

  const std::vector<Logged> expected = expected_from(out);
  EXPECT_EQ(scalars_in(runs[0]), expected);
  // The entries the run logs: 4 steps, 2 evaluations, the summary.
  ASSERT_EQ(expected.size(), 7u);
  for (const char* tag : {"train/loss", "train/learning_rate", "train/grad_norm", "train/epoch"})
    EXPECT_TRUE(expected[0].scalars.count(tag)) << tag;
  EXPECT_EQ(expected[0].step, 1);
  EXPECT_TRUE(expected[2].scalars.count("eval/loss"));
  EXPECT_EQ(expected[2].step, 2);
  EXPECT_TRUE(expected[6].scalars.count("train/train_loss"));
  EXPECT_TRUE(expected[6].scalars.count("train/train_runtime"));
}

TEST_F(TensorBoardTraining, DeepSpeedsBlockWritesIntoOutputPathJobName) {
  const fs::path out = dir_ / "out", tb = dir_ / "ds_tb";
  const std::string config = R"({"train_micro_batch_size_per_gpu": "auto", "tensorboard": {"enabled": true,
      "output_path": ")" + tb.string() +
                             R"(", "job_name": "sft"}})";
  ::testing::internal::CaptureStderr();
  train(out, {"--deepspeed", config});
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed.find("has no effect"), std::string::npos) << printed;
  EXPECT_NE(printed.find("TensorBoard event files go to " + (tb / "sft").string()), std::string::npos) << printed;
  EXPECT_FALSE(fs::exists(out / "runs"));  // --report_to is none
  ASSERT_EQ(testing::event_files(tb / "sft").size(), 1u);
  EXPECT_EQ(scalars_in(tb / "sft"), expected_from(out));
}

TEST_F(TensorBoardTraining, AResumedRunsFolderReadsAsItsTrainLog) {
  const fs::path out = dir_ / "out", tb = dir_ / "tb";
  const std::vector<std::string> flags = {"--report_to",     "tensorboard", "--logging_dir", tb.string(),
                                          "--save_strategy", "steps",       "--save_steps",  "2"};
  train(out, flags);
  std::vector<std::string> resuming = flags;
  resuming.insert(resuming.end(), {"--resume_from_checkpoint", (out / "checkpoint-2").string()});
  train(out, resuming);
  const std::vector<fs::path> files = testing::event_files(tb);
  ASSERT_EQ(files.size(), 2u);
  const std::vector<ReadEvent> second = testing::read_events(files[1]);
  ASSERT_GE(second.size(), 3u);
  EXPECT_EQ(second[2].session_status, 1u);
  EXPECT_EQ(second[2].step, 3);
  // Steps 3, 4 and the summary of the first run are dropped; the resumed run's stand.
  const std::vector<Logged> expected = expected_from(out);
  EXPECT_EQ(expected.size(), 5u);
  EXPECT_EQ(scalars_in(tb), expected);
}

}  // namespace
}  // namespace zt::train
