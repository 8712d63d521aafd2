// The persistent decode kernel: one block per multiprocessor (cooperative launch, so all are
// resident and the grid barrier cannot deadlock), kThreads threads each, running the step's
// stages in order with a grid barrier after each:
//   embed:      x = embedding[ids]                                      (rows over warps)
//   per layer:  q/k/v = rmsnorm(x) · W_qkvᵀ + b                         (normalised rows in shared memory)
//               attention per (sequence, head): Qwen3's q/k norms, RoPE on q and the new k, the new k and v written
//               to the cache by the group's first head, softmax(q·Kᵀ)·V over the paged cache
//               h = x + attn · W_oᵀ (+ b)
//               act = silu(rmsnorm(h) · W_gateᵀ) * (rmsnorm(h) · W_upᵀ)  (gate and up rows together)
//               x = h + act · W_downᵀ (+ b)
//   head:       logits = rmsnorm(x) · W_headᵀ, each block's first largest per row, then block 0's
// A weight stage gives each warp two output rows at a time (a gate row and its up row in the
// MLP); before a barrier each warp prefetches into L2 the rows it takes first in the next stage.
#include "cuda/decode_step/persistent_decode.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "cuda/decode_step/decode_stage_pieces.cuh"
#include "cuda/decode_step/decode_step_layout.cuh"
#include "cuda/reduce/argmax_order.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

using namespace decode_step;

struct KernelArgs {
  DecodeModelDims d;
  DecodeStepPointers step;
  void* workspace;
  StageSplits splits;
};

// Stage mark `index` (persistent_decode_stage_marks), when the step records them.
__device__ __forceinline__ void mark_stage(const DecodeStepPointers& step, int index) {
  if (step.stage_marks == nullptr || blockIdx.x != 0 || threadIdx.x != 0) return;
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  step.stage_marks[index] = now;
}

// Prefetches the first two rows of a [rows, k] weight that this warp's team takes in a stage
// of `splits` warps per team (its first warp asks for them).
template <typename T>
__device__ __forceinline__ void prefetch_first_rows(const void* weight, int rows, int k, int splits) {
  const Team team = team_of(splits);
  const int first = 2 * team.index;
  if (weight == nullptr || team.part != 0 || first >= rows) return;
  prefetch_l2(static_cast<const T*>(weight) + static_cast<std::int64_t>(first) * k,
              static_cast<std::int64_t>(min(2, rows - first)) * k * sizeof(T));
}

template <typename T>
__device__ __forceinline__ float bias_of(const void* bias, int row) {
  return bias == nullptr ? 0.0f : load_float(static_cast<const T*>(bias) + row);
}

// Row r of [q; k; v] and its bias.
template <typename T>
__device__ __forceinline__ const T* qkv_row(const DecodeLayerPointers& l, const DecodeModelDims& d, int r,
                                            float& bias) {
  const int q_size = d.heads * d.head_dim, kv_size = d.kv_heads * d.head_dim;
  if (r < q_size) {
    bias = bias_of<T>(l.q_bias, r);
    return static_cast<const T*>(l.q) + static_cast<std::int64_t>(r) * d.hidden;
  }
  if (r < q_size + kv_size) {
    bias = bias_of<T>(l.k_bias, r - q_size);
    return static_cast<const T*>(l.k) + static_cast<std::int64_t>(r - q_size) * d.hidden;
  }
  bias = bias_of<T>(l.v_bias, r - q_size - kv_size);
  return static_cast<const T*>(l.v) + static_cast<std::int64_t>(r - q_size - kv_size) * d.hidden;
}

template <typename T, int B>
__device__ void qkv_stage(const DecodeLayerPointers& l, const DecodeModelDims& d, const T* normed, T* qkv, int splits,
                          float* partials) {
  const int n = (d.heads + 2 * d.kv_heads) * d.head_dim, lane = threadIdx.x % 32;
  const Team team = team_of(splits);
  for (int r = 2 * team.index; r < n; r += 2 * team.count) {
    float bias0 = 0.0f, bias1 = 0.0f;
    const T* w0 = qkv_row<T>(l, d, r, bias0);
    const T* w1 = r + 1 < n ? qkv_row<T>(l, d, r + 1, bias1) : nullptr;
    float acc[2][B];
    warp_dot2<T, B>(w0, w1, normed, d.hidden, team, acc);
    team_sum<B>(team, acc, partials);
    if (team.part != 0) continue;
#pragma unroll
    for (int b = 0; b < B; ++b) {
      if (lane == 0) store_float(qkv + static_cast<std::int64_t>(b) * n + r, acc[0][b] + bias0);
      if (lane == 1 && w1 != nullptr) store_float(qkv + static_cast<std::int64_t>(b) * n + r + 1, acc[1][b] + bias1);
    }
  }
}

// One (sequence, head) per block at a time.
template <typename T, int B>
__device__ void attention_stage(const DecodeLayerPointers& l, const KernelArgs& a, const T* qkv, T* attn,
                                float* shared) {
  const DecodeModelDims& d = a.d;
  const int n = (d.heads + 2 * d.kv_heads) * d.head_dim, group = d.heads / d.kv_heads;
  const HeadScratch s(shared, d.head_dim);
  for (int unit = blockIdx.x; unit < B * d.heads; unit += gridDim.x) {
    const int b = unit / d.heads, h = unit % d.heads, g = h / group;
    const std::int64_t slot = a.step.slots[b];
    const int len = slot < 0 ? 0 : a.step.seq_lens[b];
    const T* row = qkv + static_cast<std::int64_t>(b) * n;
    for (int c = threadIdx.x; c < d.head_dim; c += blockDim.x) {
      s.q[c] = load_float(row + h * d.head_dim + c);
      s.k[c] = load_float(row + (d.heads + g) * d.head_dim + c);
      s.v[c] = load_float(row + (d.heads + d.kv_heads + g) * d.head_dim + c);
    }
    __syncthreads();
    if (l.q_norm != nullptr)
      normalize_head_pair<T>(s, static_cast<const T*>(l.q_norm), static_cast<const T*>(l.k_norm), d);
    const float position = static_cast<float>(a.step.positions[b]);
    rotate_head<T>(s.q, d, position);
    rotate_head<T>(s.k, d, position);
    __syncthreads();
    T* keys = static_cast<T*>(l.key_pool);
    T* values = static_cast<T*>(l.value_pool);
    if (len > 0 && h % group == 0) {
      const std::int64_t at = (slot * d.kv_heads + g) * d.head_dim;
      for (int c = threadIdx.x; c < d.head_dim; c += blockDim.x) {
        store_float(keys + at + c, s.k[c]);
        store_float(values + at + c, s.v[c]);
      }
    }
    const std::int32_t* pages = a.step.block_table + static_cast<std::int64_t>(b) * d.max_blocks_per_seq;
    attend_warp_share<T, kAttentionRoundsAhead<B>>(d, s, keys, values, pages, g, len);
    __syncthreads();
    merge_warp_shares<T>(d, s, attn + (static_cast<std::int64_t>(b) * d.heads + h) * d.head_dim);
    __syncthreads();
  }
}

// out[b, r] = residual[b, r] + (x · Wᵀ + bias)[b, r], the product rounded first, for the [n, k]
// weight w over x [B, k]. residual and out may be the same buffer.
template <typename T, int B>
__device__ void residual_stage(const void* weight, const void* bias, int n, int k, const T* x, const T* residual,
                               T* out, int splits, float* partials) {
  const int lane = threadIdx.x % 32;
  const T* w = static_cast<const T*>(weight);
  const Team team = team_of(splits);
  for (int r = 2 * team.index; r < n; r += 2 * team.count) {
    const T* w1 = r + 1 < n ? w + static_cast<std::int64_t>(r + 1) * k : nullptr;
    float acc[2][B];
    warp_dot2<T, B>(w + static_cast<std::int64_t>(r) * k, w1, x, k, team, acc);
    team_sum<B>(team, acc, partials);
    if (team.part != 0) continue;
#pragma unroll
    for (int b = 0; b < B; ++b) {
      for (int i = 0; i < 2; ++i) {
        if (lane != i || (i == 1 && w1 == nullptr)) continue;
        const std::int64_t at = static_cast<std::int64_t>(b) * n + r + i;
        const float y = round_through<T>(acc[i][b] + bias_of<T>(bias, r + i));
        store_float(out + at, load_float(residual + at) + y);
      }
    }
  }
}

// act[b, j] = silu(gate_j · x_b) * (up_j · x_b), each product and silu rounded as cuda/swiglu.
template <typename T, int B>
__device__ void gate_up_stage(const DecodeLayerPointers& l, const DecodeModelDims& d, const T* normed, T* act,
                              int splits, float* partials) {
  const int lane = threadIdx.x % 32;
  const Team team = team_of(splits);
  for (int j = team.index; j < d.ffn; j += team.count) {
    float acc[2][B];
    warp_dot2<T, B>(static_cast<const T*>(l.gate) + static_cast<std::int64_t>(j) * d.hidden,
                    static_cast<const T*>(l.up) + static_cast<std::int64_t>(j) * d.hidden, normed, d.hidden, team, acc);
    team_sum<B>(team, acc, partials);
    if (team.part != 0) continue;
#pragma unroll
    for (int b = 0; b < B; ++b) {
      if (lane != b) continue;
      const float g = round_through<T>(acc[0][b] + bias_of<T>(l.gate_bias, j));
      const float u = round_through<T>(acc[1][b] + bias_of<T>(l.up_bias, j));
      store_float(act + static_cast<std::int64_t>(b) * d.ffn + j, round_through<T>(g / (1.0f + expf(-g))) * u);
    }
  }
}

// The LM head's logits and this block's first largest per row, into the partials.
template <typename T, int B>
__device__ void head_stage(const KernelArgs& a, const T* normed, const Buffers<T>& buf, float* shared,
                           float* partials) {
  const DecodeModelDims& d = a.d;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const T* w = static_cast<const T*>(a.step.lm_head);
  T* logits = static_cast<T*>(a.step.logits);
  float best = -INFINITY;
  int best_at = INT_MAX;  // lane b < B of a team's first warp keeps row b's
  const Team team = team_of(a.splits.head);
  for (int r = 2 * team.index; r < d.vocab; r += 2 * team.count) {
    const T* w1 = r + 1 < d.vocab ? w + static_cast<std::int64_t>(r + 1) * d.hidden : nullptr;
    float acc[2][B];
    warp_dot2<T, B>(w + static_cast<std::int64_t>(r) * d.hidden, w1, normed, d.hidden, team, acc);
    team_sum<B>(team, acc, partials);
    if (team.part != 0) continue;
#pragma unroll
    for (int b = 0; b < B; ++b) {
      for (int i = 0; i < 2; ++i) {
        if (i == 1 && w1 == nullptr) continue;
        const float logit = round_through<T>(acc[i][b]);
        if (lane != b) continue;
        keep_first(best, best_at, logit, r + i);
        store_float(logits + static_cast<std::int64_t>(b) * d.vocab + r + i, logit);
      }
    }
  }
  float* warp_best = shared;
  int* warp_at = reinterpret_cast<int*>(shared + kWarps * B);
  if (lane < B) {
    warp_best[warp * B + lane] = best;
    warp_at[warp * B + lane] = best_at;
  }
  __syncthreads();
  if (threadIdx.x < B) {
    const int b = threadIdx.x;
    float value = -INFINITY;
    int at = INT_MAX;
    for (int w = 0; w < kWarps; ++w) keep_first(value, at, warp_best[w * B + b], warp_at[w * B + b]);
    buf.best_value[blockIdx.x * B + b] = value;
    buf.best_index[blockIdx.x * B + b] = at;
  }
}

template <typename T, int B>
__global__ void __launch_bounds__(kThreads, 1) persistent_decode_kernel(KernelArgs a) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const DecodeModelDims& d = a.d;
  const SharedLayout layout = shared_layout(d, B, sizeof(T));
  T* normed = reinterpret_cast<T*>(shared_bytes);
  float* scratch = reinterpret_cast<float*>(shared_bytes);
  float* partials = reinterpret_cast<float*>(shared_bytes + layout.partials);
  const StageSplits& splits = a.splits;
  const Buffers<T> buf = carve<T>(a.workspace, d, B);
  const int q_size = d.heads * d.head_dim;  // prefetches of q/k/v stay inside q's rows
  mark_stage(a.step, 0);
  for (int i = blockIdx.x * kThreads + threadIdx.x; i < B * d.hidden; i += gridDim.x * kThreads) {
    const int b = i / d.hidden, c = i % d.hidden;
    buf.x[i] = static_cast<const T*>(a.step.embedding)[a.step.ids[b] * d.hidden + c];
  }
  prefetch_first_rows<T>(a.step.layers[0].q, q_size, d.hidden, splits.qkv);
  grid.sync();
  mark_stage(a.step, 1);
  for (int layer = 0; layer < d.layers; ++layer) {
    const DecodeLayerPointers& l = a.step.layers[layer];
    const int mark = 2 + 5 * layer;
    normalize_rows<T, B>(buf.x, static_cast<const T*>(l.input_norm), normed, d, partials);
    qkv_stage<T, B>(l, d, normed, buf.qkv, splits.qkv, partials);
    prefetch_first_rows<T>(l.o, d.hidden, q_size, splits.hidden_rows);
    grid.sync();
    mark_stage(a.step, mark);
    attention_stage<T, B>(l, a, buf.qkv, buf.attn, scratch);
    grid.sync();
    mark_stage(a.step, mark + 1);
    residual_stage<T, B>(l.o, l.o_bias, d.hidden, q_size, buf.attn, buf.x, buf.h, splits.hidden_rows, partials);
    prefetch_first_rows<T>(l.gate, d.ffn, d.hidden, splits.gate_up);
    prefetch_first_rows<T>(l.up, d.ffn, d.hidden, splits.gate_up);
    grid.sync();
    mark_stage(a.step, mark + 2);
    normalize_rows<T, B>(buf.h, static_cast<const T*>(l.post_norm), normed, d, partials);
    gate_up_stage<T, B>(l, d, normed, buf.act, splits.gate_up, partials);
    prefetch_first_rows<T>(l.down, d.hidden, d.ffn, splits.hidden_rows);
    grid.sync();
    mark_stage(a.step, mark + 3);
    residual_stage<T, B>(l.down, l.down_bias, d.hidden, d.ffn, buf.act, buf.h, buf.x, splits.hidden_rows, partials);
    const bool last = layer + 1 == d.layers;
    prefetch_first_rows<T>(last ? a.step.lm_head : a.step.layers[layer + 1].q, last ? d.vocab : q_size, d.hidden,
                           last ? splits.head : splits.qkv);
    grid.sync();
    mark_stage(a.step, mark + 4);
  }
  normalize_rows<T, B>(buf.x, static_cast<const T*>(a.step.final_norm), normed, d, partials);
  head_stage<T, B>(a, normed, buf, reinterpret_cast<float*>(shared_bytes + layout.argmax), partials);
  grid.sync();
  mark_stage(a.step, 2 + 5 * d.layers);
  if (blockIdx.x == 0 && threadIdx.x < B) {
    const int b = threadIdx.x;
    float value = -INFINITY;
    int at = INT_MAX;
    for (int k = 0; k < static_cast<int>(gridDim.x); ++k)
      keep_first(value, at, buf.best_value[k * B + b], buf.best_index[k * B + b]);
    a.step.argmax[b] = at;
  }
  mark_stage(a.step, 3 + 5 * d.layers);
}

// The grid of a (kernel, device, shared size), set up once: a step pays one launch, not the
// attribute and occupancy queries behind it.
template <typename T, int B>
unsigned grid_for(std::size_t shared, int device) {
  static std::mutex mutex;
  static std::map<std::pair<int, std::size_t>, unsigned> grids;
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = grids.find({device, shared});
  if (found != grids.end()) return found->second;
  auto kernel = persistent_decode_kernel<T, B>;
  ZT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  int per_sm = 0, sms = 0;
  ZT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, shared));
  ZT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  ZT_REQUIRE(per_sm >= 1, "persistent decode: no block fits a multiprocessor");
  const auto grid = static_cast<unsigned>(std::min(sms, kMaxGrid));
  grids.emplace(std::make_pair(device, shared), grid);
  return grid;
}

template <typename T, int B>
void launch(KernelArgs args, std::size_t shared, int device, cudaStream_t stream) {
  const unsigned grid = grid_for<T, B>(shared, device);
  args.splits = stage_splits(args.d, grid);
  void* params[] = {&args};
  ZT_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(persistent_decode_kernel<T, B>), dim3(grid),
                                            dim3(kThreads), params, shared, stream));
}

template <typename T>
void launch_rows(const KernelArgs& args, int rows, std::size_t shared, int device, cudaStream_t stream) {
  switch (rows) {
    case 1:
      return launch<T, 1>(args, shared, device, stream);
    case 2:
      return launch<T, 2>(args, shared, device, stream);
    case 4:
      return launch<T, 4>(args, shared, device, stream);
    case 8:
      return launch<T, 8>(args, shared, device, stream);
    default:
      ZT_REQUIRE(false, "persistent decode: rows must be 1, 2, 4 or 8, got " + std::to_string(rows));
  }
}

}  // namespace

std::size_t persistent_decode_workspace_bytes(const DecodeModelDims& dims, int rows, DType dtype) {
  return workspace_layout(dims, rows, dtype_size(dtype)).bytes;
}

const char* persistent_decode_unsupported(const DecodeModelDims& d, int rows, DType dtype, int device) {
  if (dtype != DType::kBF16 && dtype != DType::kF16) return "the weights are not bfloat16 or float16";
  if (rows != 1 && rows != 2 && rows != 4 && rows != 8) return "a step of other than 1, 2, 4 or 8 rows";
  if (d.hidden % 8 != 0 || d.ffn % 8 != 0 || (d.heads * d.head_dim) % 8 != 0)
    return "hidden, intermediate or attention sizes not multiples of 8";
  if (d.head_dim % 8 != 0 || d.head_dim > kMaxHeadDim) return "a head_dim that is not a multiple of 8 up to 256";
  if (d.kv_heads <= 0 || d.heads % d.kv_heads != 0) return "query heads not a multiple of the kv heads";
  if (d.rope.rotary_dim > d.head_dim || d.rope.rotary_dim / 2 > kThreads) return "an unsupported rotary size";
  int optin = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
    return "the device's shared memory could not be read";
  if (shared_layout(d, rows, dtype_size(dtype)).bytes > static_cast<std::size_t>(optin))
    return "the normalised rows do not fit in shared memory";
  int cooperative = 0;
  if (cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device) != cudaSuccess || !cooperative)
    return "the device has no cooperative launch";
  return "";
}

void persistent_decode_step(const DecodeModelDims& dims, const DecodeStepPointers& step, int rows, DType dtype,
                            const DecodeWorkspace& workspace, cudaStream_t stream) {
  ZT_REQUIRE(workspace.bytes >= persistent_decode_workspace_bytes(dims, rows, dtype),
             "persistent decode: the workspace is too small");
  int device = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  const std::string why = persistent_decode_unsupported(dims, rows, dtype, device);
  ZT_REQUIRE(why.empty(), "persistent decode: " + why);
  const KernelArgs args{dims, step, workspace.memory, {}};
  const std::size_t shared = shared_layout(dims, rows, dtype_size(dtype)).bytes;
  if (dtype == DType::kBF16)
    launch_rows<__nv_bfloat16>(args, rows, shared, device, stream);
  else
    launch_rows<__half>(args, rows, shared, device, stream);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
