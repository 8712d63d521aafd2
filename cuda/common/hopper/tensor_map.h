// Host side of the Hopper bulk copies: the tensor maps (TMA descriptors) that tma.cuh's
// load_box reads, encoded by the driver.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda::hopper {

// A 16-bit 3-D array: element (i0, i1, i2) at base + i1·stride1 + i2·stride2 bytes, i0
// contiguous. Boxes are 64 × 1 × box_rows elements (one 128-byte-swizzled block of a tile, as
// wgmma.cuh describes); i2 past size2 reads zeros.
struct TensorMapShape {
  std::uint64_t size0 = 0, size1 = 0, size2 = 0;
  std::uint64_t stride1_bytes = 0, stride2_bytes = 0;
  std::uint32_t box_rows = 0;
};

// Needs base and both strides 16-byte aligned (the caller has checked); throws zt::Error with
// the driver's reason otherwise.
CUtensorMap make_tensor_map(const void* base, DType dtype, const TensorMapShape& shape);

}  // namespace zt::cuda::hopper
