// The decode layer through ops/gemv (models/small_m_decoder.h) on the CPU, every architecture:
// a cached forward of a few tokens gives the hidden states of the ordinary layer bit for bit,
// and hands the cache the same q, k and v; and it is taken only where it carries everything
// the step needs.
#include <gtest/gtest.h>

#include "autograd/grad_mode.h"
#include "models/config/config_presets.h"
#include "models/init.h"
#include "models/small_m_decoder.h"
#include "tests/common/op_test_util.h"

namespace zt::models {
namespace {

// Attention stand-in: remembers what it is given and answers q itself.
class RecordingCache : public KvCache {
 public:
  void begin_forward(const ModelConfig&, const PackedShape&) override {}
  Tensor attend(std::int64_t, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&, double) override {
    seen.push_back(q.contiguous().to_vector());
    seen.push_back(k.contiguous().to_vector());
    seen.push_back(v.contiguous().to_vector());
    return Tensor::from_values(q.contiguous().to_vector(), q.shape(), q.dtype());
  }
  void end_forward() override {}
  std::vector<std::vector<double>> seen;
};

Tensor int_tensor(const std::vector<double>& values, DType dtype) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype);
}

class SmallMDecoder : public ::testing::TestWithParam<Architecture> {};

TEST_P(SmallMDecoder, GivesTheOrdinaryLayersHiddenStatesBitForBit) {
  CausalLM model = init_model(parse_config(tiny_config_json(GetParam()), "tiny"), 7, {.dtype = DType::kF32});
  autograd::NoGradGuard no_recording;
  // Biases and norm weights away from their initial zeros and ones, so that each counts.
  std::uint64_t seed = 100;
  for (const NamedParameter& p : model.named_parameters()) {
    const bool bias = p.name.ends_with("bias"), norm = p.name.find("norm") != std::string::npos;
    Tensor value = p.variable.data();  // a handle: the copy writes the parameter
    if (bias || norm)
      value.copy_from(testing::random_tensor(value.shape(), seed++, DType::kF32, norm ? 1.0 : 0.0, 0.2));
  }
  // Three sequences decoding one token each, at different positions.
  const Tensor ids = int_tensor({5, 17, 3}, DType::kI64), positions = int_tensor({4, 9, 0}, DType::kI64);
  const Tensor cu_seqlens = int_tensor({0, 1, 2, 3}, DType::kI32);
  RecordingCache ordinary, fused;
  const std::vector<double> expected = model.forward_hidden(ids, positions, cu_seqlens, &ordinary).data().to_vector();
  model.set_small_m_layers(true);
  const std::vector<double> got = model.forward_hidden(ids, positions, cu_seqlens, &fused).data().to_vector();
  EXPECT_EQ(got, expected) << architecture_name(GetParam());
  EXPECT_EQ(fused.seen, ordinary.seen) << architecture_name(GetParam()) << ": q, k and v handed to the cache";
  EXPECT_EQ(ordinary.seen.size(), 3 * static_cast<std::size_t>(model.config().num_layers));
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, SmallMDecoder,
                         ::testing::Values(Architecture::kQwen2, Architecture::kQwen3, Architecture::kGlm,
                                           Architecture::kGlm4, Architecture::kChatGlm));

TEST(SmallMDecoderChoice, TakenOnlyForCachedStepsItCarries) {
  ModelConfig config = parse_config(tiny_config_json(Architecture::kQwen2), "tiny");
  RecordingCache cache;
  LayerParameters plain;
  TokenLayout asked;
  asked.small_m_layers = true;
  const Variable step(Tensor::zeros({32, config.hidden_size}, DType::kF32, Device::cpu()));
  autograd::NoGradGuard no_recording;
  EXPECT_TRUE(small_m_layer_applies(config, plain, step, asked, &cache));
  EXPECT_FALSE(small_m_layer_applies(config, plain, step, TokenLayout{}, &cache)) << "not asked for";
  EXPECT_FALSE(small_m_layer_applies(config, plain, step, asked, nullptr)) << "no cache: a training forward";
  const Variable prefill(Tensor::zeros({33, config.hidden_size}, DType::kF32, Device::cpu()));
  EXPECT_FALSE(small_m_layer_applies(config, plain, prefill, asked, &cache)) << "33 tokens: a GEMM's work";
  LayerLora lora;
  LayerParameters adapted;
  adapted.lora = &lora;
  EXPECT_FALSE(small_m_layer_applies(config, adapted, step, asked, &cache)) << "LoRA kept beside the weights";
  const PartialSumReducer reducer = [](const Tensor&) {};
  LayerParameters shard;
  shard.reduce_partial_sums = &reducer;
  EXPECT_FALSE(small_m_layer_applies(config, shard, step, asked, &cache)) << "a tensor-parallel shard";
  config.sandwich_norms = true;
  EXPECT_FALSE(small_m_layer_applies(config, plain, step, asked, &cache)) << "GLM-4's norms after the sublayers";
}

}  // namespace
}  // namespace zt::models
