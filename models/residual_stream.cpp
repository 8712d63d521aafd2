#include "models/residual_stream.h"

#include <utility>
#include <vector>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"

namespace zt::models {

using namespace autograd;

Variable ResidualStream::summed() const { return delta.defined() ? residual_add(delta, residual) : residual; }

NormedSum normed_stream(const ModelConfig& config, const ResidualStream& x, const Variable& weight) {
  const auto eps = static_cast<float>(config.norm_eps);
  if (!x.delta.defined()) return {x.residual, rmsnorm(x.residual, weight, eps, config.norm_style)};
  std::vector<Variable> fused = residual_rmsnorm(x.delta, x.residual, weight, eps, config.norm_style);
  return {fused[0], fused[1]};
}

PendingNorm::PendingNorm(const ModelConfig& config, ResidualStream stream, Variable weight,
                         const LayerRecording& record, const char* point)
    : config_(config), stream_(std::move(stream)), weight_(std::move(weight)), record_(record), point_(point) {}

const Variable& PendingNorm::normed() {
  if (normed_.defined()) return normed_;
  if (sum_.defined()) {  // a projection ran the norm: the norm of the stored sum has the same bits
    normed_ = rmsnorm(sum_, weight_, static_cast<float>(config_.norm_eps), config_.norm_style);
  } else {
    NormedSum result = normed_stream(config_, stream_, weight_);
    sum_ = std::move(result.sum);
    normed_ = std::move(result.normed);
  }
  normed_ = record_(point_, normed_);
  return normed_;
}

const Variable& PendingNorm::sum() {
  if (!sum_.defined()) normed();
  return sum_;
}

const ops::NormPrologue* PendingNorm::offered_prologue() {
  if (sum_.defined() || !stream_.delta.defined() || record_.recorder != nullptr || grad_enabled() ||
      !stream_.delta.data().device().is_cuda())
    return nullptr;
  if (!prologue_) {
    const Tensor& delta = stream_.delta.data();
    prologue_ = ops::NormPrologue{.residual = stream_.residual.data(),
                                  .weight = weight_.data(),
                                  .sum = Tensor::empty(delta.shape(), delta.dtype(), delta.device()),
                                  .eps = static_cast<float>(config_.norm_eps),
                                  .style = config_.norm_style};
  }
  return &*prologue_;
}

}  // namespace zt::models
