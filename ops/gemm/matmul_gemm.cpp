#include "ops/gemm/matmul_gemm.h"

#include "cuda/gemm/cublaslt_gemm.h"
#include "ops/elementwise/elementwise.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops::detail {
namespace {

struct ProductSizes {
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  bool batched = false;  // either operand 3-D: the result is [batch, m, n]
};

ProductSizes product_sizes(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b) {
  ProductSizes s;
  s.m = a.size(transpose_a ? -1 : -2);
  s.k = a.size(transpose_a ? -2 : -1);
  s.n = b.size(transpose_b ? -2 : -1);
  s.batched = a.dim() == 3 || b.dim() == 3;
  if (s.batched) s.batch = a.dim() == 3 ? a.size(0) : b.size(0);
  return s;
}

Shape result_shape(const ProductSizes& s) { return s.batched ? Shape{s.batch, s.m, s.n} : Shape{s.m, s.n}; }

// ---- CPU reference ----

// op(x) as a contiguous [batch, rows, cols] tensor of the accumulation dtype.
Tensor batched_operand(const Tensor& x, bool transpose, std::int64_t batch, DType accumulate) {
  Tensor x3 = x.dim() == 3 ? x : x.unsqueeze(0).expand({batch, x.size(0), x.size(1)});
  if (transpose) x3 = x3.transpose(1, 2);
  return x3.to(accumulate).contiguous();
}

template <typename T>
void multiply(const T* a, const T* b, const T* bias, T* out, const ProductSizes& s) {
  for (std::int64_t batch = 0; batch < s.batch; ++batch) {
    const T* a_batch = a + batch * s.m * s.k;
    const T* b_batch = b + batch * s.k * s.n;
    for (std::int64_t i = 0; i < s.m; ++i) {
      T* row = out + (batch * s.m + i) * s.n;
      for (std::int64_t j = 0; j < s.n; ++j) row[j] = T(0);
      for (std::int64_t p = 0; p < s.k; ++p) {
        T scale = a_batch[i * s.k + p];
        const T* b_row = b_batch + p * s.n;
        for (std::int64_t j = 0; j < s.n; ++j) row[j] += scale * b_row[j];
      }
      if (bias != nullptr)
        for (std::int64_t j = 0; j < s.n; ++j) row[j] += bias[j];
    }
  }
}

Tensor cpu_gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& bias,
                const ProductSizes& s) {
  DType accumulate = a.dtype() == DType::kF64 || a.dtype() == DType::kF32 ? DType::kF64 : DType::kF32;
  Tensor lhs = batched_operand(a, transpose_a, s.batch, accumulate);
  Tensor rhs = batched_operand(b, transpose_b, s.batch, accumulate);
  Tensor bias_acc = bias.defined() ? bias.to(accumulate).contiguous() : Tensor();
  Tensor out = Tensor::empty({s.batch, s.m, s.n}, accumulate);
  auto run = [&]<typename T>() {
    multiply<T>(lhs.data<T>(), rhs.data<T>(), bias_acc.defined() ? bias_acc.data<T>() : nullptr, out.data<T>(), s);
  };
  if (accumulate == DType::kF64)
    run.template operator()<double>();
  else
    run.template operator()<float>();
  return out.to(a.dtype()).view(result_shape(s));
}

// ---- cuBLASLt ----

// Passes x's last two dims to cuBLASLt as stored: row-major (unit column stride) as is,
// column-major (unit row stride) as its row-major transpose with the transpose flag flipped.
// Only a matrix with neither unit stride is copied, into `holder`.
cuda::GemmOperand gemm_operand(const Tensor& x, bool transpose, Tensor& holder) {
  std::int64_t rows = x.size(-2), cols = x.size(-1), row_stride = x.stride(-2), col_stride = x.stride(-1);
  std::int64_t batch_stride = x.dim() == 3 && x.size(0) > 1 ? x.stride(0) : 0;
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= cols))
    return {x.data_ptr(), rows, cols, rows == 1 ? cols : row_stride, batch_stride, transpose};
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= rows))
    return {x.data_ptr(), cols, rows, cols == 1 ? rows : col_stride, batch_stride, !transpose};
  holder = x.contiguous();
  std::int64_t packed_batch_stride = holder.dim() == 3 && holder.size(0) > 1 ? rows * cols : 0;
  return {holder.data_ptr(), rows, cols, cols, packed_batch_stride, transpose};
}

Tensor cuda_gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& bias,
                 const ProductSizes& s) {
  DeviceGuard guard(a.device().index);
  Tensor a_holder, b_holder;
  cuda::GemmOperand lhs = gemm_operand(a, transpose_a, a_holder);
  cuda::GemmOperand rhs = gemm_operand(b, transpose_b, b_holder);
  Tensor out = Tensor::empty(result_shape(s), a.dtype(), a.device());
  cuda::GemmResult result{out.data_ptr(), s.m, s.n, s.n, s.batch > 1 ? s.m * s.n : 0};
  Tensor packed_bias = bias.defined() ? bias.contiguous() : Tensor();
  cuda::gemm(a.dtype(), lhs, rhs, result, s.batch, packed_bias.defined() ? packed_bias.data_ptr() : nullptr,
             current_stream());
  return out;
}

// A sum over nothing: zeros, or the bias on every row.
Tensor empty_sum(const Tensor& a, const Tensor& bias, const ProductSizes& s) {
  Tensor out = Tensor::empty(result_shape(s), a.dtype(), a.device());
  if (bias.defined())
    out.copy_from(bias.expand(out.shape()));
  else
    out.zero_();
  return out;
}

void cuda_gemm_add(const Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                   const ProductSizes& s) {
  DeviceGuard guard(a.device().index);
  Tensor a_holder, b_holder;
  cuda::GemmOperand lhs = gemm_operand(a, transpose_a, a_holder);
  cuda::GemmOperand rhs = gemm_operand(b, transpose_b, b_holder);
  cuda::gemm_accumulate(a.dtype(), out.dtype(), lhs, rhs, {out.data_ptr(), s.m, s.n, s.n, 0}, 1.0f, "gemm_add",
                        current_stream());
}

}  // namespace

void gemm_add(const Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b) {
  ProductSizes s = product_sizes(a, transpose_a, b, transpose_b);
  ZT_REQUIRE(!s.batched && out.is_contiguous() && out.shape() == Shape({s.m, s.n}) &&
                 (out.dtype() == a.dtype() || out.dtype() == DType::kF32),
             "gemm_add: out " + shape_str(out.shape()) + " " + dtype_name(out.dtype()) +
                 " is not the contiguous [m, n] of the product in its dtype or float32");
  if (s.m == 0 || s.n == 0 || s.k == 0) return;
  if (a.device().is_cuda()) return cuda_gemm_add(out, a, transpose_a, b, transpose_b, s);
  Tensor sum = out;  // a handle: the copy writes out
  sum.copy_from(add_forward(out, cpu_gemm(a, transpose_a, b, transpose_b, Tensor(), s).to(out.dtype())));
}

Tensor gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& bias) {
  ProductSizes s = product_sizes(a, transpose_a, b, transpose_b);
  if (s.batch == 0 || s.m == 0 || s.n == 0) return Tensor::empty(result_shape(s), a.dtype(), a.device());
  if (s.k == 0) return empty_sum(a, bias, s);
  if (a.device().is_cuda()) return cuda_gemm(a, transpose_a, b, transpose_b, bias, s);
  return cpu_gemm(a, transpose_a, b, transpose_b, bias, s);
}

}  // namespace zt::ops::detail
