// The 4-bit base on the GPU: the tiny model saved in bitsandbytes' layout, loaded on a GPU in
// bfloat16 kept 4-bit (each layer dequantized by cuda/quant4's kernel: a forward of more tokens
// than the 4-bit GEMV takes, see held_decode_gpu_test for fewer) and dequantized at load,
// gives the same logits bit for bit (the same weights through the same GEMMs), and LoRA's
// gradients through the 4-bit layers match the dense model's.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "autograd/grad_mode.h"
#include "models/peft/lora.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/weights/weights.h"
#include "tests/common/process_test_util.h"
#include "tests/common/test_util.h"

namespace zt::models::quant {
namespace {

const std::string kTiny = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";

class QuantizedLinearsGpu : public testing::FolderTest {};

TEST_F(QuantizedLinearsGpu, KeptFourBitEqualsDequantizedAtLoad) {
  ZT_SKIP_WITHOUT_GPU();
  save_bnb_4bit_model(load_model(kTiny, {.dtype = DType::kBF16}), dir_.string(), {});
  const ModelOptions dense{.device = Device::cuda(), .dtype = DType::kBF16};
  ModelOptions packed = dense;
  packed.keep_4bit_weights = true;
  auto run = [&](CausalLM model) {
    for (const NamedParameter& p : model.named_parameters()) p.variable.set_requires_grad(false);
    LoraConfig lora;
    lora.rank = 4;
    lora.target_modules = parse_lora_target("all", model.config());
    attach_lora(model, lora, 3);
    // More tokens than the 4-bit GEMV takes: the forward without gradients gathers too.
    const Tensor ids = Tensor::from_values({5, 17, 230, 41, 9, 300, 77, 12, 64, 3}, {10}, DType::kI64);
    const Tensor positions = Tensor::from_values({0, 1, 2, 3, 4, 0, 1, 2, 3, 4}, {10}, DType::kI64);
    const Tensor cu = Tensor::from_values({0, 5, 10}, {3}, DType::kI32);
    Tensor logits;
    {
      autograd::NoGradGuard off;
      logits = model.forward(ids, positions, cu).data().to(Device::cpu(), DType::kF32);
    }
    model
        .loss(model.forward(ids, positions, cu),
              Tensor::from_values({17, 230, 41, 9, -100, 77, 12, 64, 3, -100}, {10}, DType::kI64))
        .backward();
    std::vector<Tensor> grads{logits};
    for (const NamedParameter& p : lora_parameters(model))
      grads.push_back(p.variable.grad().to(Device::cpu(), DType::kF32));
    return grads;
  };
  const std::vector<Tensor> a = run(load_model(dir_.string(), dense));
  const std::vector<Tensor> b = run(load_model(dir_.string(), packed));
  ASSERT_EQ(a.size(), b.size());
  const std::vector<double> la = a[0].to_vector(), lb = b[0].to_vector();
  for (std::size_t i = 0; i < la.size(); ++i) ASSERT_EQ(la[i], lb[i]) << "logit " << i;
  for (std::size_t g = 1; g < a.size(); ++g) {
    const std::vector<double> x = a[g].to_vector(), y = b[g].to_vector();
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-2 * (1 + std::fabs(x[i]))) << g << " " << i;
  }
}

}  // namespace
}  // namespace zt::models::quant
