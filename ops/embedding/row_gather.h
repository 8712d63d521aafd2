// Rows of a matrix picked by an index, summed over up to two indices, an index of -1 picking
// nothing: a shared prefix's gather (models/shared_prefix.h) and its backward. A gather whose
// index reads a row twice has as backward the sum of the two output rows that read it, a
// gather again, so no atomic adds are needed and every run gives the same bits.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

// x [rows, width] float; first and second int32 [n] on x's device, entries in [-1, rows)
// (second may be undefined). -> [n, width] of x's dtype:
//   out[i] = (first[i] >= 0 ? x[first[i]] : 0) + (second[i] >= 0 ? x[second[i]] : 0)
// summed in float (float64 for float64) and rounded once; one index copies rows exactly.
Tensor gather_rows(const Tensor& x, const Tensor& first, const Tensor& second = Tensor());

// A gather and its backward as gathers: out = x[index]; x's gradient row r is the sum of the
// output gradient rows that read r, listed in sources (each int32 [rows of x], -1 for none;
// the second undefined when no row is read twice).
struct RowGather {
  Tensor index;
  Tensor first_source;
  Tensor second_source;
};

}  // namespace zt::ops
