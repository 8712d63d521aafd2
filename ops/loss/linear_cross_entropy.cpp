#include "ops/loss/linear_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "cuda/loss/linear_cross_entropy.cuh"
#include "cuda/loss/linear_cross_entropy_kernels.cuh"
#include "ops/elementwise/accumulate.h"
#include "ops/loss/loss_labels.h"
#include "ops/op_checks.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

const char* kOp = "linear_cross_entropy";

DType loss_dtype(DType dtype) { return dtype == DType::kF64 ? DType::kF64 : DType::kF32; }

void check_inputs(const Tensor& hidden, const Tensor& weight, const Tensor& labels,
                  const LinearCrossEntropyOptions& options) {
  check_same_device(kOp, {{"hidden", &hidden}, {"weight", &weight}, {"labels", &labels}});
  check_same_dtype(kOp, {{"hidden", &hidden}, {"weight", &weight}});
  check_float_on_device(kOp, {"hidden", &hidden});
  check_dim(kOp, {"hidden", &hidden}, 2);
  check_dim(kOp, {"weight", &weight}, 2);
  check_size(kOp, {"weight", &weight}, 1, hidden.size(1),
             "hidden_size, as hidden " + shape_str(hidden.shape()) + " has");
  ZT_REQUIRE(weight.size(0) >= 1 && weight.size(1) >= 1,
             std::string(kOp) + ": weight has shape " + shape_str(weight.shape()) +
                 "; it needs at least one class (dimension 0) and one hidden feature (dimension 1)");
  check_label_shape(kOp, labels, {"hidden", &hidden});
  ZT_REQUIRE(options.chunk_tokens >= 0, std::string(kOp) + ": chunk_tokens is " + std::to_string(options.chunk_tokens) +
                                            "; use 0 (automatic) or a positive count");
  ZT_REQUIRE(
      std::isfinite(options.grad_scale) && options.grad_scale > 0.0,
      std::string(kOp) + ": grad_scale is " + std::to_string(options.grad_scale) + "; it must be finite and > 0");
  const Tensor& weights = options.token_weights;
  if (!weights.defined()) return;
  ZT_REQUIRE(weights.dtype() == loss_dtype(hidden.dtype()) && weights.dim() == 1 && weights.size(0) == hidden.size(0) &&
                 weights.device() == hidden.device(),
             std::string(kOp) + ": token_weights has shape " + shape_str(weights.shape()) + " and dtype " +
                 dtype_name(weights.dtype()) + "; it must be [" + std::to_string(hidden.size(0)) + "] of " +
                 dtype_name(loss_dtype(hidden.dtype())) +
                 " (the loss's dtype) on hidden's device, one weight per "
                 "token");
}

// CPU reference in float64, one token at a time (so it holds one row of logits), rounded
// once at the end.
LinearCrossEntropyOutput cpu_forward(const Tensor& hidden, const Tensor& weight, const Tensor& labels,
                                     const LinearCrossEntropyOptions& options,
                                     const LinearCrossEntropyGradsNeeded& needed) {
  const std::int64_t tokens = hidden.size(0), size = hidden.size(1), vocab = weight.size(0);
  const std::vector<double> h = hidden.to_vector(), w = weight.to_vector(), y = labels.to_vector();
  const std::vector<double> token_weight =
      options.token_weights.defined() ? options.token_weights.to_vector() : std::vector<double>(tokens, 1.0);
  std::vector<double> token_loss(tokens, 0.0);
  std::int64_t valid =
      std::count_if(y.begin(), y.end(), [&](double l) { return static_cast<std::int64_t>(l) != options.ignore_index; });
  const bool mean = options.reduction == Reduction::kMean;
  const double scale = mean && valid > 0 ? options.grad_scale / static_cast<double>(valid) : options.grad_scale;
  std::vector<double> grad_h(needed.hidden ? h.size() : 0), grad_w(needed.weight ? w.size() : 0), z(vocab);
  double total = 0.0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    auto label = static_cast<std::int64_t>(y[t]);
    if (label == options.ignore_index) continue;
    const double* ht = h.data() + t * size;
    for (std::int64_t v = 0; v < vocab; ++v) z[v] = std::inner_product(ht, ht + size, w.data() + v * size, 0.0);
    double max = *std::max_element(z.begin(), z.end()), sum = 0.0;
    for (double x : z) sum += std::exp(x - max);
    double lse = max + std::log(sum);
    token_loss[t] = (lse - z[label]) * token_weight[t];
    total += token_loss[t];
    if (!needed.hidden && !needed.weight) continue;
    for (std::int64_t v = 0; v < vocab; ++v) {
      double d = (std::exp(z[v] - lse) - (v == label ? 1.0 : 0.0)) * scale * token_weight[t];
      const double* wv = w.data() + v * size;
      for (std::int64_t k = 0; k < size && needed.hidden; ++k) grad_h[t * size + k] += d * wv[k];
      for (std::int64_t k = 0; k < size && needed.weight; ++k) grad_w[v * size + k] += d * ht[k];
    }
  }
  double loss = mean ? (valid > 0 ? total / static_cast<double>(valid) : 0.0) : total;
  LinearCrossEntropyOutput out{Tensor::from_values({loss}, {}, loss_dtype(hidden.dtype())),
                               Tensor::from_values({static_cast<double>(valid)}, {}, DType::kI64), Tensor(), Tensor()};
  if (needed.hidden) out.grad_hidden = Tensor::from_values(grad_h, hidden.shape(), hidden.dtype());
  if (needed.weight) out.grad_weight = Tensor::from_values(grad_w, weight.shape(), loss_dtype(weight.dtype()));
  if (options.token_losses) out.token_loss = Tensor::from_values(token_loss, {tokens}, loss_dtype(hidden.dtype()));
  return out;
}

LinearCrossEntropyOutput cuda_forward(const Tensor& hidden, const Tensor& weight, const Tensor& labels,
                                      const LinearCrossEntropyOptions& options,
                                      const LinearCrossEntropyGradsNeeded& needed) {
  Device device = hidden.device();
  DeviceGuard guard(device.index);
  const std::int64_t tokens = hidden.size(0), vocab = weight.size(0);
  LinearCrossEntropyOutput out{Tensor::empty({}, DType::kF32, device), Tensor::empty({}, DType::kI64, device), Tensor(),
                               Tensor()};
  if (needed.hidden) out.grad_hidden = Tensor::empty(hidden.shape(), hidden.dtype(), device);
  if (needed.weight) out.grad_weight = Tensor::empty(weight.shape(), DType::kF32, device);
  if (options.token_losses) out.token_loss = Tensor::empty({tokens}, DType::kF32, device);
  cuda::LinearCrossEntropyProblem p;
  p.hidden = hidden.data_ptr();
  p.weight = weight.data_ptr();
  p.dtype = hidden.dtype();
  p.labels = labels.data_ptr();
  p.label_dtype = labels.dtype();
  p.tokens = tokens;
  p.hidden_size = hidden.size(1);
  p.vocab = vocab;
  p.ignore_index = options.ignore_index;
  p.mean = options.reduction == Reduction::kMean;
  p.grad_scale = static_cast<float>(options.grad_scale);
  p.float32_logits = options.float32_logits;
  p.chunk_tokens = options.chunk_tokens > 0 ? options.chunk_tokens
                                            : cuda::default_chunk_tokens(tokens, vocab, options.float32_logits,
                                                                         hidden.dtype(), needed.weight);
  const Tensor weights = options.token_weights.defined() ? options.token_weights.contiguous() : Tensor();
  p.token_weights = weights.defined() ? weights.data<float>() : nullptr;
  cuda::LinearCrossEntropyResult r{out.loss.data<float>(), out.valid_count.data<std::int64_t>(),
                                   needed.hidden ? out.grad_hidden.data_ptr() : nullptr,
                                   needed.weight ? out.grad_weight.data<float>() : nullptr,
                                   options.token_losses ? out.token_loss.data<float>() : nullptr};
  cuda::linear_cross_entropy(p, r, current_stream());
  return out;
}

// grad · grad_loss / grad_scale in `dtype`.
Tensor scaled(const Tensor& grad, const Tensor& grad_loss, double grad_scale, DType dtype) {
  if (!grad.defined()) return Tensor();
  if (grad.device().is_cpu()) {
    double factor = grad_loss.item() / grad_scale;
    std::vector<double> values = grad.to_vector();
    for (double& x : values) x *= factor;
    return Tensor::from_values(values, grad.shape(), dtype);
  }
  DeviceGuard guard(grad.device().index);
  Tensor out = Tensor::empty(grad.shape(), dtype, grad.device());
  cuda::scale_gradient(grad.data_ptr(), grad.dtype(), out.data_ptr(), dtype, grad.numel(), grad_loss.data<float>(),
                       static_cast<float>(1.0 / grad_scale), /*accumulate=*/false, current_stream());
  return out;
}

// sink += grad · grad_loss / grad_scale: on the GPU in float32, unrounded; on the CPU rounded
// to `dtype` first, the bits a delivered gradient gives (the CPU runs are the references the
// other engines are compared with bit for bit).
void add_scaled(const Tensor& sink, const Tensor& grad, const Tensor& grad_loss, double grad_scale, DType dtype) {
  ZT_REQUIRE(sink.dtype() == DType::kF32 && sink.is_contiguous() && sink.device() == grad.device() &&
                 sink.shape() == grad.shape(),
             std::string("linear_cross_entropy_backward: the weight's gradient sink is ") + dtype_name(sink.dtype()) +
                 " " + shape_str(sink.shape()) + " on " + sink.device().str() + "; it must be a contiguous float32 " +
                 shape_str(grad.shape()) + " on " + grad.device().str());
  if (grad.device().is_cpu()) return accumulate_(sink, scaled(grad, grad_loss, grad_scale, dtype));
  DeviceGuard guard(grad.device().index);
  cuda::scale_gradient(grad.data_ptr(), grad.dtype(), sink.data_ptr(), DType::kF32, grad.numel(),
                       grad_loss.data<float>(), static_cast<float>(1.0 / grad_scale), /*accumulate=*/true,
                       current_stream());
}

}  // namespace

LinearCrossEntropyOutput linear_cross_entropy_forward(const Tensor& hidden, const Tensor& weight, const Tensor& labels,
                                                      const LinearCrossEntropyOptions& options,
                                                      const LinearCrossEntropyGradsNeeded& needed) {
  check_inputs(hidden, weight, labels, options);
  Tensor h = hidden.contiguous(), w = weight.contiguous(), y = labels.contiguous();
  check_label_values(kOp, y, w.size(0), options.ignore_index, " of weight");
  if (h.device().is_cuda()) return cuda_forward(h, w, y, options, needed);
  return cpu_forward(h, w, y, options, needed);
}

LinearCrossEntropyGrads linear_cross_entropy_backward(const Tensor& grad_loss, const LinearCrossEntropyOutput& forward,
                                                      DType weight_dtype, const LinearCrossEntropyOptions& options,
                                                      const Tensor& weight_sink) {
  const char* op = "linear_cross_entropy_backward";
  ZT_REQUIRE(forward.loss.defined(), std::string(op) +
                                         ": the forward output has no loss; pass what "
                                         "linear_cross_entropy_forward returned");
  check_same_device(op, {{"grad_loss", &grad_loss}, {"loss", &forward.loss}});
  ZT_REQUIRE(grad_loss.numel() == 1 && grad_loss.dtype() == forward.loss.dtype(),
             std::string(op) + ": grad_loss has shape " + shape_str(grad_loss.shape()) + " and dtype " +
                 dtype_name(grad_loss.dtype()) + "; it must be a single " + dtype_name(forward.loss.dtype()) +
                 " value, as the loss is");
  ZT_REQUIRE(std::isfinite(options.grad_scale) && options.grad_scale > 0.0,
             std::string(op) + ": grad_scale is " + std::to_string(options.grad_scale) + "; it must be finite and > 0");
  Tensor g = grad_loss.contiguous();
  LinearCrossEntropyGrads grads;
  if (forward.grad_hidden.defined())
    grads.grad_hidden = scaled(forward.grad_hidden, g, options.grad_scale, forward.grad_hidden.dtype());
  if (forward.grad_weight.defined() && weight_sink.defined())
    add_scaled(weight_sink, forward.grad_weight, g, options.grad_scale, weight_dtype);
  else if (forward.grad_weight.defined())
    grads.grad_weight = scaled(forward.grad_weight, g, options.grad_scale, weight_dtype);
  return grads;
}

}  // namespace zt::ops
