// A decode step on a 4-bit base multiplies the packed weights instead of gathering (dequantizing)
// its layers (QuantizedLinears::multiplies_held, the decoder's held projections). On the CPU
// the held product dequantizes per linear and runs the same ops as the gather path, so the
// results are the gather path's bit for bit: these tests check which forwards skip the gather
// and that, LoRA beside the weights, nothing else changes.
#include <gtest/gtest.h>

#include <filesystem>

#include "autograd/grad_mode.h"
#include "cuda/quant4/gemm4.cuh"
#include "cuda/quant4/gemv4.cuh"
#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "tests/common/process_test_util.h"
#include "tests/common/test_util.h"
#include "tests/models/quant/held_decode_util.h"

namespace zt::models::quant {
namespace {

const std::string kTiny = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";

class HeldDecode : public testing::FolderTest {
 protected:
  CausalLM four_bit(DType dtype = DType::kF32) {
    save_bnb_4bit_model(load_model(kTiny), dir_.string(), {});
    CausalLM model = load_model(dir_.string(), {.dtype = dtype, .keep_4bit_weights = true});
    attach_random_lora(model);
    return model;
  }
};

Tensor logits(const CausalLM& model, std::int64_t tokens) {
  std::vector<double> ids, positions;
  for (std::int64_t i = 0; i < tokens; ++i) {
    ids.push_back(static_cast<double>((37 * i + 5) % 300));
    positions.push_back(static_cast<double>(i));
  }
  return model
      .forward(Tensor::from_values(ids, {tokens}, DType::kI64), Tensor::from_values(positions, {tokens}, DType::kI64),
               Tensor::from_values({0.0, static_cast<double>(tokens)}, {2}, DType::kI32))
      .data();
}

// The logits of `tokens` tokens without gradient, which must gather no layer (counted from 0).
Tensor logits_without_gathering(const CausalLM& model, GatherCounter& counter, std::int64_t tokens) {
  counter.layer_gathers = 0;
  autograd::NoGradGuard off;
  Tensor held = logits(model, tokens);
  EXPECT_EQ(counter.layer_gathers, 0) << tokens << " tokens: a layer was gathered";
  return held;
}

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  const std::vector<double> x = a.to(DType::kF32).to_vector(), y = b.to(DType::kF32).to_vector();
  ASSERT_EQ(x.size(), y.size()) << what;
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << what << " logit " << i;
}

TEST_F(HeldDecode, OnlyADecoderLayerOnFewTokensWithoutGradientMultipliesTheHeldWeights) {
  const CausalLM model = four_bit();
  const auto& linears = dynamic_cast<const QuantizedLinears&>(*model.owned_parameter_gatherer());
  const ModuleRef layer0{ModuleKind::kLayer, 0};
  EXPECT_TRUE(linears.multiplies_held(layer0, 1));
  EXPECT_TRUE(linears.multiplies_held(layer0, cuda::kGemv4MaxRows));
  EXPECT_FALSE(linears.multiplies_held(layer0, cuda::kGemv4MaxRows + 1))
      << "a float32 prefill gathers (the 4-bit GEMM takes bfloat16 and float16)";
  EXPECT_FALSE(linears.multiplies_held(layer0, 0));
  EXPECT_FALSE(linears.multiplies_held({ModuleKind::kLmHead, 0}, 1)) << "the LM head is not held in 4 bits";
  EXPECT_FALSE(linears.multiplies_held({ModuleKind::kLayer, model.config().num_layers}, 1));
  // A weight kept dense (not one of the 4-bit ones) is left to the caller.
  EXPECT_FALSE(linears.held_linear(model.parameter("model.layers.0.input_layernorm.weight"),
                                   Tensor::zeros({1, model.config().hidden_size}, model.dtype()), Tensor()));
  const Variable& q = model.parameter("model.layers.0.self_attn.q_proj.weight");
  const std::optional<Tensor> y = linears.held_linear(q, Tensor::zeros({2, model.config().hidden_size}, model.dtype()),
                                                      model.parameter("model.layers.0.self_attn.q_proj.bias").data());
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->shape(), (Shape{2, model.config().q_size()}));
  EXPECT_EQ(q.data().numel(), 0) << "the weight was not dequantized into its Variable";
}

TEST_F(HeldDecode, AFewTokensWithoutGradientSkipTheGatherAndGiveTheGatherPathsLogits) {
  CausalLM model = four_bit();
  GatherCounter& counter = GatherCounter::install(model);
  const std::int64_t layers = model.config().num_layers;
  for (std::int64_t tokens : {std::int64_t{1}, std::int64_t{5}, cuda::kGemv4MaxRows}) {
    const std::string what = std::to_string(tokens) + " tokens";
    const Tensor held = logits_without_gathering(model, counter, tokens);
    const Tensor gathered = logits(model, tokens);  // recording gradients: every layer gathered
    EXPECT_EQ(counter.layer_gathers, layers) << what;
    expect_same_bits(held, gathered, what);
  }
  counter.layer_gathers = 0;
  autograd::NoGradGuard off;
  logits(model, cuda::kGemv4MaxRows + 1);
  EXPECT_EQ(counter.layer_gathers, layers) << "more tokens than the GEMV takes are gathered";
}

// In bfloat16 the 4-bit GEMM's rows are held too: a short prefill (here 9 and 24 tokens) skips
// the gather, with the gather path's logits on the CPU.
TEST_F(HeldDecode, ABfloat16ForwardOfUpToTheGemmsRowsSkipsTheGather) {
  CausalLM model = four_bit(DType::kBF16);
  const auto& linears = dynamic_cast<const QuantizedLinears&>(*model.owned_parameter_gatherer());
  const ModuleRef layer0{ModuleKind::kLayer, 0};
  EXPECT_TRUE(linears.multiplies_held(layer0, cuda::kGemm4MaxRows));
  EXPECT_FALSE(linears.multiplies_held(layer0, cuda::kGemm4MaxRows + 1)) << "a longer prefill gathers";
  GatherCounter& counter = GatherCounter::install(model);
  for (std::int64_t tokens : {cuda::kGemv4MaxRows + 1, std::int64_t{24}}) {
    const std::string what = std::to_string(tokens) + " tokens";
    const Tensor held = logits_without_gathering(model, counter, tokens);
    expect_same_bits(held, logits(model, tokens), what);
  }
}

}  // namespace
}  // namespace zt::models::quant
