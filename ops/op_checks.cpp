#include "ops/op_checks.h"

#include "runtime/error.h"

namespace zt::ops {
namespace {

std::string prefix(const char* op) { return std::string(op) + ": "; }

}  // namespace

Device check_same_device(const char* op, std::initializer_list<NamedTensor> tensors) {
  const NamedTensor* first = nullptr;
  for (const NamedTensor& t : tensors) {
    ZT_REQUIRE(t.second->defined(), prefix(op) + t.first + " is an undefined tensor");
    if (first == nullptr) first = &t;
    ZT_REQUIRE(t.second->device() == first->second->device(),
               prefix(op) + first->first + " is on " + first->second->device().str() + " but " + t.first + " is on " +
                   t.second->device().str() + "; move both to one device with .to()");
  }
  return first ? first->second->device() : Device::cpu();
}

DType check_same_dtype(const char* op, std::initializer_list<NamedTensor> tensors) {
  const NamedTensor* first = nullptr;
  for (const NamedTensor& t : tensors) {
    if (first == nullptr) first = &t;
    ZT_REQUIRE(t.second->dtype() == first->second->dtype(),
               prefix(op) + first->first + " is " + dtype_name(first->second->dtype()) + " but " + t.first + " is " +
                   dtype_name(t.second->dtype()) + "; cast one with .to(dtype)");
  }
  return first ? first->second->dtype() : DType::kF32;
}

void check_same_shape(const char* op, NamedTensor a, NamedTensor b) {
  ZT_REQUIRE(a.second->shape() == b.second->shape(),
             prefix(op) + a.first + " has shape " + shape_str(a.second->shape()) + " but " + b.first + " has shape " +
                 shape_str(b.second->shape()) + "; they must be equal");
}

void check_dim(const char* op, NamedTensor t, std::int64_t expected_dim) {
  ZT_REQUIRE(t.second->dim() == expected_dim, prefix(op) + t.first + " must have " + std::to_string(expected_dim) +
                                                  " dimensions, got shape " + shape_str(t.second->shape()));
}

void check_size(const char* op, NamedTensor t, std::int64_t dim, std::int64_t expected, const std::string& why) {
  ZT_REQUIRE(t.second->size(dim) == expected, prefix(op) + t.first + " has shape " + shape_str(t.second->shape()) +
                                                  "; dimension " + std::to_string(dim) + " must be " +
                                                  std::to_string(expected) + " (" + why + ")");
}

void check_floating(const char* op, NamedTensor t) {
  ZT_REQUIRE(is_floating(t.second->dtype()),
             prefix(op) + t.first + " must be a floating tensor, got " + dtype_name(t.second->dtype()));
}

void check_cuda_float(const char* op, NamedTensor t) {
  DType d = t.second->dtype();
  ZT_REQUIRE(d == DType::kF32 || d == DType::kBF16 || d == DType::kF16,
             prefix(op) + t.first + " is " + dtype_name(d) +
                 "; on the GPU this op takes float32, bfloat16 or float16 (float64 is for CPU gradient checks)");
}

void check_float_on_device(const char* op, NamedTensor t) {
  check_floating(op, t);
  if (t.second->device().is_cuda()) check_cuda_float(op, t);
}

bool heads_contiguous(const Tensor& t) {
  return (t.size(2) <= 1 || t.stride(2) == 1) && (t.size(1) <= 1 || t.stride(1) == t.size(2));
}

}  // namespace zt::ops
