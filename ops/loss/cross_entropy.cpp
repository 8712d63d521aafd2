#include "ops/loss/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "cuda/loss/cross_entropy.cuh"
#include "ops/loss/loss_labels.h"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

DType loss_dtype(const Tensor& logits) { return logits.dtype() == DType::kF64 ? DType::kF64 : DType::kF32; }

void check_inputs(const char* op, const Tensor& logits, const Tensor& labels) {
  check_same_device(op, {{"logits", &logits}, {"labels", &labels}});
  check_float_on_device(op, {"logits", &logits});
  check_dim(op, {"logits", &logits}, 2);
  check_label_shape(op, labels, {"logits", &logits});
  ZT_REQUIRE(logits.size(1) >= 1, std::string(op) + ": logits " + shape_str(logits.shape()) + " have no classes");
}

cuda::CrossEntropyProblem problem(const Tensor& logits, const Tensor& labels, const CrossEntropyOptions& options) {
  return {logits.data_ptr(), logits.dtype(), labels.data_ptr(),    labels.dtype(),
          logits.size(0),    logits.size(1), options.ignore_index, options.reduction == Reduction::kMean};
}

// CPU reference in float64, outputs rounded once.
CrossEntropyOutput cpu_forward(const Tensor& logits, const std::vector<double>& labels,
                               const CrossEntropyOptions& options) {
  std::int64_t tokens = logits.size(0), vocab = logits.size(1);
  std::vector<double> x = logits.to_vector(), lse(static_cast<std::size_t>(tokens));
  double total = 0.0;
  std::int64_t valid = 0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const double* row = x.data() + t * vocab;
    double max = *std::max_element(row, row + vocab), sum = 0.0;
    for (std::int64_t j = 0; j < vocab; ++j) sum += std::exp(row[j] - max);
    lse[t] = max + std::log(sum);
    auto label = static_cast<std::int64_t>(labels[t]);
    if (label == options.ignore_index) continue;
    total += lse[t] - row[label];
    ++valid;
  }
  // All tokens ignored: loss 0, not 0/0 (see cross_entropy_forward).
  double loss = options.reduction == Reduction::kSum ? total : (valid > 0 ? total / static_cast<double>(valid) : 0.0);
  DType dtype = loss_dtype(logits);
  return {Tensor::from_values({loss}, {}, dtype), Tensor::from_values(lse, {tokens}, dtype),
          Tensor::from_values({static_cast<double>(valid)}, {}, DType::kI64)};
}

Tensor cpu_backward(double grad_loss, const Tensor& logits, const std::vector<double>& labels,
                    const std::vector<double>& lse, std::int64_t valid, const CrossEntropyOptions& options) {
  std::int64_t tokens = logits.size(0), vocab = logits.size(1);
  std::vector<double> x = logits.to_vector(), grad(x.size(), 0.0);
  double scale =
      options.reduction == Reduction::kMean && valid > 0 ? grad_loss / static_cast<double>(valid) : grad_loss;
  for (std::int64_t t = 0; t < tokens; ++t) {
    auto label = static_cast<std::int64_t>(labels[t]);
    if (label == options.ignore_index) continue;
    for (std::int64_t j = 0; j < vocab; ++j)
      grad[t * vocab + j] = (std::exp(x[t * vocab + j] - lse[t]) - (j == label ? 1.0 : 0.0)) * scale;
  }
  return Tensor::from_values(grad, logits.shape(), logits.dtype());
}

}  // namespace

CrossEntropyOutput cross_entropy_forward(const Tensor& logits, const Tensor& labels,
                                         const CrossEntropyOptions& options) {
  const char* op = "cross_entropy";
  check_inputs(op, logits, labels);
  Tensor x = logits.contiguous(), y = labels.contiguous();
  check_label_values(op, y, x.size(1), options.ignore_index, "");
  if (!x.device().is_cuda()) return cpu_forward(x, y.to_vector(), options);
  CrossEntropyOutput out{Tensor::empty({}, DType::kF32, x.device()),
                         Tensor::empty({x.size(0)}, DType::kF32, x.device()),
                         Tensor::empty({}, DType::kI64, x.device())};
  DeviceGuard guard(x.device().index);
  cuda::cross_entropy_forward(problem(x, y, options), out.logsumexp.data<float>(), out.loss.data<float>(),
                              out.valid_count.data<std::int64_t>(), current_stream());
  return out;
}

Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& labels,
                              const Tensor& saved_logsumexp, const Tensor& valid_count,
                              const CrossEntropyOptions& options) {
  const char* op = "cross_entropy_backward";
  check_inputs(op, logits, labels);
  check_same_device(op, {{"logits", &logits},
                         {"grad_loss", &grad_loss},
                         {"saved_logsumexp", &saved_logsumexp},
                         {"valid_count", &valid_count}});
  DType dtype = loss_dtype(logits);
  for (const NamedTensor& t : {NamedTensor{"grad_loss", &grad_loss}, NamedTensor{"saved_logsumexp", &saved_logsumexp}})
    ZT_REQUIRE(t.second->dtype() == dtype, std::string(op) + ": " + t.first + " is " + dtype_name(t.second->dtype()) +
                                               " but the loss of " + dtype_name(logits.dtype()) + " logits is " +
                                               dtype_name(dtype));
  ZT_REQUIRE(grad_loss.numel() == 1 && valid_count.numel() == 1 && valid_count.dtype() == DType::kI64,
             std::string(op) + ": grad_loss (shape " + shape_str(grad_loss.shape()) + ") and valid_count (shape " +
                 shape_str(valid_count.shape()) + ", " + dtype_name(valid_count.dtype()) +
                 ") must be single values, valid_count int64 as the forward returns it");
  check_size(op, {"saved_logsumexp", &saved_logsumexp}, 0, logits.size(0), "one value per row of logits");
  Tensor x = logits.contiguous(), y = labels.contiguous(), lse = saved_logsumexp.contiguous();
  check_label_values(op, y, x.size(1), options.ignore_index, "");
  if (!x.device().is_cuda())
    return cpu_backward(grad_loss.item(), x, y.to_vector(), lse.to_vector(),
                        static_cast<std::int64_t>(valid_count.item()), options);
  Tensor grad = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor scale = grad_loss.contiguous();
  DeviceGuard guard(x.device().index);
  cuda::cross_entropy_backward(problem(x, y, options), scale.data<float>(), lse.data<float>(),
                               valid_count.data<std::int64_t>(), grad.data_ptr(), current_stream());
  return grad;
}

}  // namespace zt::ops
