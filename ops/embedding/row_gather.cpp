#include "ops/embedding/row_gather.h"

#include <string>
#include <type_traits>

#include "cuda/embedding/row_gather.cuh"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"
#include "tensor/dispatch.h"

namespace zt::ops {
namespace {

void check_index(const Tensor& index, std::int64_t n, const Tensor& x, const char* name) {
  ZT_REQUIRE(index.dtype() == DType::kI32 && index.dim() == 1 && index.numel() == n && index.device() == x.device(),
             std::string("gather_rows: ") + name + " must be int32 [" + std::to_string(n) + "] on " + x.device().str() +
                 ", got " + dtype_name(index.dtype()) + " " + shape_str(index.shape()) + " on " + index.device().str());
}

template <typename T>
void cpu_gather(const Tensor& x, const Tensor& first, const Tensor& second, Tensor& out) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const std::int64_t rows = x.size(0), width = x.size(1);
  const T* src = x.data<T>();
  T* dst = out.data<T>();
  const std::int32_t* a = first.data<std::int32_t>();
  const std::int32_t* b = second.defined() ? second.data<std::int32_t>() : nullptr;
  for (std::int64_t i = 0; i < out.size(0); ++i) {
    const std::int32_t ia = a[i], ib = b != nullptr ? b[i] : -1;
    ZT_REQUIRE(ia >= -1 && ia < rows && ib >= -1 && ib < rows, "gather_rows: index entry " + std::to_string(i) + " (" +
                                                                   std::to_string(ia) + ", " + std::to_string(ib) +
                                                                   ") lies outside [-1, " + std::to_string(rows) + ")");
    for (std::int64_t h = 0; h < width; ++h) {
      if (ib < 0 && ia >= 0) {
        dst[i * width + h] = src[ia * width + h];
        continue;
      }
      Acc sum = 0;
      if (ia >= 0) sum += static_cast<Acc>(to_double(src[ia * width + h]));
      if (ib >= 0) sum += static_cast<Acc>(to_double(src[ib * width + h]));
      dst[i * width + h] = from_double<T>(sum);
    }
  }
}

}  // namespace

Tensor gather_rows(const Tensor& x, const Tensor& first, const Tensor& second) {
  check_dim("gather_rows", {"x", &x}, 2);
  check_float_on_device("gather_rows", {"x", &x});
  const std::int64_t n = first.numel();
  check_index(first, n, x, "first");
  if (second.defined()) check_index(second, n, x, "second");
  const Tensor rows = x.contiguous(), a = first.contiguous(), b = second.defined() ? second.contiguous() : Tensor();
  Tensor out = Tensor::empty({n, x.size(1)}, x.dtype(), x.device());
  if (x.device().is_cuda()) {
    DeviceGuard guard(x.device().index);
    cuda::gather_rows_summed(rows.data_ptr(), a.data<std::int32_t>(), b.defined() ? b.data<std::int32_t>() : nullptr,
                             out.data_ptr(), n, x.size(1), x.dtype(), current_stream());
    return out;
  }
  dispatch_dtype(rows.dtype(), [&]<typename T>() { cpu_gather<T>(rows, a, b, out); });
  return out;
}

}  // namespace zt::ops
