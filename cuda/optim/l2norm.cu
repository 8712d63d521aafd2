#include "cuda/optim/l2norm.cuh"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/multi_tensor.cuh"
#include "cuda/common/scratch_buffer.h"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 512;
constexpr std::int64_t kChunk = 65536;

// One tensor as a launch sees it: elements [0, head) one by one, the rest in 16-byte
// vectors (plus a one-by-one tail); its chunks' partials start at partials[first_partial].
struct Slot {
  const void* data;
  std::int64_t n;
  std::int64_t first_partial;
  std::int32_t head;
};

struct Launch {
  Slot tensors[kMaxTensorsPerLaunch];
  ChunkIndex index;
  float* partials;
};
static_assert(sizeof(Launch) <= 4096, "a launch's arguments must fit the classic 4 KiB kernel-argument limit");

std::int64_t chunks_of(const Slot& t) {
  if (t.n == 0) return 0;
  std::int64_t rest = t.n - std::min<std::int64_t>(t.head, t.n);
  return std::max<std::int64_t>(1, (rest + kChunk - 1) / kChunk);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) sum_squares_kernel(Launch launch) {
  constexpr int W = kVectorWidth<T>;
  const int which = launch.index.tensor_of(static_cast<std::int32_t>(blockIdx.x));
  const Slot t = launch.tensors[which];
  const std::int64_t local = blockIdx.x - launch.index.begin[which];
  const T* x = static_cast<const T*>(t.data);
  const std::int64_t first = t.head < t.n ? t.head : t.n;
  const std::int64_t begin = first + local * kChunk;
  const std::int64_t end = begin + kChunk < t.n ? begin + kChunk : t.n;
  const std::int64_t packed_end = begin + (end - begin) / W * W;
  float sum = 0.0f;
  if (local == 0)
    for (std::int64_t i = threadIdx.x; i < first; i += blockDim.x) sum += load_float(x + i) * load_float(x + i);
  for (std::int64_t i = begin + static_cast<std::int64_t>(W) * threadIdx.x; i < packed_end;
       i += static_cast<std::int64_t>(W) * blockDim.x) {
    float v[W];
    load_vector_ro<T, W>(x + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) sum += v[k] * v[k];
  }
  for (std::int64_t i = packed_end + threadIdx.x; i < end; i += blockDim.x)
    sum += load_float(x + i) * load_float(x + i);
  sum = block_sum(sum);
  if (threadIdx.x == 0) launch.partials[t.first_partial + local] = sum;
}

__global__ void sqrt_of_sum_kernel(const float* partials, std::int64_t count, float* out) {
  double sum = 0.0;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += static_cast<double>(partials[i]);
  sum = block_sum(sum);
  if (threadIdx.x == 0) *out = static_cast<float>(sqrt(sum));
}

}  // namespace

void l2_norm_multi(const L2NormTensor* tensors, std::size_t count, float* out, cudaStream_t stream) {
  std::vector<Slot> slots;
  std::map<DType, std::vector<std::size_t>> groups;
  std::int64_t partials = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const L2NormTensor& t = tensors[i];
    std::int64_t head = aligned_head(t.data, dtype_size(t.dtype), static_cast<std::int64_t>(16 / dtype_size(t.dtype)));
    ZT_REQUIRE(head >= 0, "l2_norm_multi: tensor " + std::to_string(i) + " is not aligned to its element size");
    slots.push_back({t.data, t.n, partials, static_cast<std::int32_t>(head)});
    partials += chunks_of(slots.back());
    groups[t.dtype].push_back(i);
  }
  ScratchBuffer buffer(static_cast<std::size_t>(std::max<std::int64_t>(partials, 1)) * sizeof(float), stream);
  Launch args{};
  args.partials = buffer.as<float>();
  for (const auto& [dtype, members] : groups)
    dispatch_float_type(dtype, "l2_norm_multi", [&]<typename T>() {
      launch_slots(members, slots, args, chunks_of, [&](const Launch& launch, unsigned blocks) {
        sum_squares_kernel<T><<<blocks, kThreads, 0, stream>>>(launch);
      });
    });
  sqrt_of_sum_kernel<<<1, 256, 0, stream>>>(buffer.as<float>(), partials, out);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
