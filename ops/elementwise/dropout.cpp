#include "ops/elementwise/dropout.h"

#include <string>

#include "cuda/elementwise/dropout.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/philox.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

template <typename T>
void dropout_cpu(const T* x, T* out, std::int64_t n, float p, host::Acc<T> scale, const DropoutConfig& config) {
  for (std::int64_t i = 0; i < n; ++i) {
    bool keep = philox::uniform(config.seed, config.offset, static_cast<std::uint64_t>(i)) >= p;
    out[i] = keep ? host::store<T>(host::load(x[i]) * scale) : host::store<T>(0);
  }
}

Tensor apply(const char* op, const char* name, const Tensor& x_in, const DropoutConfig& config) {
  ZT_REQUIRE(x_in.defined(), std::string(op) + ": " + name + " is an undefined tensor");
  check_float_on_device(op, {name, &x_in});
  ZT_REQUIRE(config.p >= 0.0 && config.p <= 1.0,
             std::string(op) + ": p must lie in [0, 1], got " + std::to_string(config.p));
  Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  auto p = static_cast<float>(config.p);
  double scale = config.p < 1.0 ? 1.0 / (1.0 - config.p) : 0.0;
  if (x.device().is_cuda()) {
    cuda::dropout_apply(x.data_ptr(), out.data_ptr(), x.dtype(), x.numel(), p, static_cast<float>(scale), config.seed,
                        config.offset, current_stream());
    return out;
  }
  host::dispatch_float(x.dtype(), op, [&]<typename T>() {
    dropout_cpu<T>(x.data<T>(), out.data<T>(), x.numel(), p, static_cast<host::Acc<T>>(scale), config);
  });
  return out;
}

}  // namespace

Tensor dropout_forward(const Tensor& x, const DropoutConfig& config) {
  return apply("dropout_forward", "x", x, config);
}

Tensor dropout_backward(const Tensor& grad_out, const DropoutConfig& config) {
  return apply("dropout_backward", "grad_out", grad_out, config);
}

}  // namespace zt::ops
