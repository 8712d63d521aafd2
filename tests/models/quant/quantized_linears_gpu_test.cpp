// The 4-bit base on the GPU: the tiny model saved in bitsandbytes' layout, loaded on a GPU in
// bfloat16 kept 4-bit and dequantized at load. A forward of more tokens than the 4-bit kernels
// take (each layer dequantized by cuda/quant4's kernel) gives the same logits bit for bit (the
// same weights through the same GEMMs); a forward of 10 tokens without gradient runs the 4-bit
// GEMM on the packed weights, whose logits agree within what a reordered bfloat16 sum explains;
// LoRA's gradients through the 4-bit layers match the dense model's, and are the same whether
// the layers keep their activations (each weight dequantized again in backward) or recompute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "autograd/grad_mode.h"
#include "cuda/quant4/gemm4.cuh"
#include "models/peft/lora.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_weight.h"
#include "models/weights/weights.h"
#include "tests/common/process_test_util.h"
#include "tests/common/test_util.h"

namespace zt::models::quant {
namespace {

const std::string kTiny = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";

class QuantizedLinearsGpu : public testing::FolderTest {};

// Sequences of `length` tokens (ids, positions, cu_seqlens, next-token labels).
struct Batch {
  Tensor ids, positions, cu, labels;
};

Batch batch(std::int64_t sequences, std::int64_t length) {
  std::vector<double> ids, positions, labels, cu{0};
  for (std::int64_t s = 0; s < sequences; ++s) {
    for (std::int64_t i = 0; i < length; ++i) {
      ids.push_back(static_cast<double>((37 * (s * length + i) + 5) % 500));
      positions.push_back(static_cast<double>(i));
    }
    for (std::int64_t i = 1; i < length; ++i) labels.push_back(ids[static_cast<std::size_t>(s * length + i)]);
    labels.push_back(-100);
    cu.push_back(static_cast<double>((s + 1) * length));
  }
  const std::int64_t tokens = sequences * length;
  return {Tensor::from_values(ids, {tokens}, DType::kI64), Tensor::from_values(positions, {tokens}, DType::kI64),
          Tensor::from_values(cu, {sequences + 1}, DType::kI32), Tensor::from_values(labels, {tokens}, DType::kI64)};
}

TEST_F(QuantizedLinearsGpu, KeptFourBitEqualsDequantizedAtLoad) {
  ZT_SKIP_WITHOUT_GPU();
  save_bnb_4bit_model(load_model(kTiny, {.dtype = DType::kBF16}), dir_.string(), {});
  const ModelOptions dense{.device = Device::cuda(), .dtype = DType::kBF16};
  ModelOptions packed = dense;
  packed.keep_4bit_weights = true;
  // More tokens than the 4-bit kernels take (sequences of 100, within the model's 256
  // positions): the forward without gradients gathers.
  const Batch gathered = batch(cuda::kGemm4MaxRows / 100 + 1, 100);
  const Batch held = batch(2, 5);  // the 4-bit GEMM's, in bfloat16
  ASSERT_GT(gathered.ids.numel(), cuda::kGemm4MaxRows);
  ASSERT_TRUE(multiplies_packed(held.ids.numel(), DType::kBF16));
  auto run = [&](CausalLM model) {
    for (const NamedParameter& p : model.named_parameters()) p.variable.set_requires_grad(false);
    LoraConfig lora;
    lora.rank = 4;
    lora.target_modules = parse_lora_target("all", model.config());
    attach_lora(model, lora, 3);
    std::vector<Tensor> results;
    {
      autograd::NoGradGuard off;
      for (const Batch* b : {&gathered, &held})
        results.push_back(model.forward(b->ids, b->positions, b->cu).data().to(Device::cpu(), DType::kF32));
    }
    model.loss(model.forward(gathered.ids, gathered.positions, gathered.cu), gathered.labels).backward();
    for (const NamedParameter& p : lora_parameters(model))
      results.push_back(p.variable.grad().to(Device::cpu(), DType::kF32));
    return results;
  };
  const std::vector<Tensor> a = run(load_model(dir_.string(), dense));
  const std::vector<Tensor> b = run(load_model(dir_.string(), packed));
  ASSERT_EQ(a.size(), b.size());
  const std::vector<double> la = a[0].to_vector(), lb = b[0].to_vector();
  ASSERT_EQ(la.size(), lb.size());
  for (std::size_t i = 0; i < la.size(); ++i) ASSERT_EQ(la[i], lb[i]) << "gathered logit " << i;
  // Each layer's bfloat16 outputs may round to a neighbouring value (2^-8 relative), which the
  // next layers carry on.
  const std::vector<double> ha = a[1].to_vector(), hb = b[1].to_vector();
  ASSERT_EQ(ha.size(), hb.size());
  double scale = 0;
  for (double v : ha) scale = std::max(scale, std::fabs(v));
  for (std::size_t i = 0; i < ha.size(); ++i) ASSERT_NEAR(ha[i], hb[i], 5e-2 * scale) << "held logit " << i;
  for (std::size_t g = 2; g < a.size(); ++g) {
    const std::vector<double> x = a[g].to_vector(), y = b[g].to_vector();
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-2 * (1 + std::fabs(x[i]))) << g << " " << i;
  }
}

TEST_F(QuantizedLinearsGpu, KeptActivationsEqualRecomputedLayers) {
  ZT_SKIP_WITHOUT_GPU();
  save_bnb_4bit_model(load_model(kTiny, {.dtype = DType::kBF16}), dir_.string(), {});
  CausalLM model =
      load_model(dir_.string(), {.device = Device::cuda(), .dtype = DType::kBF16, .keep_4bit_weights = true});
  for (const NamedParameter& p : model.named_parameters()) p.variable.set_requires_grad(false);
  LoraConfig lora;
  lora.rank = 4;
  lora.target_modules = parse_lora_target("all", model.config());
  attach_lora(model, lora, 3);
  for (const NamedParameter& p : lora_parameters(model))  // B starts at zero: give the updates a value
    if (p.name.find("lora_B") != std::string::npos) {
      Tensor b = p.variable.data();  // shares the parameter's storage
      b.copy_from(Tensor::normal(b.shape(), 5, 0, 0.0, 0.1).to(Device::cuda(), DType::kBF16));
    }
  const Batch b = batch(2, 100);
  auto grads = [&](bool recompute) {
    model.set_gradient_checkpointing(recompute);
    model.loss(model.forward(b.ids, b.positions, b.cu), b.labels).backward();
    std::vector<std::vector<double>> out;
    for (const NamedParameter& p : lora_parameters(model)) {
      out.push_back(p.variable.grad().to(Device::cpu(), DType::kF32).to_vector());
      p.variable.zero_grad();
    }
    return out;
  };
  const std::vector<std::vector<double>> recomputed = grads(true), kept = grads(false);
  ASSERT_EQ(recomputed.size(), kept.size());
  for (std::size_t g = 0; g < kept.size(); ++g)
    for (std::size_t i = 0; i < kept[g].size(); ++i)
      ASSERT_NEAR(kept[g][i], recomputed[g][i], 1e-3 * (1 + std::fabs(recomputed[g][i]))) << g << " " << i;
}

}  // namespace
}  // namespace zt::models::quant
