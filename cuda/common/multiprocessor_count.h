// The current device's streaming multiprocessors: what kernels size their grids by when a
// shape alone would leave SMs idle (split-K, blocks per SM).
#pragma once

namespace zt::cuda {

int multiprocessor_count();

}  // namespace zt::cuda
