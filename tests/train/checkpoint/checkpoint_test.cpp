// Checkpoint folders: HF's layout and trainer_state.json fields, atomic replacement, a
// failed save leaving earlier checkpoints intact, rotation, and resume resolution.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/optimizer_state_files.h"
#include "train/checkpoint/trainer_state.h"

namespace zt::train {
namespace {
namespace fs = std::filesystem;

class CheckpointDir : public testing::FolderTest {
 protected:
  CheckpointContents contents(std::int64_t step) {
    TrainerState state;
    state.global_step = step;
    state.log_history.push_back({{"loss", 1.5}, {"step", step}});
    CheckpointContents c;
    c.write_model = [](const std::string& d) { std::ofstream(fs::path(d) / "config.json") << "{}"; };
    c.write_optimizer = [step](const std::string& d) {
      const Tensor value = Tensor::full({4}, static_cast<double>(step), DType::kF32);
      write_state_slices(d, 0, 1, {StateSlice{"w", {2, 2}, 0, 4, value, value, value}});
      write_state_index(d, {0}, {.step = step});
    };
    c.trainer_state = to_json(state);
    c.run_state = {{"data_position", step * 2}};
    c.training_args = {{"learning_rate", 1e-4}};
    return c;
  }
};

TEST_F(CheckpointDir, WritesHfLayoutAndLoadsBack) {
  std::string path = save_checkpoint(dir_.string(), 10, contents(10));
  EXPECT_EQ(fs::path(path).filename(), "checkpoint-10");
  for (const char* file : {"config.json", "trainer_state.json", "optimizer_index.json",
                           "optimizer/rank-00000-of-00001.safetensors", "zerotune_state.json", "training_args.json"})
    EXPECT_TRUE(fs::exists(fs::path(path) / file)) << file;
  LoadedCheckpoint loaded = load_checkpoint(path);
  TrainerState state = trainer_state_from_json(loaded.trainer_state);
  EXPECT_EQ(state.global_step, 10);
  EXPECT_EQ(state.log_history[0]["loss"], 1.5);
  EXPECT_TRUE(loaded.trainer_state.contains("best_model_checkpoint"));
  EXPECT_TRUE(loaded.trainer_state["best_model_checkpoint"].is_null());
  EXPECT_EQ(loaded.run_state["data_position"], 20);
  const std::optional<OptimizerStateFiles> optimizer = OptimizerStateFiles::open(path);
  ASSERT_TRUE(optimizer.has_value());
  EXPECT_EQ(optimizer->step(), 10);
  EXPECT_EQ(optimizer->master("w").to_vector(), (std::vector<double>{10, 10, 10, 10}));
  EXPECT_EQ(optimizer->master("w").shape(), (Shape{2, 2}));
}

TEST_F(CheckpointDir, AFailedSaveLeavesNoFolderAndKeepsTheOthers) {
  save_checkpoint(dir_.string(), 5, contents(5));
  CheckpointContents failing = contents(6);
  failing.write_model = [](const std::string&) { throw Error("disk full"); };
  EXPECT_THROW(save_checkpoint(dir_.string(), 6, failing), Error);
  EXPECT_EQ(list_checkpoints(dir_.string()).size(), 1u);
  EXPECT_FALSE(fs::exists(dir_ / "checkpoint-6"));
  EXPECT_FALSE(fs::exists(dir_ / ".checkpoint-6.partial"));
  // Saving the same step again replaces it whole.
  save_checkpoint(dir_.string(), 5, contents(7));
  EXPECT_EQ(load_checkpoint((dir_ / "checkpoint-5").string()).run_state["data_position"], 14);
}

TEST_F(CheckpointDir, IncompleteFoldersAreNotCheckpoints) {
  save_checkpoint(dir_.string(), 2, contents(2));
  fs::create_directories(dir_ / "checkpoint-9");  // no trainer_state.json: a crash mid-copy by hand
  fs::create_directories(dir_ / "checkpoint-x");
  auto found = list_checkpoints(dir_.string());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(resolve_resume_checkpoint("true", dir_.string()), found[0]);
}

TEST_F(CheckpointDir, RotationKeepsTheNewestAndTheBest) {
  for (int step : {10, 20, 30, 40}) save_checkpoint(dir_.string(), step, contents(step));
  rotate_checkpoints(dir_.string(), 2, (dir_ / "checkpoint-10").string());
  auto left = list_checkpoints(dir_.string());
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(fs::path(left[0]).filename(), "checkpoint-10");
  EXPECT_EQ(fs::path(left[1]).filename(), "checkpoint-40");
}

TEST_F(CheckpointDir, ResumeErrorsSayWhatIsMissing) {
  testing::expect_mentions(testing::error_of([&] { resolve_resume_checkpoint("true", dir_.string()); }),
                           {"no complete checkpoint-N folder"});
  testing::expect_mentions(
      testing::error_of([&] { resolve_resume_checkpoint((dir_ / "nope").string(), dir_.string()); }),
      {"not a checkpoint folder"});
}

// A checkpoint HF's Trainer wrote (a published LoRA checkpoint's trainer_state.json beside the
// pickled optimizer, scheduler and RNG state) is refused when the resume is resolved, before any
// model loads, saying what it is and what to do instead; so is a folder that lost its run state.
TEST_F(CheckpointDir, CheckpointsOfHfTrainerAreRefusedByName) {
  const fs::path hf = dir_ / "hf_out" / "checkpoint-1000";
  fs::create_directories(hf);
  fs::copy_file(
      fs::path(ZT_SOURCE_DIR) / "tests/data/hub_metadata/trainer_states/mistral-7b-translator-checkpoint-1000.json",
      hf / "trainer_state.json");
  for (const char* file : {"adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "scheduler.pt",
                           "rng_state.pth", "training_args.bin"})
    std::ofstream(hf / file) << "x";
  for (const std::string& argument : {hf.string(), std::string("true")})
    testing::expect_mentions(
        testing::error_of([&] { resolve_resume_checkpoint(argument, (dir_ / "hf_out").string()); }),
        {hf.string().c_str(), "HF's Trainer", "optimizer.pt", "zerotune_state.json", "--merge_lora",
         "--model_name_or_path"});
  const std::string path = save_checkpoint(dir_.string(), 3, contents(3));
  fs::remove(fs::path(path) / "zerotune_state.json");
  testing::expect_mentions(testing::error_of([&] { resolve_resume_checkpoint(path, dir_.string()); }),
                           {path.c_str(), "no zerotune_state.json", "incomplete"});
}

}  // namespace
}  // namespace zt::train
