// Calls a template lambda with the host element type of a DType:
//   dispatch_dtype(t.dtype(), [&]<typename T>() { ... T ... });
// The 16-bit floats map to zt::Half and zt::BFloat16 (bits), converted by to_double/from_double.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace zt {

// The same with the 16-bit floats as Half16 and BFloat16T: device code passes CUDA's __half
// and __nv_bfloat16.
template <typename Half16, typename BFloat16T, typename F>
decltype(auto) dispatch_dtype_as(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f.template operator()<float>();
    case DType::kF64:
      return f.template operator()<double>();
    case DType::kF16:
      return f.template operator()<Half16>();
    case DType::kBF16:
      return f.template operator()<BFloat16T>();
    case DType::kI32:
      return f.template operator()<std::int32_t>();
    case DType::kI64:
      return f.template operator()<std::int64_t>();
    case DType::kU8:
      return f.template operator()<std::uint8_t>();
    case DType::kBool:
      return f.template operator()<bool>();
  }
  throw Error("unknown dtype code " + std::to_string(static_cast<int>(dtype)));
}

template <typename F>
decltype(auto) dispatch_dtype(DType dtype, F&& f) {
  return dispatch_dtype_as<Half, BFloat16>(dtype, f);
}

template <typename T>
double to_double(T value) {
  if constexpr (std::is_same_v<T, Half>)
    return half_bits_to_float(value.bits);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bf16_bits_to_float(value.bits);
  else
    return static_cast<double>(value);
}

template <typename T>
T from_double(double value) {
  if constexpr (std::is_same_v<T, Half>)
    return Half{float_to_half_bits(static_cast<float>(value))};
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16{float_to_bf16_bits(static_cast<float>(value))};
  else if constexpr (std::is_same_v<T, bool>)
    return value != 0.0;
  else
    return static_cast<T>(value);
}

// Element conversion as torch's copy_ does it; integers to integers stay exact.
template <typename D, typename S>
D convert_element(S value) {
  if constexpr (std::is_same_v<D, S>)
    return value;
  else if constexpr (std::is_integral_v<D> && std::is_integral_v<S> && !std::is_same_v<D, bool>)
    return static_cast<D>(value);
  else if constexpr (std::is_same_v<D, bool> && std::is_integral_v<S>)
    return value != 0;
  // Float to a narrower integer goes through int64, so out-of-range values wrap (as torch's
  // CPU copy does) instead of being undefined; the GPU kernel does the same.
  else if constexpr (std::is_integral_v<D> && !std::is_same_v<D, bool>)
    return static_cast<D>(static_cast<std::int64_t>(to_double(value)));
  else if constexpr (std::is_same_v<D, BFloat16> && std::is_same_v<S, float>)
    return BFloat16{float_to_bf16_bits(value)};
  else if constexpr (std::is_same_v<D, Half> && std::is_same_v<S, float>)
    return Half{float_to_half_bits(value)};
  else
    return from_double<D>(to_double(value));
}

}  // namespace zt
