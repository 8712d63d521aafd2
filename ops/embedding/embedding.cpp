#include "ops/embedding/embedding.h"

#include <string>

#include "cuda/common/index_bounds.cuh"
#include "cuda/embedding/embedding.cuh"
#include "ops/elementwise/accumulate.h"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"
#include "tensor/dispatch.h"

namespace zt::ops {
namespace {

// "[1, 2]": the multi-index of flat position `flat` in `shape`.
std::string position_str(std::int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(index);
}

// Calls f.template operator()<Id>() with the index type of an int32 or int64 tensor.
template <typename F>
void dispatch_index(DType dtype, F&& f) {
  if (dtype == DType::kI32)
    f.template operator()<std::int32_t>();
  else
    f.template operator()<std::int64_t>();
}

void check_ids(const char* op, const Tensor& ids) {
  ZT_REQUIRE(ids.dtype() == DType::kI32 || ids.dtype() == DType::kI64,
             std::string(op) + ": ids must be int32 or int64, got " + dtype_name(ids.dtype()));
}

// Throws when an id lies outside [0, vocab). `ids` is contiguous.
void check_ids_in_range(const char* op, const Tensor& ids, std::int64_t vocab) {
  std::int64_t bad = -1;
  // Inside a CUDA graph capture nothing can be read back; the ids there are the model's own
  // choices, already within the vocabulary.
  if (ids.device().is_cuda() && stream_is_capturing(current_stream())) return;
  if (ids.device().is_cuda()) {
    DeviceGuard guard(ids.device().index);
    bad = cuda::first_index_out_of_range(ids.data_ptr(), ids.dtype(), ids.numel(), vocab, false, 0, current_stream());
  } else {
    dispatch_index(ids.dtype(), [&]<typename Id>() {
      const Id* data = ids.data<Id>();
      for (std::int64_t i = 0; i < ids.numel() && bad < 0; ++i)
        if (static_cast<std::int64_t>(data[i]) < 0 || static_cast<std::int64_t>(data[i]) >= vocab) bad = i;
    });
  }
  if (bad < 0) return;
  auto id = static_cast<std::int64_t>(ids.reshape({ids.numel()}).select(0, bad).item());
  fail(std::string(op) + ": id " + std::to_string(id) + " at position " + position_str(bad, ids.shape()) + " of ids " +
       shape_str(ids.shape()) + " is outside the vocabulary of " + std::to_string(vocab) + " rows");
}

Shape with_hidden(const Tensor& ids, std::int64_t hidden) {
  Shape shape = ids.shape();
  shape.push_back(hidden);
  return shape;
}

template <typename T, typename Id>
void cpu_gather(const Tensor& weight, const Tensor& ids, Tensor& out) {
  std::int64_t hidden = weight.size(1);
  const T* table = weight.data<T>();
  const Id* index = ids.data<Id>();
  T* dst = out.data<T>();
  for (std::int64_t t = 0; t < ids.numel(); ++t)
    for (std::int64_t h = 0; h < hidden; ++h)
      dst[t * hidden + h] = table[static_cast<std::int64_t>(index[t]) * hidden + h];
}

// Float64 sums for float64 and float32 grads, float32 sums for 16-bit ones; rounded once.
Tensor cpu_scatter_add(const Tensor& grad, const Tensor& ids, std::int64_t vocab) {
  DType accumulate = grad.dtype() == DType::kF64 || grad.dtype() == DType::kF32 ? DType::kF64 : DType::kF32;
  std::int64_t hidden = grad.size(-1);
  Tensor rows = grad.to(accumulate).contiguous();
  Tensor sums = Tensor::zeros({vocab, hidden}, accumulate);
  auto add = [&]<typename A, typename Id>() {
    const A* src = rows.data<A>();
    const Id* index = ids.data<Id>();
    A* dst = sums.data<A>();
    for (std::int64_t t = 0; t < ids.numel(); ++t)
      for (std::int64_t h = 0; h < hidden; ++h)
        dst[static_cast<std::int64_t>(index[t]) * hidden + h] += src[t * hidden + h];
  };
  dispatch_index(ids.dtype(), [&]<typename Id>() {
    if (accumulate == DType::kF64)
      add.template operator()<double, Id>();
    else
      add.template operator()<float, Id>();
  });
  return sums.to(grad.dtype());
}

void check_sink(const char* op, const Tensor& sink, const Device& device, std::int64_t vocab, std::int64_t hidden) {
  ZT_REQUIRE(sink.dtype() == DType::kF32 && sink.is_contiguous() && sink.device() == device &&
                 sink.shape() == (Shape{vocab, hidden}),
             std::string(op) + ": the gradient sink is " + dtype_name(sink.dtype()) + " " + shape_str(sink.shape()) +
                 " on " + sink.device().str() + "; it must be a contiguous float32 [" + std::to_string(vocab) + ", " +
                 std::to_string(hidden) + "] on " + device.str());
}

}  // namespace

Tensor embedding_forward(const Tensor& weight, const Tensor& ids) {
  const char* op = "embedding";
  Device device = check_same_device(op, {{"weight", &weight}, {"ids", &ids}});
  check_dim(op, {"weight", &weight}, 2);
  check_float_on_device(op, {"weight", &weight});
  check_ids(op, ids);
  Tensor index = ids.contiguous(), table = weight.contiguous();
  check_ids_in_range(op, index, weight.size(0));
  Tensor out = Tensor::empty(with_hidden(ids, weight.size(1)), weight.dtype(), device);
  if (device.is_cuda()) {
    DeviceGuard guard(device.index);
    cuda::embedding_forward(table.data_ptr(), index.data_ptr(), index.dtype(), out.data_ptr(), table.dtype(),
                            index.numel(), table.size(1), current_stream());
    return out;
  }
  dispatch_dtype(table.dtype(), [&]<typename T>() {
    dispatch_index(index.dtype(), [&]<typename Id>() { cpu_gather<T, Id>(table, index, out); });
  });
  return out;
}

Tensor embedding_backward(const Tensor& grad_out, const Tensor& ids, std::int64_t vocab_size, bool deterministic,
                          const Tensor& sink) {
  const char* op = "embedding_backward";
  Device device = check_same_device(op, {{"grad_out", &grad_out}, {"ids", &ids}});
  check_float_on_device(op, {"grad_out", &grad_out});
  check_ids(op, ids);
  ZT_REQUIRE(vocab_size >= 1, std::string(op) + ": vocab_size must be at least 1, got " + std::to_string(vocab_size));
  ZT_REQUIRE(grad_out.dim() == ids.dim() + 1 && grad_out.shape() == with_hidden(ids, grad_out.shape().back()),
             std::string(op) + ": grad_out has shape " + shape_str(grad_out.shape()) + " but ids have shape " +
                 shape_str(ids.shape()) + "; grad_out must be [ids..., hidden]");
  Tensor index = ids.contiguous(), grad = grad_out.contiguous();
  check_ids_in_range(op, index, vocab_size);
  std::int64_t hidden = grad.size(-1);
  const bool into_sink = sink.defined();
  if (into_sink) check_sink(op, sink, device, vocab_size, hidden);
  if (!device.is_cuda()) {
    // The dense sum rounded to grad's dtype, then added: the bits a delivered gradient gives.
    Tensor dense = cpu_scatter_add(grad, index, vocab_size);
    if (!into_sink) return dense;
    accumulate_(sink, dense);
    return Tensor();
  }
  DeviceGuard guard(device.index);
  if (into_sink && deterministic) {
    cuda::embedding_backward_deterministic_add(grad.data_ptr(), grad.dtype(), index.data_ptr(), index.dtype(),
                                               sink.data<float>(), index.numel(), vocab_size, hidden, current_stream());
    return Tensor();
  }
  if (into_sink) {
    cuda::embedding_backward_atomic(grad.data_ptr(), grad.dtype(), index.data_ptr(), index.dtype(), sink.data<float>(),
                                    index.numel(), hidden, current_stream());
    return Tensor();
  }
  if (deterministic) {
    Tensor dweight = Tensor::empty({vocab_size, hidden}, grad.dtype(), device);
    cuda::embedding_backward_deterministic(grad.data_ptr(), grad.dtype(), index.data_ptr(), index.dtype(),
                                           dweight.data_ptr(), index.numel(), vocab_size, hidden, current_stream());
    return dweight;
  }
  Tensor sums = Tensor::zeros({vocab_size, hidden}, DType::kF32, device);
  cuda::embedding_backward_atomic(grad.data_ptr(), grad.dtype(), index.data_ptr(), index.dtype(), sums.data<float>(),
                                  index.numel(), hidden, current_stream());
  return sums.to(grad.dtype());
}

}  // namespace zt::ops
