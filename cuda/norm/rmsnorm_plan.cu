#include "cuda/norm/rmsnorm_row.cuh"

#include "runtime/dtype.h"

namespace zt::cuda::rmsnorm_detail {
namespace {

// A group holds at most 512 threads x 8 vectors: with two rows of 8 x 16-byte registers per
// thread (the backward's grad_y and x) that is 64 registers of data, within the 128 a
// 512-thread block may use without spilling.
constexpr int kMaxGroupThreads = 512;
// Blocks of at least this many threads, several rows each when rows are short, so a block
// has enough loads in flight to hide memory latency.
constexpr int kMinBlockThreads = 256;

int round_up_to_warp(std::int64_t threads) { return static_cast<int>((threads + 31) / 32 * 32); }

}  // namespace

Plan make_plan(DType dtype, std::int64_t hidden, std::initializer_list<const void*> pointers) {
  bool vectorizable = (hidden * static_cast<std::int64_t>(dtype_size(dtype))) % 16 == 0;
  for (const void* p : pointers) vectorizable = vectorizable && is_aligned(p, 16);
  Plan plan;
  plan.width = vectorizable ? static_cast<int>(16 / dtype_size(dtype)) : 1;
  std::int64_t vectors = hidden / plan.width;
  if (vectors <= 32) {
    plan.vectors_per_thread = 1;
    plan.group_threads = 32;
  } else if (vectors <= 4 * 32) {
    plan.vectors_per_thread = 4;
    plan.group_threads = 32;
  } else if (vectors <= 4 * kMaxGroupThreads) {
    plan.vectors_per_thread = 4;
    plan.group_threads = round_up_to_warp((vectors + 3) / 4);
  } else if (vectors <= 8 * kMaxGroupThreads) {
    plan.vectors_per_thread = 8;
    plan.group_threads = round_up_to_warp((vectors + 7) / 8);
  } else {
    plan.registers = false;
    plan.group_threads = kMaxGroupThreads;
    plan.groups = 1;
    return plan;
  }
  plan.registers = true;
  plan.groups = plan.group_threads >= kMinBlockThreads ? 1 : kMinBlockThreads / plan.group_threads;
  return plan;
}

}  // namespace zt::cuda::rmsnorm_detail
