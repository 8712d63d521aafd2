// Which models and caches the persistent decode kernel takes (infer/persistent_decode.h),
// checked on the CPU: the reason comes back by name for each thing the kernel leaves out, and
// a model it would take is refused only for not being on a GPU.
#include <gtest/gtest.h>

#include "infer/persistent_decode.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"

namespace zt::infer {
namespace {

std::string reason_for(const char* arch, DType dtype) {
  models::CausalLM model = models::load_model(testing::fixture_dir(arch), {Device::cpu(), dtype});
  PagedKvCache cache(model.config(), 4, 16, model.dtype(), model.device());
  return PersistentDecode::unsupported(model, cache);
}

TEST(PersistentDecode, SaysWhyAModelCannotTakeIt) {
  EXPECT_EQ(reason_for("qwen3", DType::kBF16), "q/k norms (Qwen3) are not in the kernel");
  EXPECT_EQ(reason_for("glm4", DType::kBF16), "post-attention and post-MLP norms (glm4) are not in the kernel");
  EXPECT_EQ(reason_for("qwen2", DType::kF32), "the weights are not bfloat16 or float16");
  for (const char* arch : {"qwen2", "glm", "chatglm"})
    EXPECT_EQ(reason_for(arch, DType::kBF16), "the model is not on a GPU");
}

}  // namespace
}  // namespace zt::infer
