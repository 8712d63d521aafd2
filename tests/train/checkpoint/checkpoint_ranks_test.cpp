// Checkpoints of several ranks, run as users run zerotune: under ZeRO-3 on 3 in-process ranks
// every rank writes its own optimizer state file, and `zerotune export --checkpoint` of that
// checkpoint reads each parameter from the ranks' slices and equals the export of one
// device's checkpoint on the same global batch; an old checkpoint with one
// optimizer.safetensors still resumes, on one device and on two ranks; two processes over
// Gloo (`zerotune launch`) write their files in parallel, and their checkpoint resumes on
// three in-process ranks under ZeRO-3 to the weights the processes reach.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "distributed/communicators/gloo_communicator.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/optimizer_state_test_util.h"
#include "tests/common/process_test_util.h"
#include "train/checkpoint/optimizer_state_files.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using zt::testing::CliRun;

const std::string kSource = ZT_SOURCE_DIR;

class CheckpointRanks : public ::testing::Test {
 protected:
  void SetUp() override { root_ = zt::testing::test_folder("train_checkpoint_ranks_test", true); }

  CliRun zerotune(const std::string& arguments) const { return zt::testing::run_zerotune(arguments, root_); }

  // `zerotune train` of the tiny model for 4 steps, a checkpoint every 2; eps 1e-3 keeps the
  // rounding noise of another summation order from growing into whole Adam steps.
  std::string train_arguments(const std::string& out, const std::string& flags) const {
    return "train --model_name_or_path " + kSource + "/examples/tiny-qwen --train_file " + kSource +
           "/examples/data/alpaca_demo.json --template qwen --finetuning_type full --device cpu --max_steps 4 "
           "--save_steps 2 --learning_rate 1e-2 --adam_epsilon 1e-3 --output_dir " +
           (root_ / out).string() + " " + flags;
  }
  void train(const std::string& out, const std::string& flags) const {
    const CliRun run = zerotune(train_arguments(out, flags));
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }
  void export_checkpoint(const fs::path& checkpoint, const std::string& out) const {
    const CliRun run =
        zerotune("export --checkpoint " + checkpoint.string() + " --output_dir " + (root_ / out).string());
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }

  fs::path root_;
};

// Of two files' tensors, the worst relative difference ‖a − b‖ / ‖b‖, naming the tensor.
std::pair<double, std::string> worst_relative(const fs::path& a, const fs::path& b) {
  const SafetensorsFile x = SafetensorsFile::open(a.string()), y = SafetensorsFile::open(b.string());
  EXPECT_EQ(x.names(), y.names());
  std::pair<double, std::string> worst{0.0, ""};
  for (const std::string& name : y.names()) {
    const std::vector<double> u = x.get(name).to_vector(), v = y.get(name).to_vector();
    double difference = 0.0, norm = 1e-30;
    for (std::size_t i = 0; i < v.size(); ++i) {
      difference += (u.at(i) - v[i]) * (u.at(i) - v[i]);
      norm += v[i] * v[i];
    }
    worst = std::max(worst, {std::sqrt(difference / norm), name});
  }
  return worst;
}

// The index of `checkpoint`, which must describe at least one parameter split over ranks.
nlohmann::json split_index(const fs::path& checkpoint) {
  const nlohmann::json index = nlohmann::json::parse(std::ifstream(checkpoint / kOptimizerIndexFile));
  bool split = false;
  for (const auto& [name, entry] : index["parameters"].items()) split |= entry["slices"].size() > 1;
  EXPECT_TRUE(split) << "no parameter is split over ranks in " << checkpoint;
  return index;
}

TEST_F(CheckpointRanks, ExportOfAZero3CheckpointOfThreeRanksEqualsOneDevicesExport) {
  train("ranks", "--per_device_train_batch_size 2 --inprocess_ranks 3 --deepspeed " + kSource +
                     "/examples/ds_config_zero3.json");
  train("single", "--per_device_train_batch_size 6");
  const fs::path checkpoint = root_ / "ranks/checkpoint-2";
  for (int rank = 0; rank < 3; ++rank) EXPECT_TRUE(fs::exists(checkpoint / state_file_name(rank, 3))) << rank;
  const nlohmann::json index = split_index(checkpoint);
  EXPECT_EQ(index["zero_stage"], 3);
  export_checkpoint(checkpoint, "ranks_export");
  export_checkpoint(root_ / "single/checkpoint-2", "single_export");
  const auto [relative, where] =
      worst_relative(root_ / "ranks_export/model.safetensors", root_ / "single_export/model.safetensors");
  EXPECT_LE(relative, 1e-6) << where;
  // Each exported parameter is exactly its slices, read from the ranks' files by hand.
  const SafetensorsFile exported = SafetensorsFile::open((root_ / "ranks_export/model.safetensors").string());
  for (const auto& [name, entry] : index["parameters"].items()) {
    std::vector<double> assembled;
    for (const auto& slice : entry["slices"]) {
      const SafetensorsFile file = SafetensorsFile::open((checkpoint / slice["file"].get<std::string>()).string());
      const std::vector<double> part = file.get(slice["master"].get<std::string>()).to_vector();
      assembled.insert(assembled.end(), part.begin(), part.end());
    }
    EXPECT_EQ(exported.get(name).to_vector(), assembled) << name;
  }
}

// One process, no launcher, a config of stage 3 with parameter and optimizer offload (as
// LLaMA-Factory's ds_z3_offload_config.json): the ZeRO-3 engine runs over one rank with the
// weights in host memory, says so instead of the one-rank note, and its checkpoint exports to
// what the single-device run gives.
TEST_F(CheckpointRanks, OneProcessWithParameterOffloadRunsStage3AndExports) {
  const fs::path config = root_ / "ds_z3_offload.json";
  std::ofstream(config)
      << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto", "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu", "pin_memory": true},
      "offload_param": {"device": "cpu", "pin_memory": true}}})";
  const CliRun run =
      zerotune(train_arguments("offload", "--per_device_train_batch_size 6 --deepspeed " + config.string()));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("offloaded to host memory (parameters"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("partitions nothing"), std::string::npos) << run.output;
  const fs::path checkpoint = root_ / "offload/checkpoint-2";
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(checkpoint / kOptimizerIndexFile))["zero_stage"], 3);
  train("single", "--per_device_train_batch_size 6");
  export_checkpoint(checkpoint, "offload_export");
  export_checkpoint(root_ / "single/checkpoint-2", "single_export");
  const auto [relative, where] =
      worst_relative(root_ / "offload_export/model.safetensors", root_ / "single_export/model.safetensors");
  EXPECT_LE(relative, 1e-6) << where;
}

TEST_F(CheckpointRanks, AnOldSingleOptimizerFileStillResumes) {
  train("straight", "--per_device_train_batch_size 2");
  const fs::path old = root_ / "straight/checkpoint-2";
  state_test::to_single_optimizer_file(old);
  ASSERT_TRUE(fs::exists(old / kLegacyOptimizerFile));
  train("resumed", "--per_device_train_batch_size 2 --resume_from_checkpoint " + old.string());
  const auto [relative, where] =
      worst_relative(root_ / "resumed/model.safetensors", root_ / "straight/model.safetensors");
  EXPECT_EQ(relative, 0.0) << where << ": one device resumes bit for bit";
  train("resumed_ranks", "--per_device_train_batch_size 1 --inprocess_ranks 2 --deepspeed " + kSource +
                             "/examples/ds_config_zero2.json --resume_from_checkpoint " + old.string());
  const auto [ranks_relative, ranks_where] =
      worst_relative(root_ / "resumed_ranks/model.safetensors", root_ / "straight/model.safetensors");
  EXPECT_LE(ranks_relative, 1e-6) << ranks_where;
  EXPECT_TRUE(fs::exists(root_ / "resumed_ranks/checkpoint-4" / state_file_name(1, 2)))
      << "the resumed run saves in the per-rank layout";
}

TEST_F(CheckpointRanks, GlooProcessesWriteTheirFilesAndResumeOnOtherRanks) {
  if (!distributed::gloo_available()) GTEST_SKIP() << "zerotune was built without Gloo (libgloo-dev)";
  const std::string zero2 = " --deepspeed " + kSource + "/examples/ds_config_zero2.json --ddp_timeout 30";
  const CliRun launched =
      zerotune("launch --nproc_per_node 2 --master_port " + std::to_string(zt::testing::free_loopback_port()) + " " +
               ZT_BINARY_DIR + "/bin/zerotune " + train_arguments("gloo", "--per_device_train_batch_size 3" + zero2));
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  const fs::path checkpoint = root_ / "gloo/checkpoint-2";
  for (int rank = 0; rank < 2; ++rank) EXPECT_TRUE(fs::exists(checkpoint / state_file_name(rank, 2))) << rank;
  EXPECT_EQ(split_index(checkpoint)["world_size"], 2);
  train("resumed", "--per_device_train_batch_size 2 --inprocess_ranks 3 --deepspeed " + kSource +
                       "/examples/ds_config_zero3.json --resume_from_checkpoint " + checkpoint.string());
  const auto [relative, where] = worst_relative(root_ / "resumed/model.safetensors", root_ / "gloo/model.safetensors");
  EXPECT_LE(relative, 1e-6) << where;
}

}  // namespace
}  // namespace zt::train
