// Which models and caches the persistent decode kernel takes (infer/persistent_decode.h),
// checked on the CPU: the reason comes back by name for each thing the kernel leaves out, and
// a model it would take is refused only for not being on a GPU.
#include <gtest/gtest.h>

#include "infer/persistent_decode.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"

namespace zt::infer {
namespace {

std::string reason_for(const char* arch, DType dtype, DType cache_dtype) {
  models::CausalLM model = models::load_model(testing::fixture_dir(arch), {Device::cpu(), dtype});
  PagedKvCache cache(model.config(), 4, 16, cache_dtype, model.device());
  return PersistentDecode::unsupported(model, cache);
}

std::string reason_for(const char* arch, DType dtype) { return reason_for(arch, dtype, dtype); }

TEST(PersistentDecode, SaysWhyAModelCannotTakeIt) {
  EXPECT_EQ(reason_for("qwen3", DType::kBF16), "q/k norms (Qwen3) are not in the kernel");
  EXPECT_EQ(reason_for("glm4", DType::kBF16), "post-attention and post-MLP norms (glm4) are not in the kernel");
  EXPECT_EQ(reason_for("qwen2", DType::kF32), "the weights are not bfloat16 or float16");
  EXPECT_EQ(reason_for("qwen2", DType::kBF16, DType::kF16), "the KV cache's dtype is not the weights'");
  for (const char* arch : {"qwen2", "glm", "chatglm"})
    EXPECT_EQ(reason_for(arch, DType::kBF16), "the model is not on a GPU");
}

}  // namespace
}  // namespace zt::infer
