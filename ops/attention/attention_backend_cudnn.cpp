#include "ops/attention/attention_backend_cudnn.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/attention/cudnn/cudnn_attention.h"
#include "ops/attention/attention_layout.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops::detail {
namespace {

const char* kForward = "attention (attn_impl=cudnn)";
const char* kBackward = "attention_backward (attn_impl=cudnn)";

// What cuDNN runs: the non-empty sequences, back to back as in q.
struct CudnnBatch {
  cuda::CudnnAttentionShape shape;
  std::vector<std::int32_t> lengths, starts;
};

void check_supported(const char* op, const Tensor& q, const AttentionLayout& layout, const AttentionPrefix& prefix) {
  const std::string head = std::string(op) + ": ";
  ZT_REQUIRE(q.device().is_cuda(), head + "cuDNN runs on the GPU but q is on " + q.device().str() +
                                       "; use attn_impl=zerotune for CPU tensors");
  ZT_REQUIRE(q.dtype() == DType::kBF16 || q.dtype() == DType::kF16,
             head + "q is " + dtype_name(q.dtype()) +
                 "; cuDNN's fused attention takes bfloat16 or float16 only; use attn_impl=zerotune for it");
  ZT_REQUIRE(!prefix.k.defined(), head + "cuDNN's fused attention has no prefix keys/values (prefix_k " +
                                      shape_str(prefix.k.shape()) + "); use attn_impl=zerotune with a prefix");
  ZT_REQUIRE(layout.head_dim % 8 == 0 && layout.head_dim <= 256,
             head + "q has shape " + shape_str(q.shape()) +
                 "; cuDNN's fused attention needs head_dim a multiple "
                 "of 8 up to 256, got " +
                 std::to_string(layout.head_dim) + "; use attn_impl=zerotune");
}

CudnnBatch cudnn_batch(const AttentionLayout& layout, const Tensor& q, const AttentionConfig& config) {
  CudnnBatch batch;
  for (std::int64_t b = 0; b < layout.batch; ++b) {
    if (layout.seq_len(b) == 0) continue;
    batch.lengths.push_back(static_cast<std::int32_t>(layout.seq_len(b)));
    batch.starts.push_back(static_cast<std::int32_t>(layout.seq_start(b)));
  }
  cuda::CudnnAttentionShape& s = batch.shape;
  s.dtype = q.dtype();
  s.batch = static_cast<std::int64_t>(batch.lengths.size());
  s.num_heads = layout.num_heads;
  s.num_kv_heads = layout.num_kv_heads;
  s.head_dim = layout.head_dim;
  s.max_seqlen = layout.max_seqlen;
  s.causal = config.causal;
  s.deterministic = config.deterministic;
  s.ragged = std::any_of(batch.lengths.begin(), batch.lengths.end(),
                         [&](std::int32_t l) { return l != batch.lengths.front(); });
  return batch;
}

// The ragged layout's int32 arrays on the device, each section starting 16-byte aligned.
class RaggedArrays {
 public:
  RaggedArrays(const CudnnBatch& batch, Device device) {
    if (!batch.shape.ragged) return;
    const cuda::CudnnAttentionShape& s = batch.shape;
    std::vector<double> values;
    auto section = [&](auto&& value_of, std::size_t count) {
      std::size_t start = values.size();
      for (std::size_t i = 0; i < count; ++i) values.push_back(static_cast<double>(value_of(i)));
      values.resize((values.size() + 3) / 4 * 4, 0.0);
      return start;
    };
    const std::size_t n = batch.lengths.size();
    auto start_of = [&](std::size_t i) -> std::int64_t {
      return i < n ? batch.starts[i] : batch.starts[n - 1] + batch.lengths[n - 1];
    };
    std::size_t lengths = section([&](std::size_t i) { return batch.lengths[i]; }, n);
    std::size_t q = section([&](std::size_t i) { return start_of(i) * s.num_heads * s.head_dim; }, n + 1);
    std::size_t kv = section([&](std::size_t i) { return start_of(i) * s.num_kv_heads * s.head_dim; }, n + 1);
    std::size_t stats = section([&](std::size_t i) { return start_of(i) * s.num_heads; }, n + 1);
    arrays_ = Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, DType::kI32).to(device);
    const std::int32_t* base = arrays_.data<std::int32_t>();
    pointers_ = {base + lengths, base + q, base + kv, base + stats};
  }
  const cuda::CudnnAttentionRagged& pointers() const { return pointers_; }

 private:
  Tensor arrays_;
  cuda::CudnnAttentionRagged pointers_;
};

// t contiguous with a 16-byte aligned start (a copy when a view's offset breaks it).
Tensor aligned(const Tensor& t) {
  Tensor c = t.contiguous();
  return reinterpret_cast<std::uintptr_t>(c.data_ptr()) % 16 == 0 ? c : c.clone();
}

}  // namespace

AttentionOutput cudnn_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                                        const AttentionConfig& config, const AttentionPrefix& prefix) {
  AttentionLayout layout = check_attention_inputs(kForward, q, k, v, cu_seqlens, config, prefix);
  check_supported(kForward, q, layout, prefix);
  DeviceGuard guard(q.device().index);
  AttentionOutput result{Tensor::empty(q.shape(), q.dtype(), q.device()),
                         Tensor::empty({layout.total_tokens, layout.num_heads}, DType::kF32, q.device())};
  CudnnBatch batch = cudnn_batch(layout, q, config);
  if (batch.shape.batch == 0) return result;
  const cuda::CudnnAttentionShape& s = batch.shape;
  Tensor qc = aligned(q), kc = aligned(k), vc = aligned(v);
  RaggedArrays ragged(batch, q.device());
  // The dense layout's statistics are [batch, heads, seq]; the ragged one writes lse directly.
  Tensor stats = s.ragged ? result.lse : Tensor::empty({s.batch, s.num_heads, s.max_seqlen}, DType::kF32, q.device());
  cuda::CudnnAttentionForwardArgs args;
  args.q = qc.data_ptr();
  args.k = kc.data_ptr();
  args.v = vc.data_ptr();
  args.out = result.out.data_ptr();
  args.stats = stats.data<float>();
  args.softmax_scale = static_cast<float>(config.softmax_scale);
  args.ragged = ragged.pointers();
  cuda::cudnn_attention_forward(s, args, current_stream());
  if (!s.ragged) result.lse.view({s.batch, s.max_seqlen, s.num_heads}).copy_from(stats.permute({0, 2, 1}));
  return result;
}

AttentionGrads cudnn_attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                                        const AttentionConfig& config, const AttentionPrefix& prefix) {
  AttentionLayout layout = check_attention_inputs(kBackward, q, k, v, cu_seqlens, config, prefix);
  check_attention_saved(kBackward, grad_out, out, lse, q, layout);
  check_supported(kBackward, q, layout, prefix);
  DeviceGuard guard(q.device().index);
  AttentionGrads grads;
  grads.grad_q = Tensor::empty(q.shape(), q.dtype(), q.device());
  grads.grad_k = Tensor::empty(k.shape(), k.dtype(), k.device());
  grads.grad_v = Tensor::empty(v.shape(), v.dtype(), v.device());
  CudnnBatch batch = cudnn_batch(layout, q, config);
  if (batch.shape.batch == 0) return grads;
  const cuda::CudnnAttentionShape& s = batch.shape;
  Tensor qc = aligned(q), kc = aligned(k), vc = aligned(v), oc = aligned(out), dout = aligned(grad_out);
  Tensor stats =
      s.ragged ? aligned(lse) : lse.reshape({s.batch, s.max_seqlen, s.num_heads}).permute({0, 2, 1}).contiguous();
  RaggedArrays ragged(batch, q.device());
  cuda::CudnnAttentionBackwardArgs args;
  args.q = qc.data_ptr();
  args.k = kc.data_ptr();
  args.v = vc.data_ptr();
  args.out = oc.data_ptr();
  args.grad_out = dout.data_ptr();
  args.stats = stats.data<float>();
  args.grad_q = grads.grad_q.data_ptr();
  args.grad_k = grads.grad_k.data_ptr();
  args.grad_v = grads.grad_v.data_ptr();
  args.softmax_scale = static_cast<float>(config.softmax_scale);
  args.ragged = ragged.pointers();
  cuda::cudnn_attention_backward(s, args, current_stream());
  return grads;
}

}  // namespace zt::ops::detail
