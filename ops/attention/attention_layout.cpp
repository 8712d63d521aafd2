#include "ops/attention/attention_layout.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/op_checks.h"
#include "runtime/error.h"

namespace zt::ops::detail {
namespace {

// The CUDA kernels keep a row's head_dim values in registers, 32 per lane chunk, up to 8 chunks;
// a launch grid's y and z dimensions stop at 65535.
constexpr std::int64_t kCudaMaxHeadDim = 256;
constexpr std::int64_t kCudaMaxGridYZ = 65535;

std::string head(const char* op) { return std::string(op) + ": "; }

void check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  check_same_device(op, {{"q", &q}, {"k", &k}, {"v", &v}});
  check_same_dtype(op, {{"q", &q}, {"k", &k}, {"v", &v}});
  check_float_on_device(op, {"q", &q});
  check_dim(op, {"q", &q}, 3);
  check_dim(op, {"k", &k}, 3);
  check_same_shape(op, {"k", &k}, {"v", &v});
  check_size(op, {"k", &k}, 0, q.size(0), "total_tokens, as q " + shape_str(q.shape()) + " has");
  check_size(op, {"k", &k}, 2, q.size(2), "head_dim, as q " + shape_str(q.shape()) + " has");
  ZT_REQUIRE(q.size(2) >= 1, head(op) + "q has shape " + shape_str(q.shape()) + "; head_dim must be at least 1");
  ZT_REQUIRE(k.size(1) >= 1 && q.size(1) % k.size(1) == 0,
             head(op) + "q has " + std::to_string(q.size(1)) + " heads (shape " + shape_str(q.shape()) +
                 ") but k has " + std::to_string(k.size(1)) + " kv heads (shape " + shape_str(k.shape()) +
                 "); num_heads must be a positive multiple of num_kv_heads");
}

std::vector<std::int32_t> host_cu_seqlens(const char* op, const Tensor& cu_seqlens, const Tensor& q) {
  check_same_device(op, {{"q", &q}, {"cu_seqlens", &cu_seqlens}});
  ZT_REQUIRE(cu_seqlens.dtype() == DType::kI32,
             head(op) + "cu_seqlens must be int32, got " + dtype_name(cu_seqlens.dtype()));
  check_dim(op, {"cu_seqlens", &cu_seqlens}, 1);
  ZT_REQUIRE(cu_seqlens.size(0) >= 2, head(op) + "cu_seqlens has shape " + shape_str(cu_seqlens.shape()) +
                                          "; it needs batch + 1 >= 2 entries (0, l1, l1 + l2, ...)");
  Tensor host = cu_seqlens.to(Device::cpu()).contiguous();
  const std::int32_t* data = host.data<std::int32_t>();
  return std::vector<std::int32_t>(data, data + host.numel());
}

void check_offsets(const char* op, const std::vector<std::int32_t>& cu, const Tensor& q) {
  ZT_REQUIRE(cu.front() == 0, head(op) + "cu_seqlens starts at " + std::to_string(cu.front()) + "; it must start at 0");
  for (std::size_t b = 0; b + 1 < cu.size(); ++b)
    ZT_REQUIRE(cu[b] <= cu[b + 1], head(op) + "cu_seqlens decreases from " + std::to_string(cu[b]) + " to " +
                                       std::to_string(cu[b + 1]) + " at entry " + std::to_string(b + 1) +
                                       "; it must be non-decreasing (cumulative sequence lengths)");
  ZT_REQUIRE(cu.back() == q.size(0), head(op) + "cu_seqlens ends at " + std::to_string(cu.back()) + " but q has " +
                                         std::to_string(q.size(0)) + " tokens (shape " + shape_str(q.shape()) +
                                         "); the last entry must be total_tokens");
}

void check_prefix(const char* op, const AttentionPrefix& prefix, const Tensor& q, const Tensor& k, std::int64_t batch) {
  ZT_REQUIRE(prefix.k.defined() == prefix.v.defined(),
             head(op) + "prefix_k is " + (prefix.k.defined() ? "defined" : "undefined") + " but prefix_v is " +
                 (prefix.v.defined() ? "defined" : "undefined") + "; pass both or neither");
  if (!prefix.k.defined()) return;
  check_same_device(op, {{"q", &q}, {"prefix_k", &prefix.k}, {"prefix_v", &prefix.v}});
  check_same_dtype(op, {{"q", &q}, {"prefix_k", &prefix.k}, {"prefix_v", &prefix.v}});
  check_dim(op, {"prefix_k", &prefix.k}, 4);
  check_same_shape(op, {"prefix_k", &prefix.k}, {"prefix_v", &prefix.v});
  check_size(op, {"prefix_k", &prefix.k}, 0, batch, "batch, the number of sequences in cu_seqlens");
  check_size(op, {"prefix_k", &prefix.k}, 2, k.size(1), "num_kv_heads, as k " + shape_str(k.shape()) + " has");
  check_size(op, {"prefix_k", &prefix.k}, 3, k.size(2), "head_dim, as k " + shape_str(k.shape()) + " has");
}

void check_cuda_limits(const char* op, const Tensor& q, const AttentionLayout& layout) {
  ZT_REQUIRE(layout.head_dim <= kCudaMaxHeadDim, head(op) + "q has shape " + shape_str(q.shape()) + "; head_dim " +
                                                     std::to_string(layout.head_dim) + " exceeds the CUDA kernel's " +
                                                     std::to_string(kCudaMaxHeadDim));
  ZT_REQUIRE(layout.batch <= kCudaMaxGridYZ && layout.num_heads <= kCudaMaxGridYZ,
             head(op) + "batch " + std::to_string(layout.batch) + " and num_heads " + std::to_string(layout.num_heads) +
                 " must each be at most " + std::to_string(kCudaMaxGridYZ) + " on the GPU");
}

}  // namespace

AttentionLayout check_attention_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& cu_seqlens, const AttentionConfig& config,
                                       const AttentionPrefix& prefix) {
  check_qkv(op, q, k, v);
  ZT_REQUIRE(std::isfinite(config.softmax_scale),
             head(op) + "softmax_scale is " + std::to_string(config.softmax_scale) + "; it must be finite");
  AttentionLayout layout;
  layout.cu_seqlens = host_cu_seqlens(op, cu_seqlens, q);
  check_offsets(op, layout.cu_seqlens, q);
  layout.total_tokens = q.size(0);
  layout.num_heads = q.size(1);
  layout.num_kv_heads = k.size(1);
  layout.head_dim = q.size(2);
  layout.batch = static_cast<std::int64_t>(layout.cu_seqlens.size()) - 1;
  check_prefix(op, prefix, q, k, layout.batch);
  layout.prefix_len = prefix.k.defined() ? prefix.k.size(1) : 0;
  for (std::int64_t b = 0; b < layout.batch; ++b) layout.max_seqlen = std::max(layout.max_seqlen, layout.seq_len(b));
  if (q.device().is_cuda()) check_cuda_limits(op, q, layout);
  return layout;
}

void check_attention_saved(const char* op, const Tensor& grad_out, const Tensor& out, const Tensor& lse,
                           const Tensor& q, const AttentionLayout& layout) {
  check_same_device(op, {{"q", &q}, {"grad_out", &grad_out}, {"out", &out}, {"lse", &lse}});
  check_same_dtype(op, {{"q", &q}, {"grad_out", &grad_out}, {"out", &out}});
  check_same_shape(op, {"grad_out", &grad_out}, {"q", &q});
  check_same_shape(op, {"out", &out}, {"q", &q});
  DType lse_dtype = q.dtype() == DType::kF64 ? DType::kF64 : DType::kF32;
  ZT_REQUIRE(lse.dtype() == lse_dtype, head(op) + "lse is " + dtype_name(lse.dtype()) + " but q is " +
                                           dtype_name(q.dtype()) + "; lse must be " + dtype_name(lse_dtype) +
                                           " as attention_forward returns it");
  ZT_REQUIRE(lse.shape() == (Shape{layout.total_tokens, layout.num_heads}),
             head(op) + "lse has shape " + shape_str(lse.shape()) + " but q has shape " + shape_str(q.shape()) +
                 "; lse must be [total_tokens, num_heads]");
}

}  // namespace zt::ops::detail
