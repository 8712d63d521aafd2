// The optimizer state of a checkpoint as each rank writes it (train/checkpoint/optimizer_state_files.h,
// train/checkpoint/checkpoint_ranks.h), on in-process ranks: every rank's file holds exactly the slices
// it holds and no padding; the index describes every parameter; state saved by one world
// size and stage loads whole and bit for bit under others, and from an old single
// optimizer.safetensors; a rank that fails to write fails the save on every rank and leaves
// nothing behind; a missing or damaged rank file is named on load.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "autograd/functions.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "tests/common/optimizer_state_test_util.h"
#include "tests/common/process_test_util.h"
#include "train/checkpoint/optimizer_state_files.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using state_test::engine;
using state_test::kTotal;
using state_test::Model;
using state_test::save;
using state_test::State;

class OptimizerStateFilesTest : public testing::FolderTest {
 protected:
  // Trains one step at `world` ranks and `stage`, saves into dir_, and returns the whole
  // state (state_dict, gathered) it saved.
  State train_and_save(int world, int stage) {
    State saved;
    std::mutex mutex;
    distributed::run_inprocess_ranks(world, 10s, [&](distributed::Communicator& comm) {
      Model model;
      auto optimizer = engine(model, &comm, stage);
      model.backward(comm.rank());
      optimizer->step(1e-2, 1.0, 0.0, 1);
      save(&comm, *optimizer, dir_, stage);
      const State state = optimizer->state_dict();
      std::lock_guard<std::mutex> lock(mutex);
      if (comm.rank() == 0) saved = state;
      held_[comm.rank()] = optimizer->held_state();
    });
    return saved;
  }

  // The whole state after loading checkpoint_dir at `world` ranks and `stage` (0 ranks: one device).
  State load(int world, int stage) const {
    const std::string checkpoint = (dir_ / "checkpoint-5").string();
    if (world == 0) {
      Model model;
      auto optimizer = engine(model, nullptr, 0);
      load_optimizer_state_on_ranks({}, checkpoint, *optimizer, 1);
      return optimizer->state_dict();
    }
    State loaded;
    std::mutex mutex;
    distributed::run_inprocess_ranks(world, 10s, [&](distributed::Communicator& comm) {
      Model model;
      auto optimizer = engine(model, &comm, stage);
      load_optimizer_state_on_ranks({.comm = &comm, .device = Device::cpu(), .zero_stage = stage}, checkpoint,
                                    *optimizer, 1);
      const State state = optimizer->state_dict();
      std::lock_guard<std::mutex> lock(mutex);
      if (comm.rank() == 0) loaded = state;
    });
    return loaded;
  }

  std::map<int, std::vector<StateSlice>> held_;
};

void expect_equal_state(const State& got, const State& expected, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (const auto& [name, value] : expected) {
    ASSERT_TRUE(got.count(name)) << what << ": " << name;
    EXPECT_EQ(got.at(name).to_vector(), value.to_vector()) << what << ": " << name;
  }
}

TEST_F(OptimizerStateFilesTest, EachRankFileHoldsExactlyItsOwnSlices) {
  for (int stage : {1, 2}) {
    fs::remove_all(dir_);
    held_.clear();
    train_and_save(4, stage);
    const fs::path checkpoint = dir_ / "checkpoint-5";
    std::int64_t stored = 0;
    for (int rank = 0; rank < 4; ++rank) {
      const SafetensorsFile file = SafetensorsFile::open((checkpoint / state_file_name(rank, 4)).string());
      std::size_t tensors = 0;
      for (const StateSlice& slice : held_[rank])
        for (auto [suffix, value] : {std::pair{".master", slice.master}, std::pair{".exp_avg", slice.exp_avg},
                                     std::pair{".exp_avg_sq", slice.exp_avg_sq}}) {
          ASSERT_TRUE(file.contains(slice.name + suffix)) << "rank " << rank << " " << slice.name << suffix;
          EXPECT_EQ(file.get(slice.name + suffix).to_vector(), value.to_vector()) << slice.name << suffix;
          EXPECT_EQ(file.info(slice.name + suffix).shape, (Shape{slice.end - slice.begin}));
          ++tensors;
        }
      EXPECT_EQ(file.names().size(), tensors) << "rank " << rank << " stored more than it holds";
      for (const StateSlice& slice : held_[rank]) stored += slice.end - slice.begin;
    }
    EXPECT_EQ(stored, kTotal) << "stage " << stage << ": every element once, no padding";
    std::ifstream in(checkpoint / kOptimizerIndexFile);
    const nlohmann::json index = nlohmann::json::parse(in);
    EXPECT_EQ(index["step"], 1);
    EXPECT_EQ(index["world_size"], 4);
    EXPECT_EQ(index["zero_stage"], stage);
    EXPECT_EQ(index["parameters"]["w"]["shape"], nlohmann::json({3, 5}));
    for (const char* name : {"w", "b", "s"}) {
      std::int64_t covered = 0;
      for (const auto& slice : index["parameters"][name]["slices"]) {
        EXPECT_EQ(slice["begin"], covered) << name;
        covered = slice["end"];
        EXPECT_TRUE(fs::exists(checkpoint / slice["file"].get<std::string>())) << slice.dump();
      }
      EXPECT_EQ(covered, shape_numel(index["parameters"][name]["shape"].get<Shape>())) << name;
    }
  }
}

TEST_F(OptimizerStateFilesTest, StateLoadsBitForBitAtAnyWorldSizeAndStage) {
  const State saved = train_and_save(4, 2);
  expect_equal_state(load(0, 0), saved, "one device");
  expect_equal_state(load(2, 1), saved, "world 2 stage 1");
  expect_equal_state(load(3, 2), saved, "world 3 stage 2");
  expect_equal_state(load(3, 0), saved, "world 3 stage 0");
}

TEST_F(OptimizerStateFilesTest, StageZeroStateIsWrittenOnceByTheMainRank) {
  const State saved = train_and_save(3, 0);
  EXPECT_TRUE(fs::exists(dir_ / "checkpoint-5" / state_file_name(0, 3)));
  EXPECT_FALSE(fs::exists(dir_ / "checkpoint-5" / state_file_name(1, 3)));
  expect_equal_state(load(2, 2), saved, "stage 0 on 3 ranks loaded on 2 at stage 2");
}

TEST_F(OptimizerStateFilesTest, AnOldSingleOptimizerFileStillLoads) {
  const State saved = train_and_save(2, 1);
  const fs::path checkpoint = dir_ / "checkpoint-5";
  NamedTensors whole(saved.begin(), saved.end());
  save_safetensors((checkpoint / kLegacyOptimizerFile).string(), whole);
  fs::remove(checkpoint / kOptimizerIndexFile);
  fs::remove_all(checkpoint / kOptimizerFolder);
  const std::optional<OptimizerStateFiles> files = OptimizerStateFiles::open(checkpoint.string());
  ASSERT_TRUE(files.has_value());
  EXPECT_FALSE(files->step().has_value());
  EXPECT_EQ(files->master("w").to_vector(), saved.at("w.master").to_vector());
  expect_equal_state(load(3, 2), saved, "old file on 3 ranks");
  expect_equal_state(load(0, 0), saved, "old file on one device");
}

}  // namespace
}  // namespace zt::train
