#include <cmath>

#include "runtime/error.h"
#include "runtime/philox.h"
#include "runtime/streams/current_stream.h"
#include "tensor/device_kernels.h"
#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

Tensor random_tensor(const Shape& shape, std::uint64_t seed, std::uint64_t offset, kernels::Distribution distribution,
                     float scale, float shift, DType dtype, Device device) {
  ZT_REQUIRE(is_floating(dtype), std::string("random tensors need a floating dtype, got ") + dtype_name(dtype));
  Tensor out = Tensor::empty(shape, dtype, device);
  std::int64_t n = out.numel();
  if (device.is_cuda()) {
    kernels::philox_fill(out.data_ptr(), dtype, n, seed, offset, distribution, scale, shift, current_stream());
    return out;
  }
  bool normal = distribution == kernels::Distribution::kNormal;
  dispatch_dtype(dtype, [&]<typename T>() {
    T* data = out.data<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      float draw = normal ? philox::normal(seed, offset, i) : philox::uniform(seed, offset, i);
      data[i] = convert_element<T>(std::fmaf(draw, scale, shift));
    }
  });
  return out;
}

}  // namespace

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor out = empty(shape, dtype, device);
  out.fill_(value);
  return out;
}

Tensor Tensor::arange(std::int64_t end, DType dtype, Device device) {
  return arange(0.0, static_cast<double>(end), 1.0, dtype, device);
}

Tensor Tensor::arange(double start, double end, double step, DType dtype, Device device) {
  ZT_REQUIRE(step != 0.0, "arange step must not be zero");
  double count = std::ceil((end - start) / step);
  std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  Tensor out = empty({n}, dtype, device);
  if (device.is_cuda()) {
    kernels::arange(out.data_ptr(), dtype, start, step, n, current_stream());
    return out;
  }
  dispatch_dtype(dtype, [&]<typename T>() {
    T* data = out.data<T>();
    for (std::int64_t i = 0; i < n; ++i) data[i] = from_double<T>(start + step * static_cast<double>(i));
  });
  return out;
}

Tensor Tensor::uniform(const Shape& shape, std::uint64_t seed, std::uint64_t offset, double low, double high,
                       DType dtype, Device device) {
  return random_tensor(shape, seed, offset, kernels::Distribution::kUniform, static_cast<float>(high - low),
                       static_cast<float>(low), dtype, device);
}

Tensor Tensor::normal(const Shape& shape, std::uint64_t seed, std::uint64_t offset, double mean, double std,
                      DType dtype, Device device) {
  return random_tensor(shape, seed, offset, kernels::Distribution::kNormal, static_cast<float>(std),
                       static_cast<float>(mean), dtype, device);
}

Tensor Tensor::from_values(const std::vector<double>& values, const Shape& shape, DType dtype) {
  ZT_REQUIRE(shape_numel(shape) == static_cast<std::int64_t>(values.size()),
             std::to_string(values.size()) + " values do not fill shape " + shape_str(shape));
  Tensor out = empty(shape, dtype, Device::cpu());
  dispatch_dtype(dtype, [&]<typename T>() {
    T* data = out.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) data[i] = from_double<T>(values[i]);
  });
  return out;
}

std::vector<double> Tensor::to_vector() const {
  Tensor host = to(Device::cpu()).contiguous();
  std::vector<double> values(static_cast<std::size_t>(host.numel()));
  dispatch_dtype(dtype_, [&]<typename T>() {
    const T* data = host.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = to_double(data[i]);
  });
  return values;
}

double Tensor::item() const {
  ZT_REQUIRE(numel() == 1, "item() needs a tensor of one element, got shape " + shape_str(shape_));
  return to_vector()[0];
}

}  // namespace zt
