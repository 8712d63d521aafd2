// Decode on a 4-bit base on the GPU: each step's linears run cuda/quant4's 4-bit GEMV on the
// packed weights (no layer gathered); the prefill of a 12-token prompt runs its 4-bit GEMM in
// bfloat16 and gathers in float32 (which the GEMM does not take). The tiny model
// saved in bitsandbytes' layout and loaded kept 4-bit gives the greedy tokens of the same
// folder dequantized at load (the gather path's weights, through cuBLASLt), with a LoRA beside
// the weights, in float32 and bfloat16; its logits on a decode-sized forward agree within the
// rounding a reordered sum explains.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/grad_mode.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_weight.h"
#include "models/reference/generate.h"
#include "models/weights/weights.h"
#include "tests/common/process_test_util.h"
#include "tests/common/test_util.h"
#include "tests/models/quant/held_decode_util.h"

namespace zt::models::quant {
namespace {

const std::string kTiny = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";
using Tokens = std::vector<std::int64_t>;

class HeldDecodeGpu : public testing::FolderTest {};

// A 4-bit folder loaded on the GPU in `dtype` twice: kept in 4 bits, and dequantized; the same
// random LoRA beside both.
struct FourBitAndDense {
  CausalLM four_bit, dense;
};
FourBitAndDense load_on_the_gpu(const std::filesystem::path& dir, DType dtype) {
  FourBitAndDense models{
      load_model(dir.string(), {.device = Device::cuda(), .dtype = dtype, .keep_4bit_weights = true}),
      load_model(dir.string(), {.device = Device::cuda(), .dtype = dtype})};
  attach_random_lora(models.four_bit);
  attach_random_lora(models.dense);
  return models;
}

TEST_F(HeldDecodeGpu, GreedyTokensEqualTheGatherPaths) {
  ZT_SKIP_WITHOUT_GPU();
  save_bnb_4bit_model(load_model(kTiny), dir_.string(), {});
  GenerationOptions options;
  options.max_new_tokens = 16;
  const Tokens long_prompt{3, 17, 40, 41, 9, 12, 250, 7, 7, 300, 21, 64};  // the GEMM's, or gathers
  const Tokens short_prompt{5, 88, 130};                                   // the GEMV's
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    auto [four_bit, dense] = load_on_the_gpu(dir_, dtype);
    GatherCounter& counter = GatherCounter::install(four_bit);
    for (const Tokens& prompt : {long_prompt, short_prompt}) {
      const std::string what = std::string(dtype_name(dtype)) + ", a prompt of " + std::to_string(prompt.size());
      counter.layer_gathers = 0;
      const Tokens tokens = generate(four_bit, prompt, options);
      EXPECT_EQ(tokens, generate(dense, prompt, options)) << what;
      const bool prefill_held = multiplies_packed(static_cast<std::int64_t>(prompt.size()), dtype);
      const int prefill_gathers = prefill_held ? 0 : static_cast<int>(four_bit.config().num_layers);
      EXPECT_EQ(counter.layer_gathers, prefill_gathers) << what << ": the decode steps or a held prefill gathered";
    }
  }
}

TEST_F(HeldDecodeGpu, DecodeSizedLogitsAgreeWithTheDequantizedModel) {
  ZT_SKIP_WITHOUT_GPU();
  save_bnb_4bit_model(load_model(kTiny), dir_.string(), {});
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    auto [four_bit, dense] = load_on_the_gpu(dir_, dtype);
    const Tensor ids = Tensor::from_values({5, 17, 230, 41, 9, 300}, {6}, DType::kI64);
    const Tensor positions = Tensor::from_values({0, 1, 2, 0, 1, 2}, {6}, DType::kI64);
    const Tensor cu = Tensor::from_values({0, 3, 6}, {3}, DType::kI32);
    autograd::NoGradGuard off;
    const std::vector<double> a =
        four_bit.forward(ids, positions, cu).data().to(Device::cpu(), DType::kF32).to_vector();
    const std::vector<double> b = dense.forward(ids, positions, cu).data().to(Device::cpu(), DType::kF32).to_vector();
    ASSERT_EQ(a.size(), b.size());
    double scale = 0;
    for (double v : b) scale = std::max(scale, std::fabs(v));
    // float32: sums reordered, a few ulps through the layers; bfloat16: each layer's outputs may
    // round to a neighbouring bfloat16 (2^-8 relative), which the next layers carry on.
    const double tolerance = (dtype == DType::kF32 ? 1e-4 : 5e-2) * scale;
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], tolerance) << dtype_name(dtype) << " logit " << i;
  }
}

}  // namespace
}  // namespace zt::models::quant
