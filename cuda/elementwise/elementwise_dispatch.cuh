// Maps a float DType onto the CUDA element type its kernels are instantiated for: the one
// dtype switch of cuda/. The GPU kernels of the ops take float32, bfloat16 and float16; a
// family instantiated for other types names them (FloatTypes). Anything else is a caller's bug
// (ops/ checks dtypes first), reported with the kernel's name and the types it takes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace zt::cuda {

// The CUDA element types a kernel family is instantiated for, in the order its error lists them.
template <typename... T>
struct FloatTypes {};
using GpuFloatTypes = FloatTypes<float, __nv_bfloat16, __half>;
using GpuFloatTypesWithF64 = FloatTypes<double, float, __nv_bfloat16, __half>;
using GpuHalfTypes = FloatTypes<__nv_bfloat16, __half>;  // the tensor-core kernels

namespace dispatch_detail {

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, double>) return DType::kF64;
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return DType::kBF16;
  if constexpr (std::is_same_v<T, __half>) return DType::kF16;
}

// "float32, bfloat16 or float16"
template <typename... T>
std::string type_list(FloatTypes<T...>) {
  const DType dtypes[] = {dtype_of<T>()...};
  std::string list;
  for (std::size_t i = 0; i < sizeof...(T); ++i) {
    if (i > 0) list += i + 1 == sizeof...(T) ? " or " : ", ";
    list += dtype_name(dtypes[i]);
  }
  return list;
}

template <typename... T, typename F>
bool call_with(DType dtype, F& f, FloatTypes<T...>) {
  return ((dtype == dtype_of<T>() && (f.template operator()<T>(), true)) || ...);
}

}  // namespace dispatch_detail

// Calls f.template operator()<T>() with the CUDA type of `dtype`, one of Types; else throws
// "<kernel>: the GPU kernel takes <Types>, got <dtype><otherwise>".
template <typename Types = GpuFloatTypes, typename F>
void dispatch_float_type(DType dtype, const char* kernel, F&& f, const char* otherwise = "") {
  if (dispatch_detail::call_with(dtype, f, Types{})) return;
  std::string message = kernel;
  message += ": the GPU kernel takes ";
  message += dispatch_detail::type_list(Types{});
  message += ", got ";
  message += dtype_name(dtype);
  throw Error(message + otherwise);
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

}  // namespace zt::cuda
