// ZeRO-3 parameter offload (offload_param {device: cpu}, train/zero/zero3_param_offload.cpp) on
// the tiny model fixtures, ranks as threads on the CPU: where the shards live makes no
// difference to what is computed, so every run ends bit for bit on the weights and losses of
// stage 3 without it (with optimizer offload too, within zero3_test.cpp's bound); fp16 skips
// the same steps; checkpoints move between offloaded and plain runs; what a rank holds is
// reported in host memory.
#include "distributed/communicators/inprocess_communicator.h"
#include "tests/train/zero/zero3_run_fixture.h"
#include "train/memory_estimate.h"

namespace zt::train {
namespace {

// Full fine-tuning and LoRA at world sizes 1-3, with accumulation and clipping: the shards in
// host memory give the same losses and weights as on the device, bit for bit; with optimizer
// offload as well, the weights of optimizer offload alone.
TEST_F(Zero3, ParameterOffloadEndsOnTheWeightsWithoutIt) {
  for (const std::string method : {"full", "lora"}) {
    for (int world : {1, 2, 3}) {
      Spec run = accumulated_clipped(method, world);
      run.steps = 3;
      expect_parameter_offload_changes_nothing(run, method + "_" + std::to_string(world));
    }
  }
}

// Partial optimizer offload (ratio 0.5: about half of each rank's partition on the CPU Adam,
// the rest updated on the device beside it), with and without parameter offload, full and
// LoRA at world sizes 1 and 2: the weights of stage 3 without offload.
TEST_F(Zero3, PartialOptimizerOffloadEndsOnTheWeightsWithoutIt) {
  for (const std::string method : {"full", "lora"}) {
    for (int world : {1, 2}) {
      Spec run = accumulated_clipped(method, world);
      run.steps = 3;
      const std::string name = method + "_" + std::to_string(world);
      const Weights plain = train(run, name + "_plain");
      run.offload = true;
      run.offload_ratio = 0.5;
      expect_same_weights(train(run, name + "_partial"), plain, run.label());
      run.offload_param = true;
      expect_same_weights(train(run, name + "_partial_param"), plain, run.label());
    }
  }
}

// Under fp16 every rank skips the steps stage 3 without parameter offload skips.
TEST_F(Zero3, ParameterOffloadSkipsTheSameFp16Overflows) {
  expect_offload_skips_the_same_fp16_overflows(&Spec::offload_param, 0.0);
}

// A checkpoint of an offloaded run resumes in a plain one and the other way round (at another
// world size, with LoRA too): its files are those of any stage-3 run, and the resumed run
// ends where one device does without interruption.
TEST_F(Zero3, ParameterOffloadCheckpointsMoveToAndFromPlainRuns) {
  struct Move {
    std::string method;
    int from_world, to_world;
    bool from_offload, to_offload;
  };
  for (const Move& move : {Move{"full", 2, 3, true, false}, Move{"lora", 3, 2, false, true}}) {
    Spec writer = checkpoint_writer(move.method).on_ranks(move.from_world);
    writer.offload_param = move.from_offload;
    const std::string name = "writer_" + move.method + std::to_string(move.from_world);
    train(writer, name);
    Spec reader = writer.on_ranks(move.to_world);
    reader.offload_param = move.to_offload;
    reader.offload = move.to_offload;
    expect_resume_matches_uninterrupted(writer, reader, name);
  }
}

// The shards are what a rank holds in host memory, the device keeps only the parameters kept
// whole, and each gather copies one shard to the device.
TEST(Zero3ParameterOffload, ShardsAreHeldInHostMemoryAndCopiedForEachGather) {
  constexpr int kWorld = 2;
  std::mutex mutex;
  std::vector<HeldModelStates> plain(kWorld), offloaded(kWorld);
  std::vector<ParameterOffloadCounters> copied(kWorld);
  std::vector<std::int64_t> shard_bytes(kWorld), layer_shard_bytes(kWorld);
  distributed::run_inprocess_ranks(kWorld, 30s, [&](distributed::Communicator& comm) {
    auto model = models::load_model(fixture_dir("qwen2"));
    ZeroConfig zero;
    zero.stage = 3;
    zero.stage3_param_persistence_threshold = 100;
    const HeldModelStates held_plain = [&] {
      auto copy = models::load_model(fixture_dir("qwen2"));
      Zero3Optimizer optimizer(copy, trainable_of(copy), OptimizerConfig{}, comm, zero);
      return held_model_states(optimizer, copy.num_parameters() * 4);
    }();
    zero.offload_param = true;
    Zero3Optimizer optimizer(model, trainable_of(model), OptimizerConfig{}, comm, zero);
    Zero3Partitioner& partitioner = optimizer.partitioner();
    const models::ModuleRef layer{models::ModuleKind::kLayer, 0};
    for (int use = 0; use < 2; ++use) {
      partitioner.gather(layer);
      partitioner.release(layer);
    }
    std::int64_t layer_bytes = 0;
    for (std::size_t g = 0; g < partitioner.groups().size(); ++g)
      if (partitioner.groups()[g].module == layer)
        layer_bytes += static_cast<std::int64_t>(partitioner.shard(g).nbytes());
    std::lock_guard<std::mutex> lock(mutex);
    layer_shard_bytes[comm.rank()] = layer_bytes;
    plain[comm.rank()] = held_plain;
    offloaded[comm.rank()] = held_model_states(optimizer, model.num_parameters() * 4);
    copied[comm.rank()] = partitioner.offload_counters();
    shard_bytes[comm.rank()] = partitioner.host_shard_bytes();
  });
  for (int rank = 0; rank < kWorld; ++rank) {
    const std::string what = "rank " + std::to_string(rank);
    ASSERT_GT(shard_bytes[rank], 0) << what;
    EXPECT_EQ(offloaded[rank].host.parameters, shard_bytes[rank]) << what;
    EXPECT_EQ(offloaded[rank].gpu.parameters + shard_bytes[rank], plain[rank].gpu.parameters) << what;
    EXPECT_EQ(plain[rank].host.total(), 0) << what;
    EXPECT_EQ(offloaded[rank].gpu.optimizer_state, plain[rank].gpu.optimizer_state) << what;
    ASSERT_GT(layer_shard_bytes[rank], 0) << what;
    EXPECT_EQ(copied[rank].bytes, 2 * layer_shard_bytes[rank]) << what << ": layer 0's shards, once per gather";
    EXPECT_GE(copied[rank].copies, 2) << what;
  }
}

}  // namespace
}  // namespace zt::train
