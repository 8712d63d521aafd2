// Maps a float DType onto the CUDA element type its kernels are instantiated for. The GPU
// kernels of the ops take float32, bfloat16 and float16; anything else is a caller's bug
// (ops/ checks dtypes first), reported with the kernel's name.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace zt::cuda {

template <typename F>
void dispatch_float_type(DType dtype, const char* kernel, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f.template operator()<float>();
    case DType::kBF16:
      return f.template operator()<__nv_bfloat16>();
    case DType::kF16:
      return f.template operator()<__half>();
    default:
      throw Error(std::string(kernel) + ": the GPU kernel takes float32, bfloat16 or float16, got " +
                  dtype_name(dtype));
  }
}

// Calls f.template operator()<I>() for int32 or int64 indices (ids, labels, positions);
// `what` names them in the error ("cross_entropy: labels").
template <typename F>
void dispatch_index_type(DType dtype, const std::string& what, F&& f) {
  if (dtype == DType::kI32) return f.template operator()<std::int32_t>();
  if (dtype == DType::kI64) return f.template operator()<std::int64_t>();
  throw Error(what + " must be int32 or int64, got " + dtype_name(dtype));
}

// Calls f.template operator()<T, I>() for a kernel over float data indexed by int32 or int64.
template <typename F>
void dispatch_float_and_index_types(DType dtype, DType index_dtype, const char* kernel, const char* indices, F&& f) {
  dispatch_float_type(dtype, kernel, [&]<typename T>() {
    dispatch_index_type(index_dtype, std::string(kernel) + ": " + indices,
                        [&]<typename I>() { f.template operator()<T, I>(); });
  });
}

// Threads for one block working along a row: a multiple of the warp size, 32 to 256.
inline int row_block_threads(std::int64_t row_length) {
  if (row_length >= 256) return 256;
  return row_length <= 32 ? 32 : static_cast<int>((row_length + 31) / 32 * 32);
}

}  // namespace zt::cuda
