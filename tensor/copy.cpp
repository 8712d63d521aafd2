// Copies between any two tensors of one shape: any strides, dtypes and devices. On one
// device the copy is a strided cast; across devices the bytes move contiguously with
// cudaMemcpyAsync and any reordering or cast happens on the side where the data is.
#include <cmath>
#include <cstring>

#include "runtime/check.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"
#include "tensor/device_kernels.h"
#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

// Visits the element offsets of two same-shape layouts in row-major order.
template <typename F>
void for_each_offset_pair(const Shape& shape, const Shape& a_strides, const Shape& b_strides, F&& f) {
  std::int64_t numel = shape_numel(shape);
  if (numel == 0) return;
  std::size_t ndim = shape.size();
  std::vector<std::int64_t> index(ndim, 0);
  std::int64_t a = 0, b = 0;
  for (std::int64_t n = 0; n < numel; ++n) {
    f(a, b);
    for (std::size_t d = ndim; d-- > 0;) {
      if (++index[d] < shape[d]) {
        a += a_strides[d];
        b += b_strides[d];
        break;
      }
      a -= a_strides[d] * (shape[d] - 1);
      b -= b_strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
}

void copy_on_host(Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    if (dst.nbytes() > 0) std::memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return;
  }
  dispatch_dtype(src.dtype(), [&]<typename S>() {
    dispatch_dtype(dst.dtype(), [&]<typename D>() {
      const S* in = src.data<S>();
      D* out = dst.data<D>();
      for_each_offset_pair(dst.shape(), dst.strides(), src.strides(),
                           [&](std::int64_t o, std::int64_t i) { out[o] = convert_element<D>(in[i]); });
    });
  });
}

kernels::StridedLayout layout_of(const Tensor& t) {
  ZT_REQUIRE(t.dim() <= kernels::kMaxDims, "tensors of more than " + std::to_string(kernels::kMaxDims) +
                                               " dimensions are not supported on the GPU, got " + shape_str(t.shape()));
  kernels::StridedLayout layout;
  layout.ndim = static_cast<int>(t.dim());
  for (int d = 0; d < layout.ndim; ++d) {
    layout.shape[d] = t.shape()[d];
    layout.strides[d] = t.strides()[d];
  }
  return layout;
}

void copy_on_device(Tensor& dst, const Tensor& src, cudaStream_t stream) {
  DeviceGuard guard(dst.device().index);
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    ZT_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  kernels::strided_copy(src.data_ptr(), src.dtype(), layout_of(src), dst.data_ptr(), dst.dtype(), layout_of(dst),
                        dst.numel(), stream);
}

// Across devices: make src contiguous where it lives, move bytes, then cast/reorder at dst.
// Returns true when a host temporary was involved, so the caller must wait for the stream.
bool copy_across_devices(Tensor& dst, const Tensor& src, cudaStream_t stream) {
  bool host_temporary = false;
  Tensor packed = src;
  if (!src.is_contiguous()) {
    packed = Tensor::empty(src.shape(), src.dtype(), src.device(), stream);
    packed.copy_from_async(src, stream);
    host_temporary |= src.device().is_cpu();
  }
  Tensor landing = dst;
  if (!dst.is_contiguous() || dst.dtype() != src.dtype()) {
    landing = Tensor::empty(src.shape(), src.dtype(), dst.device(), stream);
    host_temporary |= dst.device().is_cpu();
  }
  if (packed.nbytes() > 0) {
    DeviceGuard guard((dst.device().is_cuda() ? dst.device() : src.device()).index);
    ZT_CUDA_CHECK(cudaMemcpyAsync(landing.data_ptr(), packed.data_ptr(), packed.nbytes(), cudaMemcpyDefault, stream));
  }
  if (landing.data_ptr() != dst.data_ptr() || landing.strides() != dst.strides()) {
    if (dst.device().is_cpu()) ZT_CUDA_CHECK(cudaStreamSynchronize(stream));
    dst.copy_from_async(landing, stream);
  }
  return host_temporary;
}

void check_copy_shapes(const Tensor& dst, const Tensor& src) {
  ZT_REQUIRE(dst.defined() && src.defined(), "copy between undefined tensors");
  ZT_REQUIRE(dst.shape() == src.shape(), "copy from shape " + shape_str(src.shape()) + " into shape " +
                                             shape_str(dst.shape()) +
                                             ": shapes must be equal (use expand() to broadcast)");
}

}  // namespace

void Tensor::copy_from_async(const Tensor& src, cudaStream_t stream) {
  check_copy_shapes(*this, src);
  if (device().is_cpu() && src.device().is_cpu()) return copy_on_host(*this, src);
  if (device() == src.device()) return copy_on_device(*this, src, stream);
  if (copy_across_devices(*this, src, stream)) ZT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// A copy within one device is ordered on the stream like any kernel and needs no wait (and
// must not wait while the stream is captured into a CUDA graph); a copy to or from the host
// is complete when this returns.
void Tensor::copy_from(const Tensor& src) {
  copy_from_async(src, current_stream());
  if (device() == src.device()) return;
  ZT_CUDA_CHECK(cudaStreamSynchronize(current_stream()));
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(Device target) const { return to(target, dtype_); }
Tensor Tensor::to(DType target) const { return to(device(), target); }

Tensor Tensor::to(Device target, DType target_dtype) const {
  if (target == device() && target_dtype == dtype_) return *this;
  Tensor out = empty(shape_, target_dtype, target);
  out.copy_from(*this);
  return out;
}

void Tensor::fill_(double value) {
  // +0 is all-zero bytes in every dtype: one memset rather than an element-wise copy of a
  // broadcast scalar, which costs seconds on the gigabytes of an offloaded partition.
  if (value == 0.0 && !std::signbit(value) && device().is_cpu() && is_contiguous()) {
    if (numel() > 0) std::memset(data_ptr(), 0, nbytes());
    return;
  }
  Tensor scalar = from_values({value}, {}, dtype_).to(device());
  copy_from(scalar.expand(shape_));
}

}  // namespace zt
