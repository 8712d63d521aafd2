#include "ops/elementwise/accumulate.h"

#include "cuda/elementwise/accumulate.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {

void accumulate_(const Tensor& dst, const Tensor& src_in, double factor) {
  const char* op = "accumulate_";
  check_same_device(op, {{"dst", &dst}, {"src", &src_in}});
  check_same_shape(op, {"dst", &dst}, {"src", &src_in});
  ZT_REQUIRE(dst.dtype() == DType::kF32 && dst.is_contiguous(),
             std::string(op) + ": dst must be a contiguous float32 tensor, got " + dtype_name(dst.dtype()) +
                 (dst.is_contiguous() ? "" : " (not contiguous)"));
  check_floating(op, {"src", &src_in});
  Tensor src = src_in.contiguous();
  const std::int64_t n = dst.numel();
  const auto f = static_cast<float>(factor);
  if (dst.device().is_cuda()) {
    check_cuda_float(op, {"src", &src});
    cuda::accumulate_float32(dst.data<float>(), src.data_ptr(), src.dtype(), n, f, current_stream());
    return;
  }
  float* out = dst.data<float>();
  host::dispatch_float(src.dtype(), op, [&]<typename T>() {
    const T* in = src.data<T>();
    for (std::int64_t i = 0; i < n; ++i) out[i] += static_cast<float>(to_double(in[i])) * f;
  });
}

}  // namespace zt::ops
