// The activation recorder (models/activation_dump.h) on the transformers fixtures: every
// architecture records the points scripts/compare_activations.py hooks in transformers, under
// the same names, [tokens, features] in float32; each point is exactly the input or output of
// the module it is named after (recomputed here from the recorded neighbours with the same CPU
// ops); and a model without a recorder records nothing.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "autograd/functions.h"
#include "models/activation_dump.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/op_test_util.h"
#include "tests/common/safetensors_test_util.h"

namespace zt::models {
namespace {

using autograd::Variable;
using testing::fixture_batch;
using testing::fixture_dir;
using testing::FixtureBatch;

const char* const kArchitectures[] = {"qwen2", "qwen3", "glm", "glm4", "chatglm"};

// (name, features) of every point in forward order, as the config says the model has them.
std::vector<std::pair<std::string, std::int64_t>> expected_points(const ModelConfig& c) {
  std::vector<std::pair<std::string, std::int64_t>> points{{"model.embed_tokens", c.hidden_size}};
  for (std::int64_t layer = 0; layer < c.num_layers; ++layer) {
    auto add = [&](const char* point, std::int64_t features) {
      points.emplace_back(layer_activation_name(layer, point), features);
    };
    add("input_layernorm", c.hidden_size);
    add("self_attn.q_proj", c.q_size());
    add("self_attn.k_proj", c.kv_size());
    add("self_attn.v_proj", c.kv_size());
    if (c.qk_norm) add("self_attn.q_norm", c.q_size());
    if (c.qk_norm) add("self_attn.k_norm", c.kv_size());
    add("self_attn.rope_q", c.q_size());
    add("self_attn.rope_k", c.kv_size());
    add("self_attn.attn_out", c.q_size());
    add("self_attn", c.hidden_size);
    if (c.sandwich_norms) add("post_self_attn_layernorm", c.hidden_size);
    add("post_attention_layernorm", c.hidden_size);
    add("mlp.act", c.intermediate_size);
    add("mlp", c.hidden_size);
    if (c.sandwich_norms) add("post_mlp_layernorm", c.hidden_size);
    add("", c.hidden_size);
  }
  if (c.final_norm) points.emplace_back("model.norm", c.hidden_size);
  points.emplace_back("lm_head", c.vocab_size);
  return points;
}

CausalLM fixture_model(const std::string& arch, bool checkpointing = false) {
  return load_model(fixture_dir(arch), {.dtype = DType::kF32, .gradient_checkpointing = checkpointing});
}

// One forward without gradients with `recorder` installed, which is removed again after.
Tensor recorded_forward(CausalLM& model, const FixtureBatch& batch, ActivationRecorder& recorder) {
  model.set_activation_recorder(&recorder);
  Tensor logits = testing::logits_of(model, batch);
  model.set_activation_recorder(nullptr);
  return logits;
}

void expect_identical(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  EXPECT_EQ(actual.to(DType::kF32).to_vector(), expected.to(DType::kF32).to_vector()) << what;
}

class ActivationDump : public ::testing::TestWithParam<const char*> {};

TEST_P(ActivationDump, RecordsEveryPointUnderItsModuleNameAsTokensByFeatures) {
  CausalLM model = fixture_model(GetParam());
  const FixtureBatch batch = fixture_batch(GetParam());
  ActivationRecorder recorder;
  recorded_forward(model, batch, recorder);
  const auto expected = expected_points(model.config());
  ASSERT_EQ(recorder.activations().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& [name, tensor] = recorder.activations()[i];
    EXPECT_EQ(name, expected[i].first) << "point " << i;
    EXPECT_EQ(tensor.shape(), (Shape{batch.ids.numel(), expected[i].second})) << name;
    EXPECT_EQ(tensor.dtype(), DType::kF32) << name;
  }
}

TEST_P(ActivationDump, LmHeadIsTheLogitsOfAPlainForward) {
  CausalLM model = fixture_model(GetParam());
  const FixtureBatch batch = fixture_batch(GetParam());
  const Tensor plain = testing::logits_of(model, batch);
  ActivationRecorder recorder;
  expect_identical(recorded_forward(model, batch, recorder), plain, "logits with a recorder");
  expect_identical(recorder.get("lm_head"), plain, "lm_head");
}

Variable weight(const CausalLM& model, std::int64_t layer, LayerSlot slot) {
  const ParameterLayout layout = parameter_layout(model.config());
  const auto& spec = layout.layers[static_cast<std::size_t>(layer)][slot];
  return spec ? model.parameter(spec->name) : Variable();
}

Variable recorded(const ActivationRecorder& recorder, std::int64_t layer, const char* point) {
  return Variable(recorder.get(layer_activation_name(layer, point)));
}

Variable norm(const ModelConfig& c, const Variable& x, const Variable& weight) {
  return autograd::rmsnorm(x, weight, static_cast<float>(c.norm_eps), c.norm_style);
}

Variable heads(const Variable& x, std::int64_t head_dim) {
  const std::int64_t tokens = x.data().size(0);
  return autograd::reshape(x, {tokens, x.data().size(1) / head_dim, head_dim});
}

// rope_q/rope_k from q/k (after q_norm/k_norm where the model has them).
void expect_rope_follows_projection(const CausalLM& model, const ActivationRecorder& r, std::int64_t layer,
                                    const Tensor& positions) {
  const ModelConfig& c = model.config();
  for (const char* which : {"q", "k"}) {
    const std::string part(which);
    Variable projected = heads(recorded(r, layer, ("self_attn." + part + "_proj").c_str()), c.head_dim);
    if (c.qk_norm) {
      projected = norm(c, projected, weight(model, layer, part == "q" ? kQNorm : kKNorm));
      expect_identical(recorded(r, layer, ("self_attn." + part + "_norm").c_str()).data(),
                       projected.data().reshape({positions.numel(), -1}), part + "_norm");
    }
    Variable rotated = autograd::rope(projected, positions, c.rope);
    expect_identical(recorded(r, layer, ("self_attn.rope_" + part).c_str()).data(),
                     rotated.data().reshape({positions.numel(), -1}), "rope_" + part);
  }
}

// Each point of one layer from the recorded points before it; returns the layer's output.
Variable expect_layer_follows_its_input(const CausalLM& model, const ActivationRecorder& r, std::int64_t layer,
                                        const Variable& input, const Tensor& positions) {
  const ModelConfig& c = model.config();
  auto at = [&](const char* point) { return recorded(r, layer, point); };
  expect_identical(at("input_layernorm").data(), norm(c, input, weight(model, layer, kInputNorm)).data(),
                   "input_layernorm");
  expect_rope_follows_projection(model, r, layer, positions);
  expect_identical(
      at("self_attn").data(),
      autograd::linear(at("self_attn.attn_out"), weight(model, layer, kO), weight(model, layer, kOBias)).data(),
      "self_attn from attn_out");
  Variable attention = at("self_attn");
  if (c.sandwich_norms) {
    expect_identical(at("post_self_attn_layernorm").data(),
                     norm(c, attention, weight(model, layer, kPostSelfAttnNorm)).data(), "post_self_attn_layernorm");
    attention = at("post_self_attn_layernorm");
  }
  Variable after_attention = autograd::residual_add(attention, input);
  expect_identical(at("post_attention_layernorm").data(),
                   norm(c, after_attention, weight(model, layer, kPostAttentionNorm)).data(),
                   "post_attention_layernorm");
  expect_identical(at("mlp").data(),
                   autograd::linear(at("mlp.act"), weight(model, layer, kDown), weight(model, layer, kDownBias)).data(),
                   "mlp from mlp.act");
  Variable mlp = at("mlp");
  if (c.sandwich_norms) {
    expect_identical(at("post_mlp_layernorm").data(), norm(c, mlp, weight(model, layer, kPostMlpNorm)).data(),
                     "post_mlp_layernorm");
    mlp = at("post_mlp_layernorm");
  }
  expect_identical(at("").data(), autograd::residual_add(mlp, after_attention).data(), "layer output");
  return at("");
}

TEST_P(ActivationDump, EachPointIsItsModulesOutputOnTheRecordedInput) {
  CausalLM model = fixture_model(GetParam());
  const FixtureBatch batch = fixture_batch(GetParam());
  ActivationRecorder recorder;
  recorded_forward(model, batch, recorder);
  autograd::NoGradGuard no_recording;
  const Variable embedding = model.named_parameters().front().variable;
  Variable x(recorder.get("model.embed_tokens"));
  expect_identical(x.data(), autograd::embedding(embedding, batch.ids).data(), "model.embed_tokens");
  for (std::int64_t layer = 0; layer < model.config().num_layers; ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    x = expect_layer_follows_its_input(model, recorder, layer, x, batch.positions);
  }
  if (model.config().final_norm) {
    const std::string final_norm = parameter_layout(model.config()).final_norm->name;
    expect_identical(recorder.get("model.norm"), norm(model.config(), x, model.parameter(final_norm)).data(),
                     "model.norm");
    x = Variable(recorder.get("model.norm"));
  }
  expect_identical(recorder.get("lm_head"), autograd::linear(x, model.lm_head_weight()).data(), "lm_head");
}

TEST_P(ActivationDump, CheckpointedLayersRecordTheForwardOnlyNotTheRecompute) {
  CausalLM plain = fixture_model(GetParam());
  CausalLM checkpointed = fixture_model(GetParam(), true);
  const FixtureBatch batch = fixture_batch(GetParam());
  ActivationRecorder expected, recorder;
  recorded_forward(plain, batch, expected);
  checkpointed.set_activation_recorder(&recorder);
  Variable logits = checkpointed.forward(batch.ids, batch.positions, batch.cu_seqlens);
  checkpointed.loss(logits, batch.labels).backward();  // recomputes every layer
  checkpointed.set_activation_recorder(nullptr);
  ASSERT_EQ(recorder.activations().size(), expected.activations().size());
  for (const auto& [name, tensor] : expected.activations()) expect_identical(recorder.get(name), tensor, name);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ActivationDump, ::testing::ValuesIn(kArchitectures));

TEST(ActivationDumpOff, AModelWithoutARecorderRecordsNothing) {
  CausalLM model = fixture_model("qwen3");
  EXPECT_EQ(model.activation_recorder(), nullptr);
  const FixtureBatch batch = fixture_batch("qwen3");
  ActivationRecorder recorder;
  recorded_forward(model, batch, recorder);  // installs, runs, removes
  recorder.clear();
  testing::logits_of(model, batch);
  EXPECT_TRUE(recorder.empty());
}

TEST(ActivationDumpOff, ASecondForwardIntoAFullRecorderIsRefusedByName) {
  CausalLM model = fixture_model("qwen2");
  const FixtureBatch batch = fixture_batch("qwen2");
  ActivationRecorder recorder;
  recorded_forward(model, batch, recorder);
  testing::expect_mentions(testing::error_of([&] { recorded_forward(model, batch, recorder); }),
                           {"model.embed_tokens", "recorded twice", "clear()"});
}

TEST(ActivationDumpOff, UnknownNameListsRecordedOnes) {
  ActivationRecorder recorder;
  recorder.record("lm_head", Tensor::zeros({2, 3}, DType::kF64));
  testing::expect_mentions(testing::error_of([&] { recorder.get("model.norm"); }), {"model.norm", "lm_head"});
}

TEST(ActivationDumpFile, SavesEveryActivationAsFloat32AndReadsBack) {
  CausalLM model = load_model(fixture_dir("glm4"), {.dtype = DType::kF64});
  const FixtureBatch batch = fixture_batch("glm4");
  ActivationRecorder recorder;
  const Tensor logits = recorded_forward(model, batch, recorder);
  testing::ScratchDir dir;
  recorder.save(dir.file("activations.safetensors"));
  SafetensorsFile file = SafetensorsFile::open(dir.file("activations.safetensors"));
  ASSERT_EQ(file.names().size(), recorder.activations().size());
  for (const auto& [name, tensor] : recorder.activations()) {
    EXPECT_EQ(file.get(name).dtype(), DType::kF32) << name;
    expect_identical(file.get(name), tensor, name);
  }
  expect_identical(file.get("lm_head"), logits.to(DType::kF32), "lm_head of a float64 model");
}

}  // namespace
}  // namespace zt::models
