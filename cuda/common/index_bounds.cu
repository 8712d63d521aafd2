#include "cuda/common/index_bounds.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/scratch_buffer.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

// The flag holds count - position of the earliest bad index (0: none), so atomicMax keeps
// the earliest whatever order the threads run in.
template <typename Index>
__global__ void find_out_of_range_kernel(const Index* indices, std::int64_t count, std::int64_t limit, bool has_ignore,
                                         std::int64_t ignore, unsigned long long* flag) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    auto value = static_cast<std::int64_t>(indices[i]);
    bool valid = (value >= 0 && value < limit) || (has_ignore && value == ignore);
    if (!valid) atomicMax(flag, static_cast<unsigned long long>(count - i));
  }
}

}  // namespace

std::int64_t first_index_out_of_range(const void* indices, DType dtype, std::int64_t count, std::int64_t limit,
                                      bool has_ignore, std::int64_t ignore, cudaStream_t stream) {
  ZT_REQUIRE(dtype == DType::kI32 || dtype == DType::kI64,
             std::string("index check: indices must be int32 or int64, got ") + dtype_name(dtype));
  if (count == 0) return -1;
  ScratchBuffer flag(sizeof(unsigned long long), stream);
  ZT_CUDA_CHECK(cudaMemsetAsync(flag.data(), 0, sizeof(unsigned long long), stream));
  constexpr int kThreads = 256;
  unsigned blocks = grid_size(count, kThreads);
  if (dtype == DType::kI32)
    find_out_of_range_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const std::int32_t*>(indices), count, limit,
                                                              has_ignore, ignore, flag.as<unsigned long long>());
  else
    find_out_of_range_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const std::int64_t*>(indices), count, limit,
                                                              has_ignore, ignore, flag.as<unsigned long long>());
  ZT_CUDA_CHECK(cudaGetLastError());
  unsigned long long found = 0;
  ZT_CUDA_CHECK(cudaMemcpyAsync(&found, flag.data(), sizeof(found), cudaMemcpyDeviceToHost, stream));
  ZT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return found == 0 ? -1 : count - static_cast<std::int64_t>(found);
}

}  // namespace zt::cuda
