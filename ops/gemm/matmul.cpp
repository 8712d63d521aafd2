#include "ops/gemm/matmul.h"

#include <string>

#include "ops/gemm/matmul_gemm.h"
#include "ops/op_checks.h"
#include "runtime/error.h"

namespace zt::ops {
namespace {

std::string operand_str(const Tensor& x, bool transposed) {
  return shape_str(x.shape()) + (transposed ? " (used transposed)" : "");
}

void check_operands(const char* op, const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  check_same_device(op, {{"a", &a}, {"b", &b}});
  check_same_dtype(op, {{"a", &a}, {"b", &b}});
  check_float_on_device(op, {"a", &a});
  for (const NamedTensor& x : {NamedTensor{"a", &a}, NamedTensor{"b", &b}})
    ZT_REQUIRE(
        x.second->dim() == 2 || x.second->dim() == 3,
        std::string(op) + ": " + x.first + " must be 2-D or 3-D (batched), got shape " + shape_str(x.second->shape()));
  std::int64_t k_a = a.size(transpose_a ? -2 : -1), k_b = b.size(transpose_b ? -1 : -2);
  ZT_REQUIRE(k_a == k_b, std::string(op) + ": inner dimensions differ: a has shape " + operand_str(a, transpose_a) +
                             " (k = " + std::to_string(k_a) + ") but b has shape " + operand_str(b, transpose_b) +
                             " (k = " + std::to_string(k_b) + ")");
  if (a.dim() == 3 && b.dim() == 3)
    ZT_REQUIRE(a.size(0) == b.size(0), std::string(op) + ": batch sizes differ: a has shape " + shape_str(a.shape()) +
                                           " but b has shape " + shape_str(b.shape()));
}

Shape product_shape(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  std::int64_t m = a.size(transpose_a ? -1 : -2), n = b.size(transpose_b ? -2 : -1);
  if (a.dim() == 3) return {a.size(0), m, n};
  if (b.dim() == 3) return {b.size(0), m, n};
  return {m, n};
}

// d op(a) = G · op(b)ᵀ per batch entry. A 2-D a shared by a batched b gets the sum over the
// batch, computed as one product: [G_0 | G_1 | ...] (m × batch·n) times op(b_i)ᵀ stacked
// (batch·n × k).
Tensor grad_of_a(const Tensor& g, const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  if (a.dim() == 2 && b.dim() == 3) {
    std::int64_t batch = b.size(0), m = g.size(1), n = g.size(2), k = a.size(transpose_a ? 0 : 1);
    Tensor g_side_by_side = g.permute({1, 0, 2}).reshape({m, batch * n});
    Tensor b_t_stacked = (transpose_b ? b : b.transpose(1, 2)).reshape({batch * n, k});
    return transpose_a ? detail::gemm(b_t_stacked, true, g_side_by_side, true)
                       : detail::gemm(g_side_by_side, false, b_t_stacked, false);
  }
  return transpose_a ? detail::gemm(b, transpose_b, g, true) : detail::gemm(g, false, b, !transpose_b);
}

// d op(b) = op(a)ᵀ · G per batch entry. A 2-D b shared by a batched a gets the sum over the
// batch: op(a_i) stacked (batch·m × k), transposed, times G stacked (batch·m × n).
Tensor grad_of_b(const Tensor& g, const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  if (b.dim() == 2 && a.dim() == 3) {
    std::int64_t batch = a.size(0), m = g.size(1), n = g.size(2), k = b.size(transpose_b ? 1 : 0);
    Tensor a_stacked = (transpose_a ? a.transpose(1, 2) : a).reshape({batch * m, k});
    Tensor g_stacked = g.reshape({batch * m, n});
    return transpose_b ? detail::gemm(g_stacked, true, a_stacked, false)
                       : detail::gemm(a_stacked, true, g_stacked, false);
  }
  return transpose_b ? detail::gemm(g, true, a, transpose_a) : detail::gemm(a, !transpose_a, g, false);
}

}  // namespace

Tensor matmul_forward(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  check_operands("matmul", a, b, transpose_a, transpose_b);
  return detail::gemm(a, transpose_a, b, transpose_b);
}

MatmulGrads matmul_backward(const Tensor& grad_out, const Tensor& a, const Tensor& b, bool transpose_a,
                            bool transpose_b) {
  const char* op = "matmul_backward";
  check_operands(op, a, b, transpose_a, transpose_b);
  check_same_device(op, {{"a", &a}, {"grad_out", &grad_out}});
  check_same_dtype(op, {{"a", &a}, {"grad_out", &grad_out}});
  Shape expected = product_shape(a, b, transpose_a, transpose_b);
  ZT_REQUIRE(grad_out.shape() == expected, std::string(op) + ": grad_out has shape " + shape_str(grad_out.shape()) +
                                               " but the product of a " + operand_str(a, transpose_a) + " and b " +
                                               operand_str(b, transpose_b) + " has shape " + shape_str(expected));
  return {grad_of_a(grad_out, a, b, transpose_a, transpose_b), grad_of_b(grad_out, a, b, transpose_a, transpose_b)};
}

}  // namespace zt::ops
