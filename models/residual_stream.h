// The hidden state between a decoder's blocks and the RMSNorms that read it.
//
// The state is kept as residual + delta, the add left to the norm that reads it next (the next
// layer's input norm, its post-attention norm, or the final norm), which adds and normalizes in
// one kernel bit for bit as the pair. In a decode step on the GPU the projection that reads a
// norm may run the add and the norm as its own prologue (ops/gemm/norm_prologue.h), and the norm
// is then no launch at all: PendingNorm offers the norm to that projection first.
#pragma once

#include <optional>

#include "autograd/variable.h"
#include "models/activation_dump.h"
#include "models/config/config.h"
#include "ops/gemm/norm_prologue.h"

namespace zt::models {

using autograd::Variable;

// residual + delta; delta undefined: the state is residual alone.
struct ResidualStream {
  Variable residual;
  Variable delta;
  Variable summed() const;  // residual + delta as one tensor
};

// RMSNorm of the stream's state: {the summed state, its norm}, one kernel when delta is defined.
struct NormedSum {
  Variable sum;
  Variable normed;
};
NormedSum normed_stream(const ModelConfig& config, const ResidualStream& x, const Variable& weight);

// A norm of the stream that a projection reads, run when its output is first asked for: by the
// projection's kernel as its prologue (through_prologue) where it takes one, else as
// normed_stream's kernel. Either way sum() is the state after the add. The prologue is offered
// only where nothing records the layer or its gradients and the stream has an add to fuse.
class PendingNorm {
 public:
  PendingNorm(const ModelConfig& config, ResidualStream stream, Variable weight, const LayerRecording& record,
              const char* point);

  // The norm's output (recorded at `point`), computed on the first call unless a projection ran it.
  const Variable& normed();
  // The stream's state after the add.
  const Variable& sum();

  // product(x, prologue) is a projection that runs `prologue` in front of its product of x, or
  // declines with nullopt having done nothing. Its output, or nullopt where the norm cannot be
  // a prologue here or the product declined: the caller then projects normed().
  template <typename Product>
  std::optional<Tensor> through_prologue(const Product& product) {
    const ops::NormPrologue* prologue = offered_prologue();
    if (prologue == nullptr) return std::nullopt;
    std::optional<Tensor> y = product(stream_.delta.data(), prologue);
    if (y) sum_ = Variable(prologue->sum);
    return y;
  }

 private:
  const ops::NormPrologue* offered_prologue();

  const ModelConfig& config_;
  ResidualStream stream_;
  Variable weight_;
  const LayerRecording& record_;
  const char* point_;
  std::optional<ops::NormPrologue> prologue_;
  Variable sum_, normed_;
};

}  // namespace zt::models
