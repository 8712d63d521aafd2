// Passes over a whole host-memory partition that are not the CPU Adam itself (the gradient
// norm before it, zeroing the gradients after it) split across this rank's cores. With
// optimizer offload those arrays hold billions of float32s: one thread takes seconds per pass,
// longer than the update. The range is cut into fixed chunks, whatever the number of threads,
// so a result summed chunk by chunk in chunk order is the same on any machine.
#pragma once

#include <cstdint>
#include <functional>

#include "tensor/tensor.h"

namespace zt::ops {

inline constexpr std::int64_t kHostChunkElements = std::int64_t{1} << 22;

// Calls body(begin, end, chunk) for each chunk [chunk * kHostChunkElements, ...) of [0, n),
// on a process-wide pool of default_cpu_adam_threads() threads (callers take turns), or on the
// calling thread when n fits one chunk. `body` must not throw.
void for_each_host_chunk(std::int64_t n,
                         const std::function<void(std::int64_t begin, std::int64_t end, std::int64_t chunk)>& body);

// Sets a contiguous host tensor to zero, by chunks.
void zero_host_tensor(Tensor& tensor);

}  // namespace zt::ops
