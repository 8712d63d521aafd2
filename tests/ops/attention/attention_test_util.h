// Shapes and random inputs shared by the attention CPU and GPU tests, and the GPU tests'
// comparison against the CPU reference (with the worst element named on failure).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "ops/attention/attention.h"
#include "tests/common/op_test_util.h"

namespace zt::testing {

struct AttentionCase {
  std::vector<std::int64_t> lengths;  // one per sequence, packed back to back
  std::int64_t heads = 4;
  std::int64_t kv_heads = 2;
  std::int64_t head_dim = 8;
  std::int64_t prefix_len = 0;
  bool causal = true;
  bool deterministic = false;  // the GPU backward's dQ mode

  std::int64_t total() const {
    std::int64_t sum = 0;
    for (std::int64_t l : lengths) sum += l;
    return sum;
  }
  std::int64_t batch() const { return static_cast<std::int64_t>(lengths.size()); }
  ops::AttentionConfig config() const {
    return {1.0 / std::sqrt(static_cast<double>(head_dim)), causal, deterministic};
  }
  std::string str() const {
    std::string s = "lengths {";
    for (std::size_t i = 0; i < lengths.size(); ++i) s += (i ? ", " : "") + std::to_string(lengths[i]);
    return s + "} heads " + std::to_string(heads) + "/" + std::to_string(kv_heads) + " head_dim " +
           std::to_string(head_dim) + " prefix " + std::to_string(prefix_len) + (causal ? " causal" : " full") +
           (deterministic ? " deterministic" : "");
  }
};

struct AttentionTensors {
  Tensor q, k, v, cu_seqlens;
  ops::AttentionPrefix prefix;
};

inline Tensor cu_seqlens_of(const std::vector<std::int64_t>& lengths) {
  std::vector<double> offsets{0.0};
  for (std::int64_t l : lengths) offsets.push_back(offsets.back() + static_cast<double>(l));
  return Tensor::from_values(offsets, {static_cast<std::int64_t>(offsets.size())}, DType::kI32);
}

// CPU tensors of `dtype` with standard normal values.
inline AttentionTensors random_attention_inputs(const AttentionCase& c, DType dtype, std::uint64_t seed) {
  AttentionTensors t;
  t.q = Tensor::normal({c.total(), c.heads, c.head_dim}, seed, 0, 0.0, 1.0, dtype);
  t.k = Tensor::normal({c.total(), c.kv_heads, c.head_dim}, seed + 1, 0, 0.0, 1.0, dtype);
  t.v = Tensor::normal({c.total(), c.kv_heads, c.head_dim}, seed + 2, 0, 0.0, 1.0, dtype);
  t.cu_seqlens = cu_seqlens_of(c.lengths);
  if (c.prefix_len > 0) {
    Shape prefix_shape{c.batch(), c.prefix_len, c.kv_heads, c.head_dim};
    t.prefix.k = Tensor::normal(prefix_shape, seed + 3, 0, 0.0, 1.0, dtype);
    t.prefix.v = Tensor::normal(prefix_shape, seed + 4, 0, 0.0, 1.0, dtype);
  }
  return t;
}

inline AttentionTensors on_gpu(const AttentionTensors& t) {
  AttentionTensors g{
      t.q.to(Device::cuda()), t.k.to(Device::cuda()), t.v.to(Device::cuda()), t.cu_seqlens.to(Device::cuda()), {}};
  if (t.prefix.k.defined()) g.prefix = {t.prefix.k.to(Device::cuda()), t.prefix.v.to(Device::cuda())};
  return g;
}

// "index [i, j, k]: gpu x, cpu y" for the element where two same-shaped tensors differ most
// (a NaN counting as the largest difference), so a failure points at a row, head and column.
inline std::string worst_difference(const Tensor& gpu, const Tensor& cpu) {
  const std::vector<double> a = gpu.to_vector(), b = cpu.to_vector();
  std::size_t worst = 0;
  double worst_diff = -1.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double diff = std::isnan(a[i]) ? INFINITY : std::abs(a[i] - b[i]);
    if (diff > worst_diff) worst_diff = diff, worst = i;
  }
  if (a.empty()) return "no elements";
  std::vector<std::int64_t> index(gpu.shape().size());
  std::size_t rest = worst;
  for (std::size_t d = index.size(); d-- > 0;) {
    index[d] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(gpu.shape()[d]));
    rest /= static_cast<std::size_t>(gpu.shape()[d]);
  }
  std::ostringstream out;
  out << "largest difference at [";
  for (std::size_t d = 0; d < index.size(); ++d) out << (d ? ", " : "") << index[d];
  out << "]: gpu " << a[worst] << ", cpu " << b[worst];
  return out.str();
}

// A GPU result against the CPU's: relative (Frobenius) error within tol, no NaN (the GPU tests
// poison new tensors, so an unwritten element is NaN).
inline void expect_attention_matches(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_TRUE(gpu.defined()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  const std::vector<double> reference = cpu.to_vector();
  // A gradient that is exactly zero on the CPU (dQ and dK of a lone token: a softmax over one
  // key) has no scale to be relative to; the GPU's differently ordered sums leave rounding residue.
  if (std::all_of(reference.begin(), reference.end(), [](double x) { return x == 0.0; })) {
    EXPECT_LE(max_abs_diff(gpu, cpu), 1e-5) << what << ": " << worst_difference(gpu, cpu);
    return;
  }
  const double error = relative_error(gpu, cpu);
  EXPECT_TRUE(error <= tol) << what << ": relative error " << error << " > " << tol << "; "
                            << worst_difference(gpu, cpu);
}

// Forward (out, lse) and backward (every gradient, the prefix's included) on the GPU against
// the CPU reference from identical inputs; the GPU backward gets the CPU's out and lse so that
// it is judged on exactly the CPU's inputs.
inline void check_attention_against_cpu(const AttentionCase& c, DType dtype, std::uint64_t seed) {
  const std::string what = std::string(dtype_name(dtype)) + " " + c.str() + " seed " + std::to_string(seed);
  const double tol = gpu_tolerance(dtype);
  AttentionTensors cpu = random_attention_inputs(c, dtype, seed);
  AttentionTensors gpu = on_gpu(cpu);
  ops::AttentionOutput ref = ops::attention_forward(cpu.q, cpu.k, cpu.v, cpu.cu_seqlens, c.config(), cpu.prefix);
  ops::AttentionOutput got = ops::attention_forward(gpu.q, gpu.k, gpu.v, gpu.cu_seqlens, c.config(), gpu.prefix);
  expect_attention_matches(got.out, ref.out, tol, what + " out");
  expect_attention_matches(got.lse, ref.lse, 1e-5, what + " lse");

  Tensor grad_out = Tensor::normal(cpu.q.shape(), seed + 10, 0, 0.0, 1.0, dtype);
  ops::AttentionGrads want =
      ops::attention_backward(grad_out, cpu.q, cpu.k, cpu.v, ref.out, ref.lse, cpu.cu_seqlens, c.config(), cpu.prefix);
  ops::AttentionGrads have =
      ops::attention_backward(grad_out.to(Device::cuda()), gpu.q, gpu.k, gpu.v, ref.out.to(Device::cuda()),
                              ref.lse.to(Device::cuda()), gpu.cu_seqlens, c.config(), gpu.prefix);
  expect_attention_matches(have.grad_q, want.grad_q, tol, what + " grad_q");
  expect_attention_matches(have.grad_k, want.grad_k, tol, what + " grad_k");
  expect_attention_matches(have.grad_v, want.grad_v, tol, what + " grad_v");
  if (c.prefix_len == 0) return;
  expect_attention_matches(have.grad_prefix_k, want.grad_prefix_k, tol, what + " grad_prefix_k");
  expect_attention_matches(have.grad_prefix_v, want.grad_prefix_v, tol, what + " grad_prefix_v");
}

// Bitwise equality of two tensors, reporting the number of differing elements and the first.
inline void expect_bitwise_equal(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i] && !(std::isnan(x[i]) && std::isnan(y[i]))) {
      if (differing++ == 0) first = i;
    }
  EXPECT_EQ(differing, 0u) << what << ": " << differing << " of " << x.size()
                           << " elements differ, the first at flat index " << first << " ("
                           << (x.empty() ? 0.0 : x[first]) << " vs " << (y.empty() ? 0.0 : y[first]) << ")";
}

}  // namespace zt::testing
