// The model's own consistency on tiny random models of every architecture, in float64:
// gradients against finite differences, a packed batch against its sequences one by one,
// the KV-cache path against full recomputation, checkpointed against plain backward, the
// projections allocated together against separate ones, the MLP trained as one op that keeps no
// SwiGLU product, and clear errors for malformed batches.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "models/batch.h"
#include "models/config/config_presets.h"
#include "models/init.h"
#include "models/reference/generate.h"
#include "models/reference/sequence_kv_cache.h"
#include "tests/common/op_test_util.h"

namespace zt::models {
namespace {

using autograd::Variable;
using testing::error_of;
using testing::expect_mentions;

// Parameters of every kind drawn away from their initial values (norms 1, biases 0), so a
// misplaced bias or norm weight changes the result.
CausalLM random_model(Architecture arch, std::uint64_t seed, DType dtype = DType::kF64) {
  CausalLM model = init_model(parse_config(tiny_config_json(arch), "tiny"), seed, {.dtype = dtype});
  std::uint64_t offset = 0;
  for (const auto& p : model.named_parameters()) {
    Tensor value = p.variable.data();
    bool is_norm = p.name.find("norm") != std::string::npos;
    Tensor draw = Tensor::normal(value.shape(), seed + 1, offset, is_norm ? 1.0 : 0.0, is_norm ? 0.2 : 0.4, dtype);
    offset += 1 << 16;
    value.copy_from(draw);
  }
  return model;
}

// Three sequences of 5, 1 and 4 tokens, with ignored labels and no padding id (whose
// embedding row gets no gradient from its lookups, by design).
PackedBatch test_batch() {
  return pack_sequences({{3, 7, 13, 11, 30}, {5}, {36, 2, 9, 9}}, {{7, -100, 11, 30, 4}, {-100}, {2, 9, 9, 14}});
}

double loss_value(const CausalLM& model, const PackedBatch& batch) {
  autograd::NoGradGuard no_recording;
  return model.loss(model.forward(batch.input_ids, batch.positions, batch.cu_seqlens), batch.labels).data().item();
}

class ModelArch : public ::testing::TestWithParam<Architecture> {};

TEST_P(ModelArch, GradientsMatchFiniteDifferences) {
  CausalLM model = random_model(GetParam(), 7);
  PackedBatch batch = test_batch();
  model.loss(model.forward(batch.input_ids, batch.positions, batch.cu_seqlens), batch.labels).backward();
  for (const auto& p : model.named_parameters()) {
    Tensor value = p.variable.data();
    ASSERT_TRUE(value.is_contiguous());
    std::vector<double> analytic = p.variable.grad().to_vector();
    const std::int64_t n = value.numel();
    for (std::int64_t i : {std::int64_t{0}, n / 2, n - 1}) {
      double& element = value.data<double>()[i];
      const double original = element, h = 1e-6;
      element = original + h;
      double up = loss_value(model, batch);
      element = original - h;
      double down = loss_value(model, batch);
      element = original;
      double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(analytic[static_cast<std::size_t>(i)], numeric, 1e-6 + 1e-5 * std::abs(numeric))
          << p.name << "[" << i << "]";
    }
  }
}

TEST_P(ModelArch, PackedBatchEqualsSequencesOneByOne) {
  CausalLM model = random_model(GetParam(), 8);
  std::vector<std::vector<std::int64_t>> sequences{{3, 7, 0, 11, 30}, {5}, {36, 2, 9, 9}};
  autograd::NoGradGuard no_recording;
  PackedBatch packed = pack_sequences(sequences);
  std::vector<double> together =
      model.forward(packed.input_ids, packed.positions, packed.cu_seqlens).data().to_vector();
  std::vector<double> apart;
  for (const auto& sequence : sequences) {
    PackedBatch one = pack_sequences({sequence});
    for (double v : model.forward(one.input_ids, one.positions, one.cu_seqlens).data().to_vector()) apart.push_back(v);
  }
  ASSERT_EQ(together.size(), apart.size());
  for (std::size_t i = 0; i < apart.size(); ++i) ASSERT_NEAR(together[i], apart[i], 1e-12) << "logit " << i;
}

TEST_P(ModelArch, CachedStepsEqualFullRecomputation) {
  CausalLM model = random_model(GetParam(), 9);
  const std::vector<std::int64_t> prompt{4, 8, 15, 16, 23};
  GenerationOptions options;
  options.max_new_tokens = 8;
  std::vector<std::int64_t> cached = generate(model, prompt, options);

  autograd::NoGradGuard no_recording;
  std::vector<std::int64_t> sequence = prompt, recomputed;
  for (int step = 0; step < 8; ++step) {
    PackedBatch batch = pack_sequences({sequence});
    Variable logits = model.forward(batch.input_ids, batch.positions, batch.cu_seqlens);
    std::vector<double> last = logits.data().select(0, logits.data().size(0) - 1).to_vector();
    std::int64_t token = std::max_element(last.begin(), last.end()) - last.begin();
    recomputed.push_back(token);
    sequence.push_back(token);
    if (token == 2) break;  // the tiny configs' eos
  }
  EXPECT_EQ(cached, recomputed);

  // Logits, not only choices: the prompt through the cache, then one cached step.
  SequenceKvCache cache(model.config(), 8, DType::kF64, Device::cpu());
  PackedBatch head = pack_sequences({prompt});
  model.forward_hidden(head.input_ids, head.positions, head.cu_seqlens, &cache);
  Tensor step_ids = Tensor::from_values({42 % 37}, {1}, DType::kI64);
  Tensor step_position = Tensor::from_values({5}, {1}, DType::kI64);
  Tensor step_cu = Tensor::from_values({0, 1}, {2}, DType::kI32);
  Variable step = model.lm_head(model.forward_hidden(step_ids, step_position, step_cu, &cache));
  std::vector<std::int64_t> full_sequence = prompt;
  full_sequence.push_back(42 % 37);
  PackedBatch full = pack_sequences({full_sequence});
  Tensor full_logits = model.forward(full.input_ids, full.positions, full.cu_seqlens).data();
  EXPECT_LE(max_abs_diff(step.data().select(0, 0), full_logits.select(0, 5)), 1e-12);
  EXPECT_EQ(cache.length(), 6);
}

TEST_P(ModelArch, CheckpointedLayersGiveTheSameGradients) {
  PackedBatch batch = test_batch();
  std::vector<std::vector<double>> grads[2];
  for (int checkpointed = 0; checkpointed < 2; ++checkpointed) {
    CausalLM model = random_model(GetParam(), 10);
    model.set_gradient_checkpointing(checkpointed == 1);
    model.loss(model.forward(batch.input_ids, batch.positions, batch.cu_seqlens), batch.labels).backward();
    for (const auto& p : model.named_parameters()) grads[checkpointed].push_back(p.variable.grad().to_vector());
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (std::size_t i = 0; i < grads[0].size(); ++i) EXPECT_EQ(grads[0][i], grads[1][i]) << "parameter " << i;
}

INSTANTIATE_TEST_SUITE_P(Architectures, ModelArch,
                         ::testing::Values(Architecture::kQwen2, Architecture::kQwen3, Architecture::kGlm,
                                           Architecture::kGlm4, Architecture::kChatGlm),
                         [](const auto& info) { return std::string(architecture_name(info.param)); });

// A layer's q, k, v (and biases) and gate, up weights are allocated as one matrix each, which
// a forward without gradients multiplies by in one GEMM; moved apart, the separate GEMMs run.
// Both give the same logits bit for bit.
TEST(ModelForward, ProjectionsAllocatedTogetherGiveWhatSeparateOnesGive) {
  for (Architecture arch : {Architecture::kQwen2, Architecture::kQwen3}) {
    CausalLM model = random_model(arch, 9);
    const PackedBatch batch = test_batch();
    autograd::NoGradGuard no_recording;
    const Tensor joined = model.forward(batch.input_ids, batch.positions, batch.cu_seqlens).data();
    for (std::int64_t layer = 0; layer < model.config().num_layers; ++layer) {
      const LayerWeights& w = model.layer_weights(layer);
      ASSERT_TRUE(Tensor::adjacent_rows({w[kQ].data(), w[kK].data(), w[kV].data()}).has_value());
      ASSERT_TRUE(Tensor::adjacent_rows({w[kGate].data(), w[kUp].data()}).has_value());
      if (w[kQBias].defined()) {
        ASSERT_TRUE(Tensor::adjacent_rows({w[kQBias].data(), w[kKBias].data(), w[kVBias].data()}).has_value());
      }
      for (int slot : {kK, kUp}) w[slot].impl()->data = w[slot].data().clone();
    }
    const Tensor separate = model.forward(batch.input_ids, batch.positions, batch.cu_seqlens).data();
    EXPECT_EQ(max_abs_diff(joined, separate), 0.0) << architecture_name(arch);
  }
}

// Training multiplies a layer's gate and up weights, allocated together, as one GEMM each way
// (autograd::joined_linear); moved apart, the separate GEMMs run. The loss is the same bit for
// bit, every weight gradient too, and the input gradients up to the order of their sums.
TEST(ModelForward, GateAndUpAllocatedTogetherTrainAsSeparateOnesDo) {
  for (Architecture arch : {Architecture::kQwen2, Architecture::kQwen3}) {
    const PackedBatch batch = test_batch();
    std::vector<Tensor> grads[2];
    double losses[2] = {0, 0};
    for (int apart = 0; apart < 2; ++apart) {
      CausalLM model = random_model(arch, 12);
      for (std::int64_t layer = 0; layer < model.config().num_layers; ++layer) {
        const LayerWeights& w = model.layer_weights(layer);
        ASSERT_TRUE(Tensor::adjacent_rows({w[kGate].data(), w[kUp].data()}).has_value());
        if (apart == 1) w[kUp].impl()->data = w[kUp].data().clone();
      }
      Variable loss = model.loss(model.forward(batch.input_ids, batch.positions, batch.cu_seqlens), batch.labels);
      losses[apart] = loss.data().item();
      loss.backward();
      for (const auto& p : model.named_parameters()) grads[apart].push_back(p.variable.grad());
    }
    EXPECT_EQ(losses[0], losses[1]) << architecture_name(arch);
    for (std::size_t i = 0; i < grads[0].size(); ++i)
      EXPECT_LE(max_abs_diff(grads[0][i], grads[1][i]), 1e-10) << architecture_name(arch) << " parameter " << i;
  }
}

// How many nodes of each name the graph behind `root` holds.
std::map<std::string, int> node_counts(const Variable& root) {
  std::map<std::string, int> counts;
  std::vector<autograd::Node*> stack{root.grad_fn().get()};
  std::set<autograd::Node*> seen{stack.front()};
  while (!stack.empty()) {
    autograd::Node* node = stack.back();
    stack.pop_back();
    ++counts[node->name()];
    for (const autograd::Edge& edge : node->inputs())
      if (edge.node && seen.insert(edge.node.get()).second) stack.push_back(edge.node.get());
  }
  return counts;
}

// In training the SwiGLU and the down projection are one op that keeps gate_up and not the
// product (autograd::swiglu_linear), in every architecture, GLM's fused gate_up included; with
// Qwen's gate and up moved apart (two products, no joined gate_up) the SwiGLU and the down
// projection are recorded as two ops again. GradientsMatchFiniteDifferences checks the
// gradients through the fused op.
TEST(ModelForward, TrainingKeepsGateUpAndNotTheSwigluProduct) {
  const PackedBatch batch = test_batch();
  for (Architecture arch :
       {Architecture::kQwen2, Architecture::kQwen3, Architecture::kGlm, Architecture::kGlm4, Architecture::kChatGlm}) {
    SCOPED_TRACE(architecture_name(arch));
    CausalLM model = random_model(arch, 13);
    const int layers = static_cast<int>(model.config().num_layers);
    std::map<std::string, int> counts =
        node_counts(model.loss(model.forward(batch.input_ids, batch.positions, batch.cu_seqlens), batch.labels));
    EXPECT_EQ(counts["swiglu_linear"], layers);
    EXPECT_EQ(counts["swiglu"], 0);
    if (model.config().fused_gate_up) continue;
    for (std::int64_t layer = 0; layer < layers; ++layer) {
      const LayerWeights& w = model.layer_weights(layer);
      w[kUp].impl()->data = w[kUp].data().clone();
    }
    counts = node_counts(model.loss(model.forward(batch.input_ids, batch.positions, batch.cu_seqlens), batch.labels));
    EXPECT_EQ(counts["swiglu_linear"], 0);
    EXPECT_EQ(counts["swiglu"], layers);
  }
}

TEST(ModelForward, TiedHeadIsTheEmbedding) {
  CausalLM tied = random_model(Architecture::kQwen2, 1);
  EXPECT_EQ(tied.lm_head_weight().impl(), tied.parameter("model.embed_tokens.weight").impl());
  EXPECT_FALSE(tied.has_parameter("lm_head.weight"));
  CausalLM untied = random_model(Architecture::kQwen3, 1);
  EXPECT_EQ(untied.lm_head_weight().impl(), untied.parameter("lm_head.weight").impl());
}

TEST(ModelForward, PaddingTokensAddNothingToTheEmbeddingGradient) {
  CausalLM model = random_model(Architecture::kQwen3, 2);  // pad_token_id 0, untied head
  PackedBatch batch = pack_sequences({{0, 5, 0, 6}}, {{5, 0, 6, 7}});
  model.loss(model.forward(batch.input_ids, batch.positions, batch.cu_seqlens), batch.labels).backward();
  Tensor grad = model.parameter("model.embed_tokens.weight").grad();
  EXPECT_EQ(max_abs_diff(grad.select(0, 0), Tensor::zeros({24}, DType::kF64)), 0.0);
  EXPECT_GT(max_abs_diff(grad.select(0, 5), Tensor::zeros({24}, DType::kF64)), 0.0);
}

TEST(ModelForward, MalformedBatchesAreNamed) {
  CausalLM model = random_model(Architecture::kQwen2, 3);
  Tensor ids = Tensor::from_values({1, 2, 3}, {3}, DType::kI64);
  Tensor positions = Tensor::from_values({0, 1, 2}, {3}, DType::kI64);
  expect_mentions(error_of([&] {
                    model.forward(ids, positions, Tensor::from_values({0, 2}, {2}, DType::kI32));
                  }),
                  {"cu_seqlens", "3"});
  expect_mentions(error_of([&] {
                    model.forward(ids, positions, Tensor::from_values({0, 2, 1, 3}, {4}, DType::kI32));
                  }),
                  {"cu_seqlens", "decreases"});
  expect_mentions(error_of([&] {
                    model.forward(ids, Tensor::from_values({0, 1}, {2}, DType::kI64),
                                  Tensor::from_values({0, 3}, {2}, DType::kI32));
                  }),
                  {"positions", "2", "3"});
  expect_mentions(error_of([&] {
                    model.forward(Tensor::from_values({1, 99, 3}, {3}, DType::kI64), positions,
                                  Tensor::from_values({0, 3}, {2}, DType::kI32));
                  }),
                  {"99"});
  SequenceKvCache cache(model.config(), 8, DType::kF64, Device::cpu());
  expect_mentions(error_of([&] {
                    model.forward_hidden(ids, positions, Tensor::from_values({0, 1, 3}, {3}, DType::kI32), &cache);
                  }),
                  {"one sequence", "2"});
  expect_mentions(error_of([&] { model.parameter("model.no_such.weight"); }), {"model.no_such.weight", "qwen2"});
}

TEST(ModelForward, SlidingWindowLongerThanASequenceIsRefusedNotIgnored) {
  nlohmann::ordered_json json = tiny_config_json(Architecture::kQwen2);
  json["use_sliding_window"] = true;
  json["sliding_window"] = 4;
  json["max_window_layers"] = 1;
  CausalLM model = init_model(parse_config(json, "windowed config.json"), 1, {.dtype = DType::kF64});
  PackedBatch fits = pack_sequences({{1, 2, 3, 4}, {5, 6}});
  EXPECT_NO_THROW(model.forward(fits.input_ids, fits.positions, fits.cu_seqlens));
  PackedBatch longer = pack_sequences({{1, 2, 3, 4, 5}});
  expect_mentions(error_of([&] { model.forward(longer.input_ids, longer.positions, longer.cu_seqlens); }),
                  {"5 tokens", "sliding window of 4", "layer 1", "windowed config.json"});
}

}  // namespace
}  // namespace zt::models
