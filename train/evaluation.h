// The evaluation loss, computed one way for the trainer's evaluation (--eval_strategy) and
// for `zerotune evaluate`, so both give the same eval_loss for the same samples and model:
// the samples in order, per_device_eval_batch_size to a micro-batch laid out as training
// lays it out (train/data/batching.h), each micro-batch's summed token loss
// (models/token_loss.h) without gradients, and the sum divided by the label tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "models/batch.h"
#include "models/model.h"
#include "train/data/batching.h"

namespace zt::train {

struct EvaluationLoss {
  double loss_sum = 0.0;
  std::int64_t label_tokens = 0;
  double mean() const { return loss_sum / static_cast<double>(label_tokens > 0 ? label_tokens : 1); }
};

EvaluationLoss evaluation_loss(const models::CausalLM& model, const std::vector<TokenizedSample>& samples,
                               std::int64_t batch_size, std::int64_t max_length, const BatchLayout& layout = {});

// A micro-batch's tensors on `device`, as the token loss takes them.
models::PackedBatch device_batch(const PackedBatch& batch, Device device);

}  // namespace zt::train
