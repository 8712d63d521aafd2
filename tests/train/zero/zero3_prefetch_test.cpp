// ZeRO-3 prefetch (train/zero/zero3_prefetch.cpp, train/zero/zero3_module_schedule.h) with ranks as
// threads on the CPU: training ends on the same bits with and without prefetch at world sizes
// 2 and 3; --zero_trace labels the gathers started ahead as prefetches; the modules whole at
// once never exceed stage3_max_live_parameters; the schedule follows a pass and stops
// following one that strays.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

#include "autograd/functions.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "distributed/communicators/tracing_communicator.h"
#include "models/weights/weights.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "tests/common/train_log_test_util.h"
#include "train/data/batching.h"
#include "train/finetuning.h"
#include "train/training_job.h"
#include "train/zero/zero3_optimizer.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using models::ModuleKind;
using models::ModuleRef;
using testing::trainable_of;

std::string source(const std::string& path) { return std::string(ZT_SOURCE_DIR) + "/" + path; }

class Zero3Prefetch : public testing::FolderTest {
 protected:
  // `zerotune train` on `ranks` in-process ranks under stage 3 with the given prefetch bucket
  // (0: no prefetch); returns the output folder.
  fs::path train(int ranks, std::int64_t prefetch_bucket, const std::string& name, bool trace = false) const {
    const fs::path out = dir_ / name, ds = dir_ / (name + ".json");
    std::ofstream(ds) << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto", "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100,
        "stage3_prefetch_bucket_size": )"
                      << prefetch_bucket << "}}";
    std::vector<std::string> flags = {"--model_name_or_path",
                                      source("examples/tiny-qwen"),
                                      "--train_file",
                                      source("examples/data/alpaca_demo.json"),
                                      "--template",
                                      "qwen",
                                      "--finetuning_type",
                                      "full",
                                      "--max_steps",
                                      "3",
                                      "--per_device_train_batch_size",
                                      "2",
                                      "--gradient_accumulation_steps",
                                      "2",
                                      "--max_grad_norm",
                                      "0.5",
                                      "--save_strategy",
                                      "no",
                                      "--device",
                                      "cpu",
                                      "--logging_steps",
                                      "1",
                                      "--inprocess_ranks",
                                      std::to_string(ranks),
                                      "--deepspeed",
                                      ds.string(),
                                      "--output_dir",
                                      out.string()};
    if (trace) flags.push_back("--zero_trace");
    run_training_job(parse_training_arguments(flags));
    return out;
  }
};

TEST_F(Zero3Prefetch, EndsOnTheSameBitsAsWithoutPrefetch) {
  for (int ranks : {2, 3}) {
    const std::string world = std::to_string(ranks);
    const fs::path plain = train(ranks, 0, "plain" + world);
    // 1: only the next module ahead; 1e9: as far as the pass goes.
    for (std::int64_t bucket : {std::int64_t{1}, std::int64_t{1'000'000'000}}) {
      const fs::path prefetched = train(ranks, bucket, "prefetch" + world + "_" + std::to_string(bucket));
      const SafetensorsFile got = SafetensorsFile::open((prefetched / "model.safetensors").string());
      const SafetensorsFile expected = SafetensorsFile::open((plain / "model.safetensors").string());
      ASSERT_EQ(got.names(), expected.names());
      for (const std::string& name : expected.names())
        EXPECT_EQ(max_abs_diff(got.get(name), expected.get(name)), 0.0)
            << name << " ranks " << ranks << " bucket " << bucket;
      EXPECT_EQ(testing::logged_values(prefetched, "loss"), testing::logged_values(plain, "loss")) << "ranks " << ranks;
      EXPECT_EQ(testing::logged_values(plain, "loss").size(), 3u);
    }
  }
}

// The trace names a gather started ahead "stage 3 prefetch <module>"; the first micro-batch
// only records the order, so its gathers are all plain ones.
TEST_F(Zero3Prefetch, TheTraceLabelsPrefetches) {
  const fs::path out = train(2, 1'000'000'000, "traced", true);
  std::ifstream in(out / distributed::trace_file_name(0));
  int prefetches = 0, gathers = 0;
  bool prefetch_of_a_layer = false;
  for (std::string line; std::getline(in, line);) {
    const std::string label = nlohmann::json::parse(line)["label"].get<std::string>();
    prefetches += label.starts_with("stage 3 prefetch ");
    gathers += label.starts_with("stage 3 gather ");
    prefetch_of_a_layer |= label.starts_with("stage 3 prefetch layer ");
  }
  EXPECT_GT(prefetches, 0);
  EXPECT_GT(gathers, 0);
  EXPECT_TRUE(prefetch_of_a_layer);
}

// One micro-batch's forward and backward, as the trainer runs it, inside a pass.
void train_pass(models::CausalLM& model, Zero3Partitioner& partitioner, const PackedBatch& batch) {
  auto ids = [](const std::vector<std::int32_t>& v, DType dtype) {
    return Tensor::from_values(std::vector<double>(v.begin(), v.end()), {static_cast<std::int64_t>(v.size())}, dtype);
  };
  partitioner.begin_pass();
  autograd::Variable hidden = model.forward_hidden(ids(batch.input_ids, DType::kI64), ids(batch.positions, DType::kI64),
                                                   ids(batch.cu_seqlens, DType::kI32));
  autograd::Variable loss;
  {
    models::GatheredModule head(model.parameter_gatherer(), model.lm_head_module());
    loss = autograd::linear_cross_entropy(hidden, model.lm_head_weight(), ids(batch.labels, DType::kI64),
                                          {.reduction = ops::Reduction::kSum, .ignore_index = -100});
  }
  loss.backward();
  partitioner.end_pass();
}

std::vector<TokenizedSample> samples(std::int32_t vocab) {
  std::vector<TokenizedSample> out;
  for (int s = 0; s < 4; ++s) {
    TokenizedSample sample;
    for (int i = 0; i < 6 + s; ++i) {
      sample.ids.push_back((s * 31 + i * 7) % (vocab - 1) + 1);
      sample.labels.push_back(i < 2 ? -100 : sample.ids.back());
    }
    out.push_back(sample);
  }
  return out;
}

// Three passes under each stage3_max_live_parameters: the counter of elements whole at once
// (in use plus fetched ahead) never goes past the limit, except by a module in use alone; with
// room for two of the largest module, prefetches happen and every one is used.
TEST(Zero3PrefetchLimits, TheLiveParameterBoundHolds) {
  distributed::run_inprocess_ranks(2, 60s, [&](distributed::Communicator& comm) {
    std::int64_t largest = 0;
    const PackedBatch batch = pack(samples(503), {static_cast<std::size_t>(comm.rank()), 2});
    for (const std::int64_t factor : {1, 2, 3, 1 << 20}) {
      auto model = models::load_model(source("tests/data/models/glm"));
      const std::vector<TrainableParameter> trainable = trainable_of(model);
      if (largest == 0) {  // the largest module, measured by a partitioner of another copy
        auto probe = models::load_model(source("tests/data/models/glm"));
        largest = Zero3Partitioner(probe, trainable_of(probe), comm, 0).largest_module_numel();
      }
      const std::int64_t max_live = factor * largest + (factor == 3 ? 7 : 0);
      Zero3Partitioner partitioner(model, trainable, comm, 0,
                                   {.bucket_numel = 1'000'000'000, .max_live_numel = max_live});
      for (int pass = 0; pass < 3; ++pass) train_pass(model, partitioner, batch);
      const PrefetchCounters& counters = partitioner.prefetch_counters();
      EXPECT_LE(counters.most_live_numel, std::max(max_live, largest)) << "max_live " << max_live;
      EXPECT_EQ(counters.used_groups, counters.prefetched_groups) << "max_live " << max_live;
      if (max_live >= 2 * largest) {
        EXPECT_GT(counters.prefetched_groups, 0) << "max_live " << max_live;
      }
      if (max_live == largest) {
        EXPECT_LE(counters.most_live_numel, largest);
      }
      for (const auto& p : partitioner.parameters()) {
        if (!p.persistent) {
          EXPECT_EQ(p.variable.data().numel(), 0) << p.name << " after the passes";
        }
      }
      for (const auto& group : partitioner.groups()) EXPECT_FALSE(group.prefetched.defined());
    }
  });
}

TEST(ModuleSchedule, FollowsThePreviousPassAndStopsWhereAPassStrays) {
  const ModuleRef embedding{ModuleKind::kEmbedding}, layer0{ModuleKind::kLayer, 0}, layer1{ModuleKind::kLayer, 1},
      head{ModuleKind::kLmHead};
  ModuleSchedule schedule;
  EXPECT_EQ(schedule.observe(embedding), std::nullopt) << "outside a pass";
  schedule.begin_pass();
  for (const ModuleRef& m : {embedding, layer0, layer1, head, layer1, layer0})
    EXPECT_EQ(schedule.observe(m), std::nullopt);
  schedule.end_pass();
  schedule.begin_pass();
  EXPECT_EQ(schedule.observe(embedding), std::optional<std::size_t>(0));
  EXPECT_EQ(schedule.after(0).size(), 5u);
  EXPECT_EQ(schedule.observe(layer0), std::optional<std::size_t>(1));
  EXPECT_TRUE(schedule.after(1).front() == layer1);
  EXPECT_EQ(schedule.observe(head), std::nullopt) << "strayed";
  EXPECT_EQ(schedule.observe(head), std::nullopt) << "and stays off the schedule";
  EXPECT_TRUE(schedule.after(5).empty());
  schedule.end_pass();
}

}  // namespace
}  // namespace zt::train
