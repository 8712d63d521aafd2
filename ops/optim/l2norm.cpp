#include "ops/optim/l2norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "cuda/optim/l2norm.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "ops/optim/host_chunks.h"
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

// Adds the squares to `sum` in float64. A tensor of one chunk is added element by element, as
// a plain loop over the list would; a larger one (an offloaded partition of billions of
// elements) is summed chunk by chunk on every core (ops/optim/host_chunks.h) and the chunks'
// sums added in order, the same on any number of cores.
void add_squares(const Tensor& packed, double& sum) {
  const std::int64_t n = packed.numel();
  std::vector<double> partial((n + kHostChunkElements - 1) / kHostChunkElements, 0.0);
  host::dispatch_float(packed.dtype(), kOp, [&]<typename T>() {
    const T* data = packed.data<T>();
    if (partial.size() <= 1) {
      for (std::int64_t i = 0; i < n; ++i) sum += to_double(data[i]) * to_double(data[i]);
      return;
    }
    for_each_host_chunk(n, [&](std::int64_t begin, std::int64_t end, std::int64_t chunk) {
      double lanes[4] = {};  // four running sums: the additions need not wait on each other
      std::int64_t i = begin;
      for (; i + 4 <= end; i += 4)
        for (int lane = 0; lane < 4; ++lane) lanes[lane] += to_double(data[i + lane]) * to_double(data[i + lane]);
      for (; i < end; ++i) lanes[0] += to_double(data[i]) * to_double(data[i]);
      partial[static_cast<std::size_t>(chunk)] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    });
    for (double chunk_sum : partial) sum += chunk_sum;
  });
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
    add_squares(t.contiguous(), sum);
  }
  return Tensor::full({}, std::sqrt(sum), any_f64 ? DType::kF64 : DType::kF32);
}

}  // namespace zt::ops
