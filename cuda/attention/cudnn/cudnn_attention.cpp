#include "cuda/attention/cudnn/cudnn_attention.h"

#include <cudnn.h>

#include <limits>
#include <map>
#include <memory>
#include <string>

#include "cuda/attention/cudnn/cudnn_attention_graphs.h"
#include "cuda/common/device_handle.h"
#include "cuda/common/scratch_buffer.h"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

using cudnn_attention::describe;
using Pointers = std::vector<std::pair<std::int64_t, void*>>;

cudnnHandle_t cudnn_handle() {
  return handle_for_current_device<cudnnHandle_t, cudnnDestroy>([](int device) {
    cudnnHandle_t handle = nullptr;
    cudnn_graph::check(cudnnCreate(&handle), "cuDNN attention", "cudnnCreate on device " + std::to_string(device));
    return handle;
  });
}

void require(bool ok, const CudnnAttentionShape& s, const std::string& why) {
  if (!ok) throw Error(describe(s) + ": " + why + "; set attn_impl=zerotune for this case");
}

void check_aligned(const CudnnAttentionShape& s, const void* p, const char* name) {
  require(p != nullptr && reinterpret_cast<std::uintptr_t>(p) % 16 == 0, s,
          std::string(name) + " must be a 16-byte aligned device pointer");
}

void check_shape(const CudnnAttentionShape& s, const CudnnAttentionRagged& r) {
  cudnn_attention::io_type(s.dtype);
  require(s.batch >= 1 && s.max_seqlen >= 1 && s.num_heads >= 1 && s.num_kv_heads >= 1, s,
          "batch, heads and sequence length must be at least 1");
  require(s.num_heads % s.num_kv_heads == 0, s, "num_kv_heads must divide num_heads");
  require(s.head_dim % 8 == 0 && s.head_dim >= 8 && s.head_dim <= 256, s,
          "cuDNN's fused attention takes head_dim a multiple of 8 up to 256");
  const std::int64_t tokens = s.batch * s.max_seqlen;
  require(tokens * s.num_heads * s.head_dim <= std::numeric_limits<std::int32_t>::max(), s,
          "the ragged offsets are int32 and the batch has more than 2^31 elements per tensor");
  const bool all_set = r.seq_len && r.offsets_q && r.offsets_kv && r.offsets_stats;
  const bool none_set = !r.seq_len && !r.offsets_q && !r.offsets_kv && !r.offsets_stats;
  require(s.ragged ? all_set : none_set, s,
          s.ragged ? "a ragged batch needs seq_len and all three offset arrays"
                   : "a dense batch takes no seq_len or offset arrays");
}

// The plan of one graph, built on first use of its shape on this thread and device.
const cudnn_graph::Plan& cached_plan(const CudnnAttentionShape& s, bool backward, cudnnHandle_t handle) {
  thread_local std::map<std::pair<cudnnHandle_t, std::string>, std::unique_ptr<cudnn_graph::Plan>> plans;
  std::string key = describe(s) + (backward ? (s.deterministic ? " bwd deterministic" : " bwd") : " fwd");
  auto& slot = plans[{handle, key}];
  if (!slot) {
    slot = std::make_unique<cudnn_graph::Plan>(backward ? cudnn_attention::build_backward(s, handle)
                                                        : cudnn_attention::build_forward(s, handle));
  }
  return *slot;
}

// Masked scores: -inf from cuDNN 9.10 on; older versions want the lowest finite float.
float masked_value() {
  return cudnnGetVersion() >= 91000 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::lowest();
}

void add_ragged(Pointers& p, const CudnnAttentionShape& s, const CudnnAttentionRagged& r) {
  if (!s.ragged) return;
  auto ptr = [](const std::int32_t* x) { return const_cast<std::int32_t*>(x); };
  using namespace cudnn_attention;
  p.insert(p.end(), {{kSeqLenQ, ptr(r.seq_len)},
                     {kSeqLenKv, ptr(r.seq_len)},
                     {kOffsetsQ, ptr(r.offsets_q)},
                     {kOffsetsO, ptr(r.offsets_q)},
                     {kOffsetsK, ptr(r.offsets_kv)},
                     {kOffsetsV, ptr(r.offsets_kv)},
                     {kOffsetsStats, ptr(r.offsets_stats)}});
}

void run(const cudnn_graph::Plan& plan, cudnnHandle_t handle, const Pointers& pointers, cudaStream_t stream,
         const CudnnAttentionShape& s) {
  cudnn_graph::check(cudnnSetStream(handle, stream), describe(s), "cudnnSetStream");
  ScratchBuffer workspace(static_cast<std::size_t>(plan.workspace_bytes()), stream);
  plan.execute(handle, pointers, workspace.data());
}

}  // namespace

void cudnn_attention_forward(const CudnnAttentionShape& s, const CudnnAttentionForwardArgs& a, cudaStream_t stream) {
  check_shape(s, a.ragged);
  for (auto [p, name] :
       {std::pair{a.q, "q"}, std::pair{a.k, "k"}, std::pair{a.v, "v"},
        std::pair<const void*, const char*>{a.out, "out"}, std::pair<const void*, const char*>{a.stats, "stats"}})
    check_aligned(s, p, name);
  cudnnHandle_t handle = cudnn_handle();
  const cudnn_graph::Plan& plan = cached_plan(s, false, handle);
  float scale = a.softmax_scale, masked = masked_value();
  using namespace cudnn_attention;
  Pointers pointers = {{kQ, const_cast<void*>(a.q)},
                       {kK, const_cast<void*>(a.k)},
                       {kV, const_cast<void*>(a.v)},
                       {kO, a.out},
                       {kStats, a.stats},
                       {kScale, &scale}};
  if (uses_mask_value(s)) pointers.emplace_back(kNegativeInfinity, &masked);
  add_ragged(pointers, s, a.ragged);
  run(plan, handle, pointers, stream, s);
}

void cudnn_attention_backward(const CudnnAttentionShape& s, const CudnnAttentionBackwardArgs& a, cudaStream_t stream) {
  check_shape(s, a.ragged);
  for (auto [p, name] : {std::pair{a.q, "q"}, std::pair{a.k, "k"}, std::pair{a.v, "v"}, std::pair{a.out, "out"},
                         std::pair{a.grad_out, "grad_out"}, std::pair<const void*, const char*>{a.stats, "stats"},
                         std::pair<const void*, const char*>{a.grad_q, "grad_q"},
                         std::pair<const void*, const char*>{a.grad_k, "grad_k"},
                         std::pair<const void*, const char*>{a.grad_v, "grad_v"}})
    check_aligned(s, p, name);
  cudnnHandle_t handle = cudnn_handle();
  const cudnn_graph::Plan& plan = cached_plan(s, true, handle);
  const auto rows = static_cast<std::size_t>(s.batch * s.num_heads * s.max_seqlen);
  ScratchBuffer softmax_sum(rows * sizeof(float), stream);
  std::unique_ptr<ScratchBuffer> grad_q_accum;
  float scale = a.softmax_scale, masked = masked_value(), one = 1.0f;
  using namespace cudnn_attention;
  Pointers pointers = {{kQ, const_cast<void*>(a.q)},
                       {kK, const_cast<void*>(a.k)},
                       {kV, const_cast<void*>(a.v)},
                       {kO, const_cast<void*>(a.out)},
                       {kGradOut, const_cast<void*>(a.grad_out)},
                       {kStats, const_cast<float*>(a.stats)},
                       {kGradQ, a.grad_q},
                       {kGradK, a.grad_k},
                       {kGradV, a.grad_v},
                       {kSoftmaxSum, softmax_sum.data()},
                       {kScale, &scale},
                       {kOne, &one}};
  if (uses_mask_value(s)) pointers.emplace_back(kNegativeInfinity, &masked);
  if (!s.deterministic) {
    // Zeroed here although cuDNN 9.6+ clears it itself: cheap next to the backward, and
    // correct whichever version runs.
    const std::size_t bytes = rows * static_cast<std::size_t>(s.head_dim) * sizeof(float);
    grad_q_accum = std::make_unique<ScratchBuffer>(bytes, stream);
    ZT_CUDA_CHECK(cudaMemsetAsync(grad_q_accum->data(), 0, bytes, stream));
    pointers.emplace_back(kGradQAccum, grad_q_accum->data());
  }
  add_ragged(pointers, s, a.ragged);
  run(plan, handle, pointers, stream, s);
}

}  // namespace zt::cuda
