#include "ops/rope/rope.h"

#include <cmath>
#include <string>
#include <vector>

#include "cuda/rope/rope.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

cuda::RopeShape rope_shape(const char* op, std::int64_t tokens, std::int64_t head_dim, const RopeConfig& config) {
  double rotary = static_cast<double>(head_dim) * config.rotary_fraction;
  auto rotary_dim = static_cast<std::int64_t>(std::llround(rotary));
  ZT_REQUIRE(
      rotary == static_cast<double>(rotary_dim) && rotary_dim > 0 && rotary_dim <= head_dim && rotary_dim % 2 == 0,
      std::string(op) + ": head_dim " + std::to_string(head_dim) + " times rotary_fraction " +
          std::to_string(config.rotary_fraction) + " must be an even whole number of dims in [2, head_dim]");
  ZT_REQUIRE(rotary_dim / 2 <= cuda::kMaxRopePairs, std::string(op) + ": rotary_dim " + std::to_string(rotary_dim) +
                                                        " exceeds the supported " +
                                                        std::to_string(2 * cuda::kMaxRopePairs));
  ZT_REQUIRE(config.base > 0.0, std::string(op) + ": base must be positive, got " + std::to_string(config.base));
  return {tokens, head_dim, rotary_dim, config.style == RopeStyle::kInterleaved};
}

cuda::RopeShape rope_shape(const char* op, const Tensor& x, const RopeConfig& config) {
  return rope_shape(op, x.size(0), x.size(2), config);
}

void check_inputs(const char* op, const Tensor& x, const Tensor& positions) {
  check_same_device(op, {{"x", &x}, {"positions", &positions}});
  check_float_on_device(op, {"x", &x});
  check_dim(op, {"x", &x}, 3);
  check_dim(op, {"positions", &positions}, 1);
  check_size(op, {"positions", &positions}, 0, x.size(0), "one position per token of x [tokens, heads, head_dim]");
  ZT_REQUIRE(positions.dtype() == DType::kI32 || positions.dtype() == DType::kI64,
             std::string(op) + ": positions must be int32 or int64, got " + dtype_name(positions.dtype()));
}

// HF's inv_freq: 1 / base^(float(2i) / rotary_dim), in A's precision.
template <typename A>
std::vector<A> inverse_frequencies(std::int64_t rotary_dim, double base) {
  std::vector<A> inv_freq(static_cast<std::size_t>(rotary_dim / 2));
  for (std::size_t i = 0; i < inv_freq.size(); ++i)
    inv_freq[i] = A(1) / std::pow(static_cast<A>(base), static_cast<A>(2 * i) / static_cast<A>(rotary_dim));
  return inv_freq;
}

// x and y laid out as cuda::RopeOperand describes; y == x rotates in place (each pair is
// read before it is written).
template <typename T>
void rotate_cpu(const cuda::RopeOperand& op, const std::vector<double>& positions, const cuda::RopeShape& s,
                const std::vector<host::Acc<T>>& inv_freq, bool inverse) {
  using A = host::Acc<T>;
  std::int64_t half = s.rotary_dim / 2;
  for (std::int64_t t = 0; t < s.tokens; ++t) {
    auto position = static_cast<A>(positions[t]);
    for (std::int64_t h = 0; h < op.heads; ++h) {
      const T* x_head = static_cast<const T*>(op.x) + t * op.x_token_stride + h * s.head_dim;
      T* y_head = static_cast<T*>(op.y) + t * op.y_token_stride + h * s.head_dim;
      for (std::int64_t d = s.rotary_dim; d < s.head_dim; ++d) y_head[d] = x_head[d];
      for (std::int64_t i = 0; i < half; ++i) {
        std::int64_t lo = s.interleaved ? 2 * i : i, hi = s.interleaved ? 2 * i + 1 : i + half;
        A angle = position * inv_freq[i];
        A c = host::round<T>(std::cos(angle)), sn = host::round<T>(inverse ? -std::sin(angle) : std::sin(angle));
        A x_lo = host::load(x_head[lo]), x_hi = host::load(x_head[hi]);
        y_head[lo] = host::store<T>(host::round<T>(x_lo * c) - host::round<T>(x_hi * sn));
        y_head[hi] = host::store<T>(host::round<T>(x_hi * c) + host::round<T>(x_lo * sn));
      }
    }
  }
}

cuda::RopeFrequencies gpu_frequencies(const cuda::RopeShape& shape, double base) {
  cuda::RopeFrequencies frequencies{};
  std::vector<float> inv_freq = inverse_frequencies<float>(shape.rotary_dim, base);
  for (std::size_t i = 0; i < inv_freq.size(); ++i) frequencies.inv_freq[i] = inv_freq[i];
  return frequencies;
}

// Rotates every operand (all of x's dtype and device), on the GPU in one launch.
// `cache`, on the GPU only: where k and v also go (cuda::RopeCacheWrite).
void rotate_operands(const char* op, const cuda::RopeOperand& q, const cuda::RopeOperand& k, const Tensor& x,
                     const Tensor& positions, const cuda::RopeShape& shape, const RopeConfig& config, bool inverse,
                     const cuda::RopeCacheWrite* cache = nullptr) {
  if (x.device().is_cuda()) {
    cuda::rope_rotate(q, k, x.dtype(), positions.data_ptr(), positions.dtype(), shape,
                      gpu_frequencies(shape, config.base), inverse, current_stream(), cache);
    return;
  }
  ZT_REQUIRE(cache == nullptr, std::string(op) + ": the cache write in the same pass runs on the GPU only");
  std::vector<double> position_values = positions.to_vector();
  host::dispatch_float(x.dtype(), op, [&]<typename T>() {
    auto inv_freq = inverse_frequencies<host::Acc<T>>(shape.rotary_dim, config.base);
    for (const cuda::RopeOperand* operand : {&q, &k})
      rotate_cpu<T>(*operand, position_values, shape, inv_freq, inverse);
  });
}

Tensor rotate(const char* op, const Tensor& x_in, const Tensor& positions_in, const RopeConfig& config, bool inverse) {
  check_inputs(op, x_in, positions_in);
  cuda::RopeShape shape = rope_shape(op, x_in, config);
  Tensor x = x_in.contiguous(), positions = positions_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  std::int64_t token_stride = x.size(1) * x.size(2);
  cuda::RopeOperand q{x.data_ptr(), y.data_ptr(), x.size(1), token_stride, token_stride};
  rotate_operands(op, q, cuda::RopeOperand{}, x, positions, shape, config, inverse);
  return y;
}

// The operand rotating `in` into `out` (the same tensor in place, or one of its shape): heads and
// dims must be contiguous in both, the token stride is free.
cuda::RopeOperand heads_contiguous_operand(const char* op, const char* name, const Tensor& in, const Tensor& out) {
  for (const Tensor* t : {&in, &out}) {
    ZT_REQUIRE(heads_contiguous(*t), std::string(op) + ": " + name + " of shape " + shape_str(t->shape()) +
                                         " has strides " + shape_str(t->strides()) +
                                         "; rotating in place needs its heads and head dims " +
                                         "contiguous (strides [any, head_dim, 1]); use the out-of-place op instead");
  }
  ZT_REQUIRE(out.shape() == in.shape() && out.dtype() == in.dtype(),
             std::string(op) + ": the output for " + name + " must have its shape and dtype");
  return {in.data_ptr(), out.data_ptr(), in.size(1), in.stride(0), out.stride(0)};
}

// q and k rotated into q_out and k_out (themselves, in place, unless given).
void rotate_heads(const char* op, const Tensor& q, const Tensor& k, const Tensor& positions_in,
                  const RopeConfig& config, bool inverse, const cuda::RopeCacheWrite* cache = nullptr,
                  const Tensor& q_out = Tensor(), const Tensor& k_out = Tensor()) {
  check_inputs(op, q, positions_in);
  cuda::RopeShape shape = rope_shape(op, q, config);
  cuda::RopeOperand q_operand = heads_contiguous_operand(op, "q", q, q_out.defined() ? q_out : q), k_operand;
  if (k.defined()) {
    check_inputs(op, k, positions_in);
    check_same_dtype(op, {{"q", &q}, {"k", &k}});
    ZT_REQUIRE(k.size(2) == q.size(2), std::string(op) + ": q and k must share head_dim, got q " +
                                           shape_str(q.shape()) + " and k " + shape_str(k.shape()));
    k_operand = heads_contiguous_operand(op, "k", k, k_out.defined() ? k_out : k);
  }
  Tensor positions = positions_in.contiguous();
  rotate_operands(op, q_operand, k_operand, q, positions, shape, config, inverse, cache);
}

}  // namespace

GpuRope gpu_rope(const char* op, std::int64_t head_dim, const RopeConfig& config) {
  const cuda::RopeShape shape = rope_shape(op, 0, head_dim, config);
  return {shape, gpu_frequencies(shape, config.base)};
}

Tensor rope_forward(const Tensor& x, const Tensor& positions, const RopeConfig& config) {
  return rotate("rope_forward", x, positions, config, false);
}

Tensor rope_backward(const Tensor& grad_y, const Tensor& positions, const RopeConfig& config) {
  return rotate("rope_backward", grad_y, positions, config, true);
}

void rope_forward_inplace(const Tensor& q, const Tensor& k, const Tensor& positions, const RopeConfig& config) {
  rotate_heads("rope_forward_inplace", q, k, positions, config, false);
}

void rope_forward_with_cache(const Tensor& q, const Tensor& k, const Tensor& q_out, const Tensor& k_out,
                             const Tensor& positions, const RopeConfig& config, const cuda::RopeCacheWrite& cache) {
  ZT_REQUIRE(k.defined(), "rope_forward_with_cache: a cache write needs k");
  rotate_heads("rope_forward_with_cache", q, k, positions, config, false, &cache, q_out, k_out);
}

void rope_backward_inplace(const Tensor& grad_q, const Tensor& grad_k, const Tensor& positions,
                           const RopeConfig& config) {
  rotate_heads("rope_backward_inplace", grad_q, grad_k, positions, config, true);
}

}  // namespace zt::ops
