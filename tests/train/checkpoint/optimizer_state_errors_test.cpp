// Optimizer-state checkpoints that go wrong, on in-process ranks: a rank that cannot write its
// file fails the save on every rank, none hangs, and neither the checkpoint nor its hidden
// folder is left; a missing or damaged rank file, a damaged index and files from different
// saves are named on load, on every rank.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "distributed/communicators/inprocess_communicator.h"
#include "tests/common/optimizer_state_test_util.h"
#include "tests/common/process_test_util.h"
#include "train/checkpoint/optimizer_state_files.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using state_test::engine;
using state_test::Model;
using state_test::save;

// An engine whose held state is given; it never steps.
class GivenState : public OptimizerEngine {
 public:
  explicit GivenState(std::vector<StateSlice> slices) : slices_(std::move(slices)) {}
  StepResult step(double, double, double, std::int64_t) override { return {}; }
  void zero_grad() override {}
  std::map<std::string, Tensor> state_dict() const override { return {}; }
  std::vector<StateSlice> held_state() const override { return slices_; }
  void refresh_working_weights() override {}
  HeldBuffers held_buffers() const override { return {}; }

 private:
  std::vector<StateSlice> slices_;
};

class OptimizerStateErrors : public testing::FolderTest {
 protected:
  // Saves one step of training at `world` ranks, ZeRO stage 2.
  void train_and_save(int world) {
    distributed::run_inprocess_ranks(world, 10s, [&](distributed::Communicator& comm) {
      Model model;
      auto optimizer = engine(model, &comm, 2);
      model.backward(comm.rank());
      optimizer->step(1e-2, 1.0, 0.0, 1);
      save(&comm, *optimizer, dir_, 2);
    });
  }

  // Each rank's error when loading checkpoint-5 at `world` ranks, stage 2 ("no error" where none).
  std::vector<std::string> load_errors(int world, std::int64_t step = 1) const {
    std::vector<std::string> errors(static_cast<std::size_t>(world));
    std::mutex mutex;
    distributed::run_inprocess_ranks(world, 10s, [&](distributed::Communicator& comm) {
      Model model;
      auto optimizer = engine(model, &comm, 2);
      const CheckpointRanks ranks{.comm = &comm, .device = Device::cpu(), .zero_stage = 2};
      const std::string error = testing::error_of(
          [&] { load_optimizer_state_on_ranks(ranks, (dir_ / "checkpoint-5").string(), *optimizer, step); });
      std::lock_guard<std::mutex> lock(mutex);
      errors[static_cast<std::size_t>(comm.rank())] = error;
    });
    return errors;
  }

  fs::path checkpoint() const { return dir_ / "checkpoint-5"; }
};

TEST_F(OptimizerStateErrors, AFailedWriteOnOneRankFailsTheSaveOnEveryRank) {
  train_and_save(3);  // an earlier checkpoint-5 that the failed save must leave intact
  std::vector<std::string> errors(3);
  std::mutex mutex;
  const auto start = std::chrono::steady_clock::now();
  distributed::run_inprocess_ranks(3, 60s, [&](distributed::Communicator& comm) {
    const Tensor good = Tensor::zeros({2}, DType::kF32);
    const Tensor bad = comm.rank() == 1 ? Tensor() : good;  // rank 1 cannot write its slice
    const std::string name = comm.rank() == 0 ? "p0" : comm.rank() == 1 ? "p1" : "p2";
    GivenState optimizer({StateSlice{name, {2}, 0, 2, good, bad, good}});
    const std::string error = testing::error_of([&] { save(&comm, optimizer, dir_, 2); });
    std::lock_guard<std::mutex> lock(mutex);
    errors[static_cast<std::size_t>(comm.rank())] = error;
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "a rank waited for the failed one";
  for (const std::string& error : errors)  // whichever rank's error the user reads
    testing::expect_mentions(error, {"rank 1 failed writing the optimizer state of checkpoint-5", "rank-00001-of-00003",
                                     "'p1.exp_avg' is undefined"});
  EXPECT_FALSE(fs::exists(dir_ / ".checkpoint-5.partial"));
  EXPECT_TRUE(fs::exists(checkpoint() / "trainer_state.json"));
  for (const std::string& error : load_errors(3))
    EXPECT_EQ(error, "no error") << "the earlier checkpoint-5 was damaged";
}

TEST_F(OptimizerStateErrors, AMissingRankFileIsNamedOnEveryRank) {
  train_and_save(3);
  const std::string missing = state_file_name(1, 3);
  fs::remove(checkpoint() / missing);
  const std::vector<std::string> errors = load_errors(3);
  for (const std::string& error : errors)
    testing::expect_mentions(
        error, {"rank 1 failed reading the optimizer state", missing.c_str(), "No such file", "incomplete or damaged"});
  for (const std::string& error : load_errors(2)) EXPECT_NE(error, "no error");
}

TEST_F(OptimizerStateErrors, ADamagedRankFileIsNamed) {
  train_and_save(2);
  const std::string damaged = state_file_name(0, 2);
  std::ofstream(checkpoint() / damaged, std::ios::trunc) << "not a safetensors file";
  testing::expect_mentions(load_errors(2)[0], {damaged.c_str(), "incomplete or damaged"});
  // A file whose tensor is shorter than the range the index gives it.
  train_and_save(2);
  const SafetensorsFile file = SafetensorsFile::open((checkpoint() / damaged).string());
  NamedTensors shortened;
  for (const std::string& name : file.names()) {
    const Tensor value = file.get(name).clone();
    shortened.emplace_back(name, value.numel() > 1 ? value.narrow(0, 1, value.numel() - 1).clone() : value);
  }
  save_safetensors((checkpoint() / damaged).string(), shortened, file.metadata());
  testing::expect_mentions(load_errors(2)[0], {damaged.c_str(), "elements, expected", "damaged"});
}

TEST_F(OptimizerStateErrors, ADamagedIndexOrOneOfAnotherSaveIsNamed) {
  train_and_save(2);
  const fs::path index_path = checkpoint() / kOptimizerIndexFile;
  nlohmann::json index = nlohmann::json::parse(std::ifstream(index_path));
  testing::expect_mentions(load_errors(2, 7)[0], {"at step 1", "counts 7 updates", "different saves"});
  index["parameters"]["w"]["slices"].erase(0);
  std::ofstream(index_path, std::ios::trunc) << index.dump();
  testing::expect_mentions(testing::error_of([&] { OptimizerStateFiles::open(checkpoint().string()); }),
                           {kOptimizerIndexFile, "is damaged", "'w'", "elements [0, ", "missing"});
}

}  // namespace
}  // namespace zt::train
