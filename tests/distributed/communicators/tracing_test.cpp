// --zero_trace: the tracing communicator records every collective once, with its op, size
// and label, without changing any result; labels cost nothing untraced; and `zerotune
// train --zero_trace` on the tiny model shows each ZeRO stage's collectives in every rank's file.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "distributed/communicators/collective_label.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "distributed/communicators/tracing_communicator.h"
#include "tests/common/process_test_util.h"

namespace zt::distributed {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::vector<nlohmann::json> read_trace(const fs::path& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

Tensor filled(std::int64_t n, double value) { return Tensor::full({n}, value, DType::kF32); }

TEST(TracingCommunicator, TracesEveryCollectiveOnceWithItsOpSizeAndLabel) {
  const fs::path folder = testing::test_folder("distributed_tracing", true);
  const auto run_start = std::chrono::steady_clock::now();
  run_inprocess_ranks(2, 5000ms, [&](Communicator& inner) {
    TracingCommunicator comm(inner, (folder / trace_file_name(inner.rank())).string(), run_start);
    const double r = comm.rank();
    Tensor sum = filled(3, r + 1);
    Tensor whole = Tensor::from_values({r, r + 10, r + 20, r + 30}, {4}, DType::kF32);
    Tensor chunk = filled(2, 0), gathered = filled(4, 0), shared = filled(5, r);
    {
      CollectiveLabel label([] { return "sum of ranks"; });
      comm.all_reduce(sum, ReduceOp::kSum);
      CollectiveLabel inner_label([] { return "scatter 7"; });
      comm.reduce_scatter(whole, chunk);
    }
    CollectiveLabel label([] { return "gather"; });
    comm.all_gather(chunk, gathered);
    {
      CollectiveLabel nested([] { return "from rank 1"; });
      comm.broadcast(shared, 1);
    }
    comm.barrier();
    EXPECT_EQ(sum.to_vector(), std::vector<double>(3, 3.0));
    EXPECT_EQ(chunk.to_vector(), (comm.rank() == 0 ? std::vector<double>{1, 21} : std::vector<double>{41, 61}));
    EXPECT_EQ(gathered.to_vector(), (std::vector<double>{1, 21, 41, 61}));
    EXPECT_EQ(shared.to_vector(), std::vector<double>(5, 1.0));
  });
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<nlohmann::json> trace = read_trace(folder / trace_file_name(rank));
    ASSERT_EQ(trace.size(), 5u) << "rank " << rank;
    const std::vector<std::tuple<std::string, std::string, std::int64_t>> expected = {
        {"all_reduce(sum)", "sum of ranks", 3},
        {"reduce_scatter", "scatter 7", 4},
        {"all_gather", "gather", 2},
        {"broadcast", "from rank 1", 5},
        {"barrier", "gather", 0}};  // the outer label again once the nested one ended
    std::int64_t previous_start = -1;
    for (std::size_t i = 0; i < trace.size(); ++i) {
      const auto& [op, label, elements] = expected[i];
      EXPECT_EQ(trace[i]["rank"], rank);
      EXPECT_EQ(trace[i]["op"], op);
      EXPECT_EQ(trace[i]["label"], label) << op;
      EXPECT_EQ(trace[i]["elements"], elements) << op;
      EXPECT_EQ(trace[i]["bytes"], elements * 4) << op;
      EXPECT_EQ(trace[i]["dtype"], elements ? "float32" : "") << op;
      EXPECT_GE(trace[i]["host_us"].get<std::int64_t>(), 0);
      EXPECT_GE(trace[i]["start_us"].get<std::int64_t>(), previous_start) << op << " starts before the one before";
      previous_start = trace[i]["start_us"];
    }
  }
}

TEST(TracingCommunicator, LabelsAreOnlyDescribedWhenTraced) {
  std::atomic<int> described = 0;
  run_inprocess_ranks(2, 5000ms, [&](Communicator& comm) {
    CollectiveLabel label([&] { return "counted " + std::to_string(++described); });
    comm.barrier();
  });
  EXPECT_EQ(described, 0);
  EXPECT_EQ(CollectiveLabelScope::current(), "") << "a label outlived its scope";
}

TEST(TracingCommunicator, UnwritableTraceFileIsRefusedByName) {
  const fs::path folder = testing::test_folder("distributed_tracing", true);
  std::ofstream(folder / "a_file") << "not a folder";
  const std::string path = (folder / "a_file" / "trace.jsonl").string();
  run_inprocess_ranks(1, 5000ms, [&](Communicator& inner) {
    try {
      TracingCommunicator comm(inner, path, std::chrono::steady_clock::now());
      ADD_FAILURE() << "a trace under a regular file was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("a_file"), std::string::npos) << e.what();
    }
  });
}

// `zerotune train --inprocess_ranks 2 --zero_trace` on the tiny model under a shipped ds_config;
// returns each rank's trace.
std::vector<std::vector<nlohmann::json>> train_traced(const std::string& ds_config, const std::string& extra = "") {
  const fs::path folder = testing::test_folder("distributed_tracing", true);
  const fs::path source(ZT_SOURCE_DIR);
  const std::string arguments =
      "train --model_name_or_path " + (source / "examples/tiny-qwen").string() + " --train_file " +
      (source / "examples/data/alpaca_demo.json").string() +
      " --finetuning_type full --template qwen --max_steps 1 --per_device_train_batch_size 2 --save_strategy no"
      " --device cpu --inprocess_ranks 2 --zero_trace --deepspeed " +
      (source / "examples" / ds_config).string() + " --output_dir " + (folder / "out").string() + extra;
  const testing::CliRun run = testing::run_zerotune(arguments, folder);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("] trace reduce_scatter of "), std::string::npos) << "no trace line on the log";
  return {read_trace(folder / "out" / trace_file_name(0)), read_trace(folder / "out" / trace_file_name(1))};
}

std::set<std::string> labels_of(const std::vector<nlohmann::json>& trace, const std::string& op) {
  std::set<std::string> labels;
  for (const nlohmann::json& line : trace)
    if (line["op"] == op) labels.insert(line["label"].get<std::string>());
  return labels;
}

TEST(ZeroTrace, Stage2ReduceScattersGradientsAndAllGathersWeightsOnEveryRank) {
  for (const std::vector<nlohmann::json>& trace : train_traced("ds_config_zero2.json")) {
    ASSERT_FALSE(trace.empty());
    EXPECT_TRUE(labels_of(trace, "reduce_scatter").count("stage 2 reduce-scatter gradients, bucket 0"));
    EXPECT_TRUE(labels_of(trace, "all_gather").count("stage 2 all-gather updated weights, bucket 0"));
    EXPECT_TRUE(labels_of(trace, "all_reduce(sum)").count("stage 2 all-reduce gradient norm"));
  }
}

TEST(ZeroTrace, Stage3GathersEveryLayer) {
  const nlohmann::json config =
      nlohmann::json::parse(testing::read_text(fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen/config.json"));
  const int layers = config["num_hidden_layers"];
  for (const std::vector<nlohmann::json>& trace : train_traced("ds_config_zero3.json")) {
    const std::set<std::string> gathers = labels_of(trace, "all_gather");
    for (int layer = 0; layer < layers; ++layer)
      EXPECT_TRUE(gathers.count("stage 3 gather layer " + std::to_string(layer))) << "layer " << layer;
    EXPECT_TRUE(gathers.count("stage 3 gather embedding"));
    bool reduce_scattered = false;
    for (const std::string& label : labels_of(trace, "reduce_scatter"))
      reduce_scattered |= label.rfind("stage 3 reduce-scatter gradients, bucket ", 0) == 0;
    EXPECT_TRUE(reduce_scattered);
  }
}

TEST(ZeroTrace, OneRankIsRefusedSayingHowToGetTwo) {
  const fs::path folder = testing::test_folder("distributed_tracing", true);
  const fs::path source(ZT_SOURCE_DIR);
  const testing::CliRun run = testing::run_zerotune(
      "train --model_name_or_path " + (source / "examples/tiny-qwen").string() + " --train_file " +
          (source / "examples/data/alpaca_demo.json").string() +
          " --template qwen --max_steps 1 --device cpu --zero_trace --output_dir " + (folder / "out").string(),
      folder);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("--inprocess_ranks 2"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace zt::distributed
