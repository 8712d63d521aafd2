// The attn_impl choice through autograd: cuDNN's and zerotune's attention give the same
// output and gradients on the GPU, and cuDNN on the CPU is refused naming the alternative.
#include <gtest/gtest.h>

#include "autograd/functions.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using autograd::Variable;

struct AttentionRun {
  Tensor out, grad_q, grad_k, grad_v;
};

AttentionRun run(ops::AttentionImpl impl, Device device) {
  auto make = [&](const Shape& shape, std::uint64_t seed) {
    return Variable(testing::random_tensor(shape, seed, DType::kF32).to(device, DType::kBF16), true);
  };
  Variable q = make({40, 4, 64}, 1), k = make({40, 2, 64}, 2), v = make({40, 2, 64}, 3);
  Tensor cu = Tensor::from_values({0, 17, 40}, {3}, DType::kI32).to(device);
  Variable out = autograd::attention(q, k, v, cu, {0.125, true}, Variable(), Variable(), impl);
  autograd::sum(autograd::cast(out, DType::kF32)).backward();
  return {out.data().to(Device::cpu(), DType::kF64), q.grad().to(Device::cpu(), DType::kF64),
          k.grad().to(Device::cpu(), DType::kF64), v.grad().to(Device::cpu(), DType::kF64)};
}

TEST(AttentionImplGpu, CudnnAndZerotuneAgreeThroughAutograd) {
  ZT_SKIP_WITHOUT_GPU();
  AttentionRun a = run(ops::AttentionImpl::kZerotune, Device::cuda());
  AttentionRun b = run(ops::AttentionImpl::kCudnn, Device::cuda());
  EXPECT_LE(relative_error(a.out, b.out), 2e-2);
  EXPECT_LE(relative_error(a.grad_q, b.grad_q), 3e-2);
  EXPECT_LE(relative_error(a.grad_k, b.grad_k), 3e-2);
  EXPECT_LE(relative_error(a.grad_v, b.grad_v), 3e-2);
}

TEST(AttentionImpl, CudnnOnTheCpuIsRefusedNamingTheAlternative) {
  testing::expect_mentions(testing::error_of([] { run(ops::AttentionImpl::kCudnn, Device::cpu()); }),
                           {"attn_impl=zerotune"});
}

}  // namespace
}  // namespace zt
