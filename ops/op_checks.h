// Argument checks shared by every op. A failed check throws zt::Error naming the op, the
// arguments and both values (shapes, dtypes or devices), so a user sees what to change.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include "tensor/tensor.h"

namespace zt::ops {

using NamedTensor = std::pair<const char*, const Tensor*>;

// All tensors defined and on one device; returns that device.
Device check_same_device(const char* op, std::initializer_list<NamedTensor> tensors);
// All tensors of one dtype; returns it.
DType check_same_dtype(const char* op, std::initializer_list<NamedTensor> tensors);
void check_same_shape(const char* op, NamedTensor a, NamedTensor b);
void check_dim(const char* op, NamedTensor t, std::int64_t expected_dim);
void check_size(const char* op, NamedTensor t, std::int64_t dim, std::int64_t expected, const std::string& why);
void check_floating(const char* op, NamedTensor t);
// The dtypes a CUDA kernel of this op supports (f32, bf16, f16); f64 is CPU-only.
void check_cuda_float(const char* op, NamedTensor t);
// check_floating, and check_cuda_float on a GPU: a dtype this op's kernels on t's device take.
void check_float_on_device(const char* op, NamedTensor t);

// Whether a [tokens, heads, head_dim] tensor has its heads and head dims contiguous (strides
// [any, head_dim, 1]): a head slice of a fused projection is, at any token stride.
bool heads_contiguous(const Tensor& t);

}  // namespace zt::ops
