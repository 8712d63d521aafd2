// The memory estimate (train/memory_estimate.h): Qwen2.5-0.5B's model states, activations and
// loss worked out by hand; the shape of the table (stages shrink the GPU's share, offload
// moves it to the host); and the estimate against the buffers the optimizers really hold,
// on in-process ranks for every architecture's tiny model.
#include <gtest/gtest.h>

#include <mutex>

#include "distributed/communicators/inprocess_communicator.h"
#include "models/config/config_presets.h"
#include "models/peft/lora.h"
#include "runtime/error.h"
#include "train/memory_estimate.h"
#include "train/zero/zero3_optimizer.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train {
namespace {

using namespace std::chrono_literals;

// Qwen2.5-0.5B's config.json (REFERENCE.md "Model and tokenizer facts").
models::ModelConfig qwen25_05b() {
  return models::parse_config(nlohmann::ordered_json::parse(R"({"model_type": "qwen2", "hidden_size": 896,
    "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
    "vocab_size": 151936, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true,
    "use_sliding_window": false, "torch_dtype": "bfloat16"})"),
                              "Qwen2.5-0.5B config.json");
}

// Ψ: embedding 151936·896 (tied to the head) + 24 layers of 14,912,384 + the final norm.
constexpr std::int64_t kPsi = 494'032'768;

MemorySettings eight_gpus(int stage, bool offload = false) {
  return {.stage = stage, .offload = offload, .gpus_per_node = 8, .micro_batch = 1, .max_length = 1024};
}

TEST(MemoryEstimate, Qwen25HalfBillionModelStatesByHand) {
  const models::ModelConfig config = qwen25_05b();
  struct Expected {
    int stage;
    std::int64_t parameters, gradients, optimizer_state, transient;
  };
  // N = 8 divides Ψ, and the 5e8-element bucket holds the whole model: no padding, and one
  // bucket of Ψ bf16 gradients staged at a time (with its chunk when reduce-scattered).
  constexpr std::int64_t kEmbedding = 151936LL * 896;
  const Expected expected[] = {
      {0, 2 * kPsi, 4 * kPsi, 12 * kPsi, 2 * kPsi},  // replicated
      // Stages 1 and 2 keep bf16 gradients (DeepSpeed's default grad_accum_dtype).
      {1, 2 * kPsi, 2 * kPsi + 2 * kPsi / 8, 12 * kPsi / 8, 2 * kPsi + 2 * kPsi / 8},  // full gradients + owned slice
      {2, 2 * kPsi, 2 * kPsi / 8, 12 * kPsi / 8, 2 * kPsi + 2 * kPsi / 8},             // owned slice only
      // Shards of the matrices; biases and norms (71,552 elements, under 100,000 each) whole.
      // Gathered: two embeddings (the largest module); its bf16 gradient bucket and chunk.
      {3, 2 * ((kPsi - 71'552) / 8 + 71'552), 4 * kPsi / 8, 12 * kPsi / 8,
       4 * kEmbedding + 2 * kEmbedding + 2 * kEmbedding / 8},
  };
  for (const Expected& e : expected) {
    const MemoryEstimate estimate = estimate_memory(config, eight_gpus(e.stage));
    EXPECT_EQ(estimate.model_parameters, kPsi);
    EXPECT_EQ(estimate.gpu.parameters, e.parameters) << "stage " << e.stage;
    EXPECT_EQ(estimate.gpu.gradients, e.gradients) << "stage " << e.stage;
    EXPECT_EQ(estimate.gpu.optimizer_state, e.optimizer_state) << "stage " << e.stage;
    EXPECT_EQ(estimate.host.total(), 0) << "stage " << e.stage;
    EXPECT_EQ(estimate.transient, e.transient) << "stage " << e.stage;
  }
}

// Stage 2 holds 2Ψ + 14Ψ/N (bf16 gradients) plus two buckets of reduce_bucket_size, which
// bounds the staging whatever the model's size; an fp32 communication_data_type doubles the
// buckets only.
TEST(MemoryEstimate, Stage2GradientsAreThePartitionPlusTwoBoundedBuckets) {
  MemorySettings settings = eight_gpus(2);
  settings.reduce_bucket_size = 896 * 896;  // HF's "auto": hidden²
  const MemoryEstimate e = estimate_memory(qwen25_05b(), settings);
  // Each of the few hundred buckets pads to a multiple of 8: at most 7 elements of 14 bytes.
  EXPECT_GE(e.gpu.total(), 2 * kPsi + 14 * kPsi / 8);
  EXPECT_LE(e.gpu.total(), 2 * kPsi + 14 * kPsi / 8 + 14 * 7 * 1000);
  // The largest bucket is the embedding alone (a parameter is never split), the next a few
  // layers' worth of hidden² elements at most.
  constexpr std::int64_t kEmbedding = 151936LL * 896;
  EXPECT_GE(e.transient, 2 * (kEmbedding + kEmbedding / 8));
  EXPECT_LE(e.transient, 2 * (kEmbedding + kEmbedding / 8 + 3 * 896 * 896 + 4864 * 896));
  settings.communication_dtype = DType::kF32;
  EXPECT_EQ(estimate_memory(qwen25_05b(), settings).transient, 2 * e.transient);
  EXPECT_EQ(estimate_memory(qwen25_05b(), settings).gpu.gradients, e.gpu.gradients);
}

// The gradients of stages 1 and 2 are in grad_accum_dtype (unset: the working dtype), as
// DeepSpeed keeps them: with Ψ = Ψt (full fine-tuning, no padding at N = 8), stage 2 holds
// 2Ψ + 2Ψ/N + 12Ψ/N and stage 1 2Ψ + 2Ψ + 2Ψ/N + 12Ψ/N (whole gradients until the boundary,
// and the partition they are reduced into); "fp32" gives 2Ψ + 16Ψ/N and 2Ψ + 4Ψ + 16Ψ/N.
// Stages 0 and 3, one GPU and optimizer offload keep fp32 gradients whatever it says.
TEST(MemoryEstimate, Stages1And2CountTheirGradientsInGradAccumDtype) {
  constexpr std::int64_t n = 8;
  for (const auto accumulation : {std::optional<DType>{}, std::optional<DType>{DType::kBF16}}) {
    MemorySettings two = eight_gpus(2), one = eight_gpus(1);
    two.grad_accum_dtype = one.grad_accum_dtype = accumulation;
    EXPECT_EQ(estimate_model_states(qwen25_05b(), two).gpu.total(), 2 * kPsi + 2 * kPsi / n + 12 * kPsi / n);
    EXPECT_EQ(estimate_model_states(qwen25_05b(), one).gpu.total(), 2 * kPsi + 2 * kPsi + 2 * kPsi / n + 12 * kPsi / n);
  }
  MemorySettings two = eight_gpus(2), one = eight_gpus(1);
  two.grad_accum_dtype = one.grad_accum_dtype = DType::kF32;
  EXPECT_EQ(estimate_model_states(qwen25_05b(), two).gpu.total(), 2 * kPsi + 16 * kPsi / n);
  EXPECT_EQ(estimate_model_states(qwen25_05b(), one).gpu.total(), 2 * kPsi + 4 * kPsi + 16 * kPsi / n);
  // fp16 runs keep fp16 gradients the same way.
  MemorySettings fp16 = eight_gpus(2);
  fp16.dtype = DType::kF16;
  EXPECT_EQ(estimate_model_states(qwen25_05b(), fp16).gpu.gradients, 2 * kPsi / n);
  EXPECT_EQ(estimate_model_states(qwen25_05b(), eight_gpus(0)).gpu.gradients, 4 * kPsi);
  EXPECT_EQ(estimate_model_states(qwen25_05b(), eight_gpus(3)).gpu.gradients, 4 * kPsi / n);
  EXPECT_EQ(estimate_model_states(qwen25_05b(), {.stage = 2, .gpus_per_node = 1}).gpu.gradients, 4 * kPsi);
  // Offload: fp32 gradients in host memory (stage 1 its whole bf16 gradients on the GPU); a
  // partial offload keeps them, fp32, on the GPU.
  EXPECT_EQ(estimate_model_states(qwen25_05b(), eight_gpus(2, true)).gpu.gradients, 0);
  EXPECT_EQ(estimate_model_states(qwen25_05b(), eight_gpus(1, true)).gpu.gradients, 2 * kPsi);  // whole, bf16
  MemorySettings partial = eight_gpus(2, true);
  partial.offload_ratio = 0.5;
  EXPECT_EQ(estimate_model_states(qwen25_05b(), partial).gpu.gradients, 4 * kPsi / n);
}

TEST(MemoryEstimate, OneGpuRunsTheSingleDeviceOptimizerWhateverTheStage) {
  for (int stage = 0; stage <= 3; ++stage) {
    const MemoryEstimate e = estimate_model_states(qwen25_05b(), {.stage = stage, .gpus_per_node = 1});
    EXPECT_EQ(e.gpu.total(), 18 * kPsi) << "stage " << stage;  // 2Ψ bf16 + 16Ψ fp32
  }
}

TEST(MemoryEstimate, Qwen25ActivationsAndLossByHand) {
  const models::ModelConfig config = qwen25_05b();
  // Per token and layer: (4·896 + 2·896 + 2·128 + 3·4864) bf16 + (2 norms + 14 heads) fp32.
  const std::int64_t layer = 1024 * (20224 * 2 + 16 * 4);
  const std::int64_t top = 1024 * (2 * 896 * 2 + 4);
  EXPECT_EQ(estimate_memory(config, eight_gpus(2)).activations, 24 * layer + top + layer);
  MemorySettings checkpointed = eight_gpus(2);
  checkpointed.gradient_checkpointing = true;
  EXPECT_EQ(estimate_memory(config, checkpointed).activations, 24 * 1024 * 896 * 2 + top + 2 * layer);
  // Stage 3 recomputes every layer in backward, as checkpointing does.
  EXPECT_EQ(estimate_memory(config, eight_gpus(3)).activations, 24 * 1024 * 896 * 2 + top + 2 * layer);
  // One chunk of bf16 logits (under 1 GiB here; the gradient is written over them), the bf16
  // hidden gradient, the fp32 head gradient.
  EXPECT_EQ(estimate_memory(config, eight_gpus(2)).loss, 1024LL * 151936 * 2 + 1024 * 896 * 2 + 151936LL * 896 * 4);
  // Recomputing, the chunk is gone before backward recomputes a layer: only its excess over
  // that layer's working set (in activations) counts.
  EXPECT_EQ(estimate_memory(config, checkpointed).loss,
            1024LL * 151936 * 2 - 2 * layer + 1024 * 896 * 2 + 151936LL * 896 * 4);
  MemorySettings long_batch = eight_gpus(2);
  long_batch.micro_batch = 8;
  long_batch.max_length = 4096;
  EXPECT_EQ(estimate_memory(config, long_batch).loss, (1LL << 30) + 32768LL * 896 * 2 + 151936LL * 896 * 4);
}

// Among the configurations that run (offload needs stage 1 or more).
TEST(MemoryEstimate, HigherStagesHoldLessPerGpu) {
  const models::ModelConfig config = qwen25_05b();
  for (bool offload : {false, true})
    for (int stage = offload ? 2 : 1; stage <= 3; ++stage)
      EXPECT_LE(estimate_memory(config, eight_gpus(stage, offload)).gpu_total(),
                estimate_memory(config, eight_gpus(stage - 1, offload)).gpu_total())
          << "stage " << stage << (offload ? " with offload" : "");
}

TEST(MemoryEstimate, OffloadMovesTheOwnedStatesToTheHost) {
  const models::ModelConfig config = qwen25_05b();
  for (int stage = 0; stage <= 3; ++stage) {
    const MemoryEstimate kept = estimate_memory(config, eight_gpus(stage));
    const MemoryEstimate offloaded = estimate_memory(config, eight_gpus(stage, true));
    const std::int64_t owned = stage == 0 ? kPsi : kPsi / 8;
    // Master, moments and the gradient partition leave the GPU, as under DeepSpeed. Kept, the
    // partition of stages 1 and 2 is bf16; stage 1's whole gradients stay bf16 on the GPU either way.
    const std::int64_t partition_width = stage == 1 || stage == 2 ? 2 : 4;
    EXPECT_EQ(kept.gpu.total() - offloaded.gpu.total(), (12 + partition_width) * owned) << "stage " << stage;
    EXPECT_EQ(offloaded.gpu.gradients, stage == 1 ? 2 * kPsi : 0) << "stage 1 accumulates whole gradients";
    // Master and moments, the fp32 gradient and a copy of the bf16 working weights.
    EXPECT_EQ(offloaded.host.total(), 18 * owned) << "stage " << stage;
    EXPECT_EQ(offloaded.host_per_node(), 8 * 18 * owned) << "stage " << stage;
    EXPECT_EQ(offloaded.gpu.optimizer_state, 0) << "stage " << stage;
  }
}

// grad_accum_dtype fp32 makes stage 1's whole gradients fp32 too, offloaded or not.
TEST(MemoryEstimate, Fp32AccumulationWidensStageOnesWholeGradients) {
  const models::ModelConfig config = qwen25_05b();
  for (bool offload : {false, true}) {
    MemorySettings wide = eight_gpus(1, offload);
    wide.grad_accum_dtype = DType::kF32;
    const std::int64_t owned = kPsi / 8;
    EXPECT_EQ(estimate_memory(config, wide).gpu.gradients,
              estimate_memory(config, eight_gpus(1, offload)).gpu.gradients + 2 * kPsi + (offload ? 0 : 2 * owned))
        << (offload ? "offloaded" : "kept");
  }
}

TEST(MemoryEstimate, LoraTrainsOnlyItsMatrices) {
  const models::ModelConfig config = qwen25_05b();
  // r·(in + out) per adapted projection: q 896+896, k and v 896+128, o 896+896.
  const std::vector<std::int64_t> numels = lora_trainable_numels(config, 8, "q_proj,k_proj,v_proj,o_proj");
  std::int64_t trainable = 0;
  for (std::int64_t n : numels) trainable += n;
  EXPECT_EQ(trainable, 24 * 8 * (1792 + 1024 + 1024 + 1792));
  MemorySettings lora = eight_gpus(0);
  lora.trainable_numels = numels;
  const MemoryEstimate e = estimate_memory(config, lora);
  EXPECT_EQ(e.gpu.parameters, 2 * (kPsi + trainable));
  EXPECT_EQ(e.gpu.optimizer_state, 12 * trainable);
  EXPECT_LT(e.loss, estimate_memory(config, eight_gpus(0)).loss);  // no LM-head gradient
  EXPECT_THROW(lora_trainable_numels(config, 8, "no_such_proj"), Error);
}

// The stage comes from the estimate's own rows or a DeepSpeed config, whose reader checks it.
TEST(MemoryEstimate, RefusesSettingsThatDoNotExist) {
  EXPECT_THROW(estimate_memory(qwen25_05b(), {.gpus_per_node = 0}), Error);
}

// Within 5% per category, as the issue asks of the estimate against what the trainer holds.
void expect_within_5_percent(std::int64_t estimated, std::int64_t held, const std::string& what) {
  EXPECT_NEAR(static_cast<double>(estimated), static_cast<double>(held), 0.05 * static_cast<double>(held)) << what;
}

std::vector<TrainableParameter> trainable_of(const models::CausalLM& model) {
  std::vector<TrainableParameter> trainable;
  for (const auto& [name, variable] : model.named_parameters()) trainable.push_back({name, variable, true});
  return trainable;
}

class HeldByTheOptimizer : public ::testing::TestWithParam<models::Architecture> {};

TEST_P(HeldByTheOptimizer, MatchesTheEstimateOnEveryStage) {
  const models::ModelConfig config = models::parse_config(models::tiny_config_json(GetParam()), "tiny config.json");
  constexpr int kWorld = 3;
  constexpr std::int64_t kBucket = 700;  // several buckets, each padded to a multiple of 3
  for (int stage = 0; stage <= 2; ++stage) {
    const MemorySettings settings{
        .stage = stage, .gpus_per_node = kWorld, .dtype = DType::kF32, .reduce_bucket_size = kBucket};
    const ModelStateBytes estimated = estimate_model_states(config, settings).gpu;
    std::mutex mutex;
    std::vector<ModelStateBytes> held(kWorld);
    std::vector<std::int64_t> state_numel(kWorld);
    distributed::run_inprocess_ranks(kWorld, 10s, [&](distributed::Communicator& comm) {
      models::CausalLM model(config, {.dtype = DType::kF32});
      ZeroOptimizer optimizer(trainable_of(model), OptimizerConfig{}, comm, stage, kBucket);
      std::lock_guard<std::mutex> lock(mutex);
      held[comm.rank()] = held_model_states(optimizer, model.num_parameters() * 4).gpu;
      state_numel[comm.rank()] = optimizer.state_numel();
    });
    for (int rank = 0; rank < kWorld; ++rank) {
      const std::string what = "stage " + std::to_string(stage) + " rank " + std::to_string(rank);
      expect_within_5_percent(estimated.parameters, held[rank].parameters, what + " parameters");
      expect_within_5_percent(estimated.gradients, held[rank].gradients, what + " gradients");
      expect_within_5_percent(estimated.optimizer_state, held[rank].optimizer_state, what + " optimizer state");
      // The optimizer's own count: master, moments and owned gradient (16 bytes an owned
      // element), plus stage 1's full gradients.
      const std::int64_t counted =
          stage == 1 ? estimated.optimizer_state + estimated.gradients : estimated.optimizer_state / 3 * 4;
      expect_within_5_percent(counted, 4 * state_numel[rank], what + " state_numel");
    }
  }
  models::CausalLM model(config, {.dtype = DType::kF32});
  Optimizer single(trainable_of(model), OptimizerConfig{});
  const HeldModelStates one = held_model_states(single, model.num_parameters() * 4);
  const MemoryEstimate estimated = estimate_model_states(config, {.gpus_per_node = 1, .dtype = DType::kF32});
  EXPECT_EQ(estimated.gpu.total(), one.gpu.total());
  EXPECT_EQ(one.host.total(), 0);
  EXPECT_EQ(4 * single.numel(), one.gpu.gradients);
}

// Stage 3 on kStage3World ranks as the tests below run it (the tiny model's norms and biases
// whole, buckets of 700 elements), and as the estimate is told of it.
constexpr int kStage3World = 3;
ZeroConfig stage3_on_ranks() {
  ZeroConfig zero;
  zero.stage = 3;
  zero.stage3_param_persistence_threshold = 30;
  zero.reduce_bucket_size = 700;
  return zero;
}
MemorySettings stage3_estimated() {
  return {.stage = 3,
          .gpus_per_node = kStage3World,
          .dtype = DType::kF32,
          .reduce_bucket_size = 700,
          .persistence_threshold = 30};
}

TEST_P(HeldByTheOptimizer, Stage3AndOffloadMatchTheEstimateOnRanks) {
  const models::ModelConfig config = models::parse_config(models::tiny_config_json(GetParam()), "tiny config.json");
  const ZeroConfig zero = stage3_on_ranks();
  MemorySettings settings = stage3_estimated();
  const MemoryEstimate stage3 = estimate_model_states(config, settings);
  settings.offload = true;
  const MemoryEstimate stage3_offloaded = estimate_model_states(config, settings);
  settings.stage = 2;
  settings.offload = true;
  const MemoryEstimate offloaded = estimate_model_states(config, settings);
  std::mutex mutex;
  std::vector<HeldModelStates> held3(kStage3World), held_offload(kStage3World), held3_offload(kStage3World);
  distributed::run_inprocess_ranks(kStage3World, 10s, [&](distributed::Communicator& comm) {
    models::CausalLM model(config, {.dtype = DType::kF32});
    const HeldModelStates offload = [&] {
      ZeroOptimizer optimizer(trainable_of(model), OptimizerConfig{}, comm, 2, 700, {.enabled = true});
      return held_model_states(optimizer, model.num_parameters() * 4);
    }();
    const HeldModelStates offload3 = [&] {
      models::CausalLM partitioned(config, {.dtype = DType::kF32});
      Zero3Optimizer optimizer(partitioned, trainable_of(partitioned), OptimizerConfig{}, comm, zero,
                               {.enabled = true});
      return held_model_states(optimizer, partitioned.num_parameters() * 4);
    }();
    Zero3Optimizer optimizer(model, trainable_of(model), OptimizerConfig{}, comm, zero);
    std::lock_guard<std::mutex> lock(mutex);
    held3_offload[comm.rank()] = offload3;
    held3[comm.rank()] = held_model_states(optimizer, model.num_parameters() * 4);
    held_offload[comm.rank()] = offload;
  });
  for (int rank = 0; rank < kStage3World; ++rank) {
    const std::string what = "rank " + std::to_string(rank);
    expect_within_5_percent(stage3.gpu.parameters, held3[rank].gpu.parameters, what + " stage 3 parameters");
    expect_within_5_percent(stage3.gpu.gradients, held3[rank].gpu.gradients, what + " stage 3 gradients");
    expect_within_5_percent(stage3.gpu.optimizer_state, held3[rank].gpu.optimizer_state, what + " stage 3 optimizer");
    expect_within_5_percent(offloaded.gpu.total(), held_offload[rank].gpu.total(), what + " offload device");
    expect_within_5_percent(offloaded.host.total(), held_offload[rank].host.total(), what + " offload host");
    EXPECT_EQ(held_offload[rank].gpu.optimizer_state, 0) << what;
    expect_within_5_percent(stage3_offloaded.gpu.total(), held3_offload[rank].gpu.total(),
                            what + " stage 3 offload device");
    expect_within_5_percent(stage3_offloaded.host.total(), held3_offload[rank].host.total(),
                            what + " stage 3 offload host");
    EXPECT_EQ(held3_offload[rank].gpu.optimizer_state, 0) << what;
  }
}

// Parameter offload under stage 3: each rank's shard of the working weights moves from the GPU
// to host memory, as estimated and as the optimizer holds it (with optimizer offload too).
TEST_P(HeldByTheOptimizer, ParameterOffloadMatchesTheEstimateOnRanks) {
  const models::ModelConfig config = models::parse_config(models::tiny_config_json(GetParam()), "tiny config.json");
  ZeroConfig zero = stage3_on_ranks();
  zero.offload_param = true;
  MemorySettings settings = stage3_estimated();
  settings.offload = true;
  settings.offload_param = true;
  const MemoryEstimate both = estimate_model_states(config, settings);
  settings.offload_param = false;
  const MemoryEstimate optimizer_only = estimate_model_states(config, settings);
  EXPECT_EQ(both.gpu.parameters + both.host.parameters, optimizer_only.gpu.parameters + optimizer_only.host.parameters);
  EXPECT_LT(both.gpu.parameters, optimizer_only.gpu.parameters / 2) << "the shards are most of the weights";
  std::mutex mutex;
  std::vector<HeldModelStates> held(kStage3World);
  distributed::run_inprocess_ranks(kStage3World, 10s, [&](distributed::Communicator& comm) {
    models::CausalLM model(config, {.dtype = DType::kF32});
    Zero3Optimizer optimizer(model, trainable_of(model), OptimizerConfig{}, comm, zero, {.enabled = true});
    const HeldModelStates states = held_model_states(optimizer, model.num_parameters() * 4);
    std::lock_guard<std::mutex> lock(mutex);
    held[comm.rank()] = states;
  });
  for (int rank = 0; rank < kStage3World; ++rank) {
    const std::string what = "rank " + std::to_string(rank);
    expect_within_5_percent(both.gpu.total(), held[rank].gpu.total(), what + " device");
    expect_within_5_percent(both.host.parameters, held[rank].host.parameters, what + " host parameters");
    expect_within_5_percent(both.host.total(), held[rank].host.total(), what + " host");
  }
}

TEST_P(HeldByTheOptimizer, OffloadMatchesTheEstimateOnOneDevice) {
  const models::ModelConfig config = models::parse_config(models::tiny_config_json(GetParam()), "tiny config.json");
  models::CausalLM model(config, {.dtype = DType::kF32});
  Optimizer offloaded(trainable_of(model), OptimizerConfig{}, {.enabled = true});
  const HeldModelStates held = held_model_states(offloaded, model.num_parameters() * 4);
  const MemoryEstimate estimated =
      estimate_model_states(config, {.offload = true, .gpus_per_node = 1, .dtype = DType::kF32});
  expect_within_5_percent(estimated.gpu.total(), held.gpu.total(), "device");
  expect_within_5_percent(estimated.host.total(), held.host.total(), "host");
  EXPECT_EQ(held.host.total(), offloaded.offload()->host_bytes());
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, HeldByTheOptimizer,
                         ::testing::Values(models::Architecture::kQwen2, models::Architecture::kQwen3,
                                           models::Architecture::kGlm, models::Architecture::kGlm4,
                                           models::Architecture::kChatGlm),
                         [](const auto& info) { return std::string(models::architecture_name(info.param)); });

TEST(HeldByTheOptimizer, LoraMatricesMatchTheEstimate) {
  const models::ModelConfig config =
      models::parse_config(models::tiny_config_json(models::Architecture::kQwen2), "tiny config.json");
  models::CausalLM model(config, {.dtype = DType::kF32});
  models::LoraConfig lora;
  lora.rank = 4;
  lora.target_modules = models::parse_lora_target("q_proj,down_proj", config);
  models::attach_lora(model, lora, 1);
  std::vector<std::int64_t> attached;
  for (const auto& [name, variable] : models::lora_parameters(model)) attached.push_back(variable.data().numel());
  EXPECT_EQ(lora_trainable_numels(config, 4, "q_proj,down_proj"), attached);
}

}  // namespace
}  // namespace zt::train
