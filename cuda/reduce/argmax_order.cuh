// The order argmax follows, shared by every kernel that picks a row's first largest value:
// a NaN before any number (the first NaN among NaNs), then the larger value, then the smaller
// column. It is total, so a reduction's result does not depend on the order candidates meet
// in. A thread that saw no element holds (-inf, INT_MAX), which every real element precedes.
#pragma once

namespace zt::cuda {

template <typename V>
__device__ __forceinline__ bool precedes(V a, int a_index, V b, int b_index) {
  const bool a_nan = isnan(a), b_nan = isnan(b);
  if (a_nan || b_nan) return a_nan && (!b_nan || a_index < b_index);
  if (a != b) return a > b;
  return a_index < b_index;
}

template <typename V>
__device__ __forceinline__ void keep_first(V& value, int& index, V other, int other_index) {
  if (precedes(other, other_index, value, index)) value = other, index = other_index;
}

}  // namespace zt::cuda
