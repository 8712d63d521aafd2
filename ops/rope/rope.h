// Rotary position embedding of q or k, out of place (a new tensor; the input is untouched).
// x is [tokens, heads, head_dim] with one position per token, so packed sequences (positions
// restarting at each sequence) work. The first rotary_dim = head_dim * rotary_fraction dims
// rotate, the rest pass through:
//   kRotateHalf (Qwen): pairs (i, i + rotary_dim/2)
//   kInterleaved (GLM): pairs (2i, 2i + 1)
// with inv_freq_i = 1 / base^(2i / rotary_dim) and angle = float(position) * inv_freq_i, all
// in float32 as HF computes them (float64 for float64 x). For 16-bit x, cos and sin round to
// the dtype before multiplying and each product and the sum round too, as HF's eager
// x * cos + rotate(x) * sin does.
#pragma once

#include "cuda/rope/rope.cuh"
#include "tensor/tensor.h"

namespace zt::ops {

enum class RopeStyle { kRotateHalf, kInterleaved };

struct RopeConfig {
  RopeStyle style = RopeStyle::kRotateHalf;
  double base = 10000.0;
  double rotary_fraction = 1.0;  // ChatGLM: 0.5
};

// positions: int32 or int64 [tokens] on x's device.
Tensor rope_forward(const Tensor& x, const Tensor& positions, const RopeConfig& config);

// The gradient of rope_forward: grad_y rotated by the opposite angles.
Tensor rope_backward(const Tensor& grad_y, const Tensor& positions, const RopeConfig& config);

// rope_forward in place on q and k together (one pass over memory on the GPU; the
// pass-through dims are not touched); k may be undefined. Each is [tokens, heads, head_dim]
// with its heads and dims contiguous; the token stride is free, so head slices of a fused
// qkv projection rotate where they are. Values are exactly rope_forward's.
void rope_forward_inplace(const Tensor& q, const Tensor& k, const Tensor& positions, const RopeConfig& config);

// rope_forward of q and k on the GPU into q_out and k_out (q and k themselves, in place, or
// tensors of their shapes), storing k's rotated heads and v's heads in a paged KV cache, and
// v's heads in cache.v_out when set, in the same launch (cuda::RopeCacheWrite, whose pools,
// slots and v the caller has checked: ops/attention/kv_cache_write.h's
// rope_and_write_kv_slots). Heads and head dims contiguous in all four; k must be defined.
void rope_forward_with_cache(const Tensor& q, const Tensor& k, const Tensor& q_out, const Tensor& k_out,
                             const Tensor& positions, const RopeConfig& config, const cuda::RopeCacheWrite& cache);

// What a kernel that rotates heads of head_dim dims itself needs (cuda/decode_step): the
// rotary dims and style, and the frequencies rope_forward's kernel rotates by, checked as
// rope_forward checks them (`op` names the caller in errors).
struct GpuRope {
  cuda::RopeShape shape;  // tokens 0
  cuda::RopeFrequencies frequencies;
};
GpuRope gpu_rope(const char* op, std::int64_t head_dim, const RopeConfig& config);

// rope_backward in place on grad_q and grad_k (grad_k may be undefined), as above.
void rope_backward_inplace(const Tensor& grad_q, const Tensor& grad_k, const Tensor& positions,
                           const RopeConfig& config);

}  // namespace zt::ops
