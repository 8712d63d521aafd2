// The message of a run stopped by a signal: the resume command is the run's own command line
// with --resume_from_checkpoint in place of the one given (in each form the arguments take)
// or added, quoted for a shell; without a checkpoint, the hint fits the save strategy.
#include <gtest/gtest.h>

#include <signal.h>

#include "train/report/interruption_report.h"

namespace zt::train {
namespace {

const std::vector<std::string> kRun = {"zerotune", "train", "--output_dir", "out", "--max_steps", "100"};

TEST(ResumeCommand, AddsTheCheckpointOrReplacesTheOneGiven) {
  EXPECT_EQ(resume_command(kRun, "out/checkpoint-5"),
            "zerotune train --output_dir out --max_steps 100 --resume_from_checkpoint out/checkpoint-5");
  EXPECT_EQ(resume_command({"zerotune", "train", "--resume_from_checkpoint", "true", "--output_dir", "out"},
                           "out/checkpoint-9"),
            "zerotune train --resume_from_checkpoint out/checkpoint-9 --output_dir out");
  EXPECT_EQ(resume_command({"zerotune", "train", "--resume_from_checkpoint=out/checkpoint-2"}, "out/checkpoint-9"),
            "zerotune train --resume_from_checkpoint=out/checkpoint-9");
  EXPECT_EQ(resume_command({"zerotune", "train", "sft.yaml", "resume_from_checkpoint=true"}, "saves/checkpoint-9"),
            "zerotune train sft.yaml resume_from_checkpoint=saves/checkpoint-9");
}

TEST(ResumeCommand, QuotesWhatAShellWouldSplitOrExpand) {
  EXPECT_EQ(resume_command({"zerotune", "train", "--deepspeed", R"({"zero_optimization": {"stage": 2}})", "--run_name",
                            "it's mine", "--output_dir", "my out"},
                           "my out/checkpoint-5"),
            R"(zerotune train --deepspeed '{"zero_optimization": {"stage": 2}}' --run_name 'it'\''s mine' )"
            R"(--output_dir 'my out' --resume_from_checkpoint 'my out/checkpoint-5')");
  EXPECT_EQ(resume_command({"zerotune", "train", "--learning_rate", "1e-4", "--x", ""}, "a"),
            "zerotune train --learning_rate 1e-4 --x '' --resume_from_checkpoint a");
}

TEST(InterruptionMessage, NamesTheCheckpointAndTheCommand) {
  Interruption stop{.signal = SIGINT, .step = 7, .max_steps = 100, .last_checkpoint = "out/checkpoint-5"};
  EXPECT_EQ(interruption_message(stop, kRun),
            "stopped by SIGINT after step 7 of 100. The last complete checkpoint is out/checkpoint-5; to go on from "
            "it, run:\n  zerotune train --output_dir out --max_steps 100 --resume_from_checkpoint out/checkpoint-5");
  stop.launched = true;
  EXPECT_NE(interruption_message(stop, kRun).find("start every rank again with the same launcher and this command:"),
            std::string::npos);
}

TEST(InterruptionMessage, WithoutACheckpointSaysHowToGetOne) {
  Interruption stop{.signal = SIGTERM, .step = 3, .max_steps = 100, .save_steps = 50};
  EXPECT_EQ(interruption_message(stop, kRun),
            "stopped by SIGTERM after step 3 of 100, before this run saved any checkpoint: there is nothing to resume "
            "from. The first checkpoint was due at step 50 (--save_steps 50); a smaller --save_steps saves sooner");
  stop.saves_checkpoints = false;
  EXPECT_NE(interruption_message(stop, kRun)
                .find("Checkpoints are off (--save_strategy no); --save_strategy steps "
                      "--save_steps N saves one every N steps"),
            std::string::npos);
  stop.saves_checkpoints = true;
  stop.save_steps = std::nullopt;  // --save_strategy epoch
  EXPECT_NE(interruption_message(stop, kRun).find("at the end of the first epoch (--save_strategy epoch)"),
            std::string::npos);
}

TEST(OwnCommandLine, IsThisProcesssArguments) {
  const std::vector<std::string> words = own_command_line();
  ASSERT_FALSE(words.empty());
  EXPECT_NE(words[0].find("interruption_report_test"), std::string::npos) << words[0];
}

}  // namespace
}  // namespace zt::train
