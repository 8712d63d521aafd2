#include "ops/optim/l2norm.h"

#include <cmath>
#include <string>

#include "cuda/optim/l2norm.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

const char* kOp = "l2_norm";

std::string name_of(std::size_t index) { return "tensors[" + std::to_string(index) + "]"; }

void check_tensors(const std::vector<Tensor>& tensors) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    std::string name = name_of(i);
    check_same_device(kOp, {{"tensors[0]", &tensors[0]}, {name.c_str(), &tensors[i]}});
    check_float_on_device(kOp, {name.c_str(), &tensors[i]});
  }
}

// Contiguous copies of views stay referenced until the launches are queued; the caching
// allocator keeps their memory from reuse until the stream has passed it.
Tensor l2_norm_cuda(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> packed;
  std::vector<cuda::L2NormTensor> args;
  for (const Tensor& t : tensors) {
    packed.push_back(t.contiguous());
    args.push_back({packed.back().data_ptr(), t.dtype(), t.numel()});
  }
  Tensor out = Tensor::empty({}, DType::kF32, tensors[0].device());
  cuda::l2_norm_multi(args.data(), args.size(), out.data<float>(), current_stream());
  return out;
}

}  // namespace

Tensor l2_norm(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) return Tensor::zeros({}, DType::kF32);
  check_tensors(tensors);
  if (tensors[0].device().is_cuda()) return l2_norm_cuda(tensors);
  double sum = 0.0;
  bool any_f64 = false;
  for (const Tensor& t : tensors) {
    any_f64 = any_f64 || t.dtype() == DType::kF64;
    Tensor packed = t.contiguous();
    host::dispatch_float(packed.dtype(), kOp, [&]<typename T>() {
      const T* data = packed.data<T>();
      for (std::int64_t i = 0; i < packed.numel(); ++i) sum += to_double(data[i]) * to_double(data[i]);
    });
  }
  return Tensor::full({}, std::sqrt(sum), any_f64 ? DType::kF64 : DType::kF32);
}

}  // namespace zt::ops
