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
  ZT_REQUIRE(dst.is_contiguous(), std::string(op) + ": dst must be contiguous");
  check_floating(op, {"dst", &dst});
  check_floating(op, {"src", &src_in});
  Tensor src = src_in.contiguous();
  const std::int64_t n = dst.numel();
  const auto f = static_cast<float>(factor);
  if (dst.device().is_cuda()) {
    check_cuda_float(op, {"dst", &dst});
    check_cuda_float(op, {"src", &src});
    cuda::accumulate(dst.data_ptr(), dst.dtype(), src.data_ptr(), src.dtype(), n, f, current_stream());
    return;
  }
  host::dispatch_float(dst.dtype(), op, [&]<typename D>() {
    D* out = dst.data<D>();
    host::dispatch_float(src.dtype(), op, [&]<typename S>() {
      const S* in = src.data<S>();
      using A = host::Acc<D>;
      for (std::int64_t i = 0; i < n; ++i)
        out[i] = host::store<D>(host::load(out[i]) + static_cast<A>(to_double(in[i])) * static_cast<A>(f));
    });
  });
}

}  // namespace zt::ops
