#include "cuda/sampling/sampling.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/common/multiprocessor_count.h"
#include "cuda/common/scratch_buffer.h"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/sampling/block_scan.cuh"
#include "cuda/sampling/radix_select.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda::sampling {
namespace {

constexpr int kThreads = 1024;
// Probabilities as multiples of 2^-62: exact sums that stay below 2^63 for any row.
constexpr int kMassBits = 62;

template <typename T>
__device__ __forceinline__ double load_double(const T* p) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return static_cast<double>(*p);
  else
    return static_cast<double>(static_cast<float>(*p));  // exact, as the host's cast
}

// p in [0, 1] in units of 2^-kMassBits; 0 for 0 and NaN.
__device__ __forceinline__ std::uint64_t to_fixed(double p) {
  return p > 0.0 ? __double2ull_rn(scalbn(p, kMassBits)) : 0;
}

// The row in float64 as the reference has it before top-k: barred ids -inf, then the penalty,
// then (sampling) divided by the temperature, each in the reference's arithmetic.
template <typename T>
__device__ void load_row(const T* x, int cols, const SamplingRule& rule, const SpecialToken* specials, double* values) {
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    const double v = load_double(x + i);
    values[i] = rule.do_sample ? v / rule.temperature : v;
  }
  __syncthreads();  // the special tokens overwrite what other threads wrote
  const double penalty = rule.repetition_penalty;
  for (std::int64_t j = rule.special_begin + threadIdx.x; j < rule.special_end; j += blockDim.x) {
    const SpecialToken t = specials[j];
    double v = (t.flags & kBarredToken) ? -INFINITY : load_double(x + t.id);
    if ((t.flags & kPenalisedToken) && penalty != 1.0) v = v < 0.0 ? v * penalty : v / penalty;
    values[t.id] = rule.do_sample ? v / rule.temperature : v;
  }
  __syncthreads();
}

// The smallest key top-k keeps: the k-th largest value's, or the low end of a bin that ends
// exactly at the k-th. Descending order is ascending order of the complemented keys.
__device__ std::uint64_t top_k_floor(const double* values, int cols, std::int64_t k, SelectShared& sh) {
  auto key_of = [values](int i) { return ~order_key(values[i]); };
  auto one = [](int) { return std::uint64_t{1}; };
  const KeyGroup g = select_key_group<kThreads>(cols, static_cast<std::uint64_t>(k - 1), true, key_of, one, sh);
  return ~group_last_key(g);
}

// How many of a tie group's tokens the reference's top-p drops: it adds their equal
// probability p one at a time to the mass below and stops at the first sum above `limit`,
// never dropping the group's last. Replaying those float64 additions (from the mass below,
// exact when that mass is, as when all of it sits in the group) gives its answer where the
// sums land exactly on the limit, as equal probabilities under a round top_p do. One thread,
// so a huge tie group costs time linear in its size.
__device__ unsigned tie_group_dropped(const KeyGroup& g, double limit, double p) {
  __shared__ unsigned result;
  if (threadIdx.x == 0) {
    double cumulative = scalbn(static_cast<double>(g.below), -kMassBits);
    unsigned dropped = 0;
    while (dropped + 1 < g.count) {
      cumulative += p;
      if (cumulative > limit) break;
      ++dropped;
    }
    result = dropped;
  }
  __syncthreads();
  const unsigned out = result;
  __syncthreads();
  return out;
}

// What top-p drops: keys below `key`, and with key itself the ids below `id`.
struct TopPCut {
  std::uint64_t key = 0;
  int id = 0;
};

// transformers' top-p: sorted ascending (stable, so ties by id), tokens drop while the
// cumulative probability stays within 1 - top_p. The group where it first exceeds that is
// found by mass; inside it, the lowest ids drop first.
template <typename Effective>
__device__ TopPCut top_p_cut(int cols, double top_p, double top, double total, const double* exps, Effective effective,
                             SelectShared& sh) {
  const double limit = 1.0 - top_p;
  auto key_of = [=](int i) { return order_key(effective(i)); };
  auto mass_of = [=](int i) { return to_fixed(exps[i] / total); };
  const KeyGroup g = select_key_group<kThreads>(cols, to_fixed(limit), false, key_of, mass_of, sh);
  TopPCut cut{g.key, 0};
  if (g.bits < 64) return cut;  // a group of one: kept, everything below dropped
  const unsigned dropped = tie_group_dropped(g, limit, exp(key_value(g.key) - top) / total);
  if (dropped > 0) cut.id = block_index_of_rank(cols, dropped, [=](int i) { return key_of(i) == g.key; });
  return cut;
}

// A sampled row: top-k, top-p (both as key bounds, the row itself left as it is), min-p (a
// bound on exp(value - max), which top-k and top-p leave at the row's max), softmax and the
// draw. Every thread returns the token.
__device__ std::int64_t sample_token(const double* values, double* exps, int cols, const SamplingRule& rule,
                                     SelectShared& sh) {
  std::uint64_t keep_from = 0;
  if (rule.top_k > 0 && rule.top_k < cols) keep_from = top_k_floor(values, cols, rule.top_k, sh);
  auto effective = [=](int i) {
    const double v = values[i];
    return order_key(v) < keep_from ? -INFINITY : v;
  };
  // The largest value survives both filters, so one max (the reference's) serves both softmaxes.
  const double top = effective(block_first_argmax(cols, effective));
  double own = 0.0;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) own += exps[i] = exp(effective(i) - top);
  const double total = block_reduce(own, 0.0, SumOp{});  // its barrier publishes exps
  TopPCut cut;
  if (rule.top_p < 1.0) cut = top_p_cut(cols, rule.top_p, top, total, exps, effective, sh);
  const double min_p = rule.min_p;  // 0: exps are never below it
  auto dropped = [=](int i) {
    const std::uint64_t key = order_key(effective(i));
    return key < cut.key || (key == cut.key && i < cut.id) || exps[i] < min_p;
  };
  const double dropped_exp = exp(-INFINITY - top);  // what the reference's softmax makes of -inf
  auto final_exp = [=](int i) { return dropped(i) ? dropped_exp : exps[i]; };
  own = 0.0;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) own += final_exp(i);
  const double final_total = block_reduce(own, 0.0, SumOp{});
  const int pick = block_first_crossing(cols, rule.uniform, [=](int i) { return final_exp(i) / final_total; });
  if (pick != INT_MAX) return pick;
  return block_first_argmax(cols, [=](int i) { return dropped(i) ? -INFINITY : effective(i); });
}

// One block per row at a time; the block's scratch holds the row's values and exps.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    sample_rows_kernel(const T* logits, std::int64_t rows, int cols, std::int64_t row_stride, const SamplingRule* rules,
                       const SpecialToken* specials, double* scratch, std::int64_t* out) {
  __shared__ SelectShared select_shared;
  double* values = scratch + static_cast<std::int64_t>(blockIdx.x) * 2 * cols;
  double* exps = values + cols;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const SamplingRule rule = rules[row];
    load_row(logits + row * row_stride, cols, rule, specials, values);
    const std::int64_t token = rule.do_sample ? sample_token(values, exps, cols, rule, select_shared)
                                              : block_first_argmax(cols, [values](int i) { return values[i]; });
    if (threadIdx.x == 0) out[row] = token;
    __syncthreads();  // the row's scratch is free for the next
  }
}

// The rules and special tokens as one device buffer: rules first, then the tokens.
struct DeviceRules {
  ScratchBuffer buffer;
  const SamplingRule* rules() const { return buffer.as<SamplingRule>(); }
  const SpecialToken* specials(std::int64_t rows) const {
    return reinterpret_cast<const SpecialToken*>(buffer.as<SamplingRule>() + rows);
  }
};

std::int64_t checked_special_count(const SamplingRule* rules, const SpecialToken* specials, std::int64_t rows,
                                   std::int64_t cols) {
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    ZT_REQUIRE(rules[r].special_begin >= 0 && rules[r].special_begin <= rules[r].special_end,
               "sample_rows kernel: row " + std::to_string(r) + " has special tokens [" +
                   std::to_string(rules[r].special_begin) + ", " + std::to_string(rules[r].special_end) + ")");
    count = std::max(count, rules[r].special_end);
  }
  for (std::int64_t j = 0; j < count; ++j)
    ZT_REQUIRE(specials[j].id >= 0 && specials[j].id < cols, "sample_rows kernel: special token id " +
                                                                 std::to_string(specials[j].id) + " outside 0 .. " +
                                                                 std::to_string(cols - 1));
  return count;
}

template <typename T>
void launch(const void* logits, std::int64_t rows, int cols, std::int64_t row_stride, const DeviceRules& device_rules,
            std::int64_t* out, cudaStream_t stream) {
  // Blocks beyond one per SM would only wait, and each holds 16 bytes of scratch per column.
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(rows, multiprocessor_count()));
  ScratchBuffer scratch(static_cast<std::size_t>(blocks) * 2 * static_cast<std::size_t>(cols) * sizeof(double), stream);
  sample_rows_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(logits), rows, cols, row_stride,
                                                         device_rules.rules(), device_rules.specials(rows),
                                                         scratch.as<double>(), out);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace zt::cuda::sampling

namespace zt::cuda {

void sample_rows(const void* logits, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                 const SamplingRule* rules, const SpecialToken* specials, std::int64_t* out, cudaStream_t stream) {
  if (rows == 0) return;
  ZT_REQUIRE(cols >= 1 && cols < INT_MAX,
             "sample_rows kernel: cols " + std::to_string(cols) + " must be in 1 .. " + std::to_string(INT_MAX - 1));
  const std::int64_t special_count = sampling::checked_special_count(rules, specials, rows, cols);
  // One upload from pageable memory: cudaMemcpyAsync has staged it when it returns.
  const std::size_t rule_bytes = static_cast<std::size_t>(rows) * sizeof(SamplingRule);
  std::vector<unsigned char> host(rule_bytes + static_cast<std::size_t>(special_count) * sizeof(SpecialToken));
  std::memcpy(host.data(), rules, rule_bytes);
  if (special_count > 0) std::memcpy(host.data() + rule_bytes, specials, host.size() - rule_bytes);
  sampling::DeviceRules device_rules{ScratchBuffer(host.size(), stream)};
  ZT_CUDA_CHECK(cudaMemcpyAsync(device_rules.buffer.data(), host.data(), host.size(), cudaMemcpyHostToDevice, stream));
  const int width = static_cast<int>(cols);
  dispatch_float_type<GpuFloatTypesWithF64>(dtype, "sample_rows", [&]<typename T>() {
    sampling::launch<T>(logits, rows, width, row_stride, device_rules, out, stream);
  });
}

}  // namespace zt::cuda
