// The inference engine on a 4-bit base on the GPU (zerotune generate, chat and serve with a
// "-bnb-4bit" folder or --quantization_bit 4): every architecture's fixture saved in
// bitsandbytes' layout and loaded kept 4-bit (prefill layers dequantized by cuda/quant4's
// kernel as a step runs, or in bfloat16 multiplied by its 4-bit GEMM when the step has at most
// kGemm4MaxRows tokens; decode steps through its 4-bit GEMV; eager) gives the greedy tokens of
// the same folder dequantized at load, with and without a LoRA adapter beside the 4-bit
// weights, float32 and bfloat16, and the device holds fewer bytes for it.
#include <gtest/gtest.h>

#include <filesystem>

#include "infer/engine.h"
#include "models/peft/lora.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "runtime/memory/caching_allocator.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/process_test_util.h"
#include "tests/common/test_util.h"

namespace zt::infer {
namespace {

namespace fs = std::filesystem;
using Tokens = std::vector<std::int64_t>;

// The same LoRA with random B on `model` (B starts at zero, which would change nothing).
void attach_random_lora(models::CausalLM& model) {
  models::attach_lora(model,
                      {.rank = 4,
                       .alpha = 8.0,
                       .target_modules = {"q_proj", "query_key_value", "down_proj", "dense_4h_to_h"},
                       .base_model_name_or_path = ""},
                      7);
  std::uint64_t offset = 0;
  for (const models::NamedParameter& p : models::lora_parameters(model))
    if (p.name.find("lora_B") != std::string::npos) {
      Tensor b = p.variable.data();  // shares the parameter's storage
      b.copy_from(Tensor::normal(b.shape(), 11, offset++, 0.0, 0.5).to(b.device(), b.dtype()));
    }
}

std::vector<GenerationRequest> requests() {
  models::GenerationOptions options;
  options.max_new_tokens = 12;
  return {{{3, 17, 40, 41, 9, 12}, options}, {{7, 7, 300}, options}, {{5}, options}};
}

class FourBitEngineGpu : public testing::FolderTest {};

TEST_F(FourBitEngineGpu, GreedyTokensEqualTheDequantizedModelsWithAndWithoutLora) {
  ZT_SKIP_WITHOUT_GPU();
  for (const char* arch : {"qwen2", "qwen3", "glm", "glm4", "chatglm"}) {
    const std::string folder = (dir_ / arch).string();
    models::quant::save_bnb_4bit_model(models::load_model(testing::fixture_dir(arch)), folder, {});
    for (const DType dtype : {DType::kF32, DType::kBF16}) {
      const std::size_t before = device_allocator(0).stats().allocated_bytes;
      models::CausalLM four_bit =
          models::load_model(folder, {.device = Device::cuda(), .dtype = dtype, .keep_4bit_weights = true});
      const std::size_t four_bit_bytes = device_allocator(0).stats().allocated_bytes - before;
      models::CausalLM dense = models::load_model(folder, {.device = Device::cuda(), .dtype = dtype});
      const std::size_t dense_bytes = device_allocator(0).stats().allocated_bytes - before - four_bit_bytes;
      EXPECT_LT(four_bit_bytes, dense_bytes) << arch << ": the device holds no less for the 4-bit base";
      ASSERT_NE(four_bit.parameter_gatherer(), nullptr) << arch;
      EXPECT_LT(models::quant::resident_weight_bytes(four_bit), models::quant::resident_weight_bytes(dense)) << arch;
      const std::string where = std::string(arch) + " " + dtype_name(dtype);
      const std::vector<Tokens> expected = Engine(dense, {.cuda_graphs = false}).run(requests());
      EXPECT_EQ(Engine(four_bit, {}).run(requests()), expected) << where;
      attach_random_lora(four_bit);
      attach_random_lora(dense);
      const std::vector<Tokens> adapted = Engine(dense, {.cuda_graphs = false}).run(requests());
      EXPECT_NE(adapted, expected) << where << ": the adapter changed nothing";
      EXPECT_EQ(Engine(four_bit, {}).run(requests()), adapted) << where << " with LoRA";
    }
  }
}

}  // namespace
}  // namespace zt::infer
