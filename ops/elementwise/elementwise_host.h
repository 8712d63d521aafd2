// Element access for the CPU references. float64 computes in double; float32 and the
// 16-bit floats compute in float, and 16-bit values round to their dtype where torch stores
// an intermediate, so the CPU reproduces torch's bits for 16-bit inputs.
#pragma once

#include <string>
#include <type_traits>

#include "runtime/error.h"
#include "tensor/dispatch.h"

namespace zt::ops::host {

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
Acc<T> load(T value) {
  return static_cast<Acc<T>>(to_double(value));
}

template <typename T>
T store(Acc<T> value) {
  return from_double<T>(value);
}

// Rounds a computed value through T, as storing it in a tensor of T would.
template <typename T>
Acc<T> round(Acc<T> value) {
  return load<T>(store<T>(value));
}

// Calls f.template operator()<T>() for the float dtypes the CPU references take, through the
// one host dtype switch (tensor/dispatch.h).
template <typename F>
decltype(auto) dispatch_float(DType dtype, const char* op, F&& f) {
  using Result = decltype(f.template operator()<float>());
  return dispatch_dtype(dtype, [&]<typename T>() -> Result {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return f.template operator()<T>();
    else
      throw Error(std::string(op) + ": takes float64, float32, bfloat16 or float16, got " + dtype_name(dtype));
  });
}

}  // namespace zt::ops::host
