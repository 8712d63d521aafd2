// Two small models built from the differentiable ops, and a loop that trains them with
// AdamW: the CPU and GPU training tests share them, so the GPU run can be compared with
// the CPU's loss curve step by step.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "autograd/checkpoint.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "ops/optim/adamw.h"
#include "runtime/generator.h"

namespace zt::testing {

using autograd::Variable;

inline Variable parameter(const std::string& name, const Shape& shape, std::uint64_t seed, DType dtype, Device device,
                          double std_dev) {
  Tensor value =
      std_dev == 0.0 ? Tensor::ones(shape, DType::kF64) : Tensor::normal(shape, seed, 0, 0.0, std_dev, DType::kF64);
  return Variable(value.to(dtype).to(device), true, name);
}

inline Tensor index_tensor(const std::vector<double>& values, DType dtype, Device device) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype).to(device);
}

// Two packed sequences of uneven lengths whose next token follows from the current one,
// so a model can learn it; the last token of each sequence has no label.
struct TokenBatch {
  Tensor tokens, positions, cu_seqlens, labels;
  std::int64_t vocab = 19;

  TokenBatch(Device device, std::vector<std::int64_t> lengths = {9, 6}) {
    std::vector<double> token_ids, position_ids, label_ids, cu{0};
    for (std::size_t s = 0; s < lengths.size(); ++s) {
      std::int64_t t = 2 + 5 * static_cast<std::int64_t>(s);
      for (std::int64_t i = 0; i < lengths[s]; ++i) {
        std::int64_t next = (3 * t + 1) % vocab;
        token_ids.push_back(t);
        position_ids.push_back(i);
        label_ids.push_back(i + 1 < lengths[s] ? next : -100);
        t = next;
      }
      cu.push_back(cu.back() + lengths[s]);
    }
    tokens = index_tensor(token_ids, DType::kI64, device);
    positions = index_tensor(position_ids, DType::kI64, device);
    labels = index_tensor(label_ids, DType::kI64, device);
    cu_seqlens = index_tensor(cu, DType::kI32, device);
  }
};

// embedding -> linear -> SwiGLU -> linear -> cross-entropy.
struct TinyMlp {
  std::vector<Variable> params;
  TinyMlp(DType dtype, Device device) {
    params = {
        parameter("embed", {19, 12}, 1, dtype, device, 1.0), parameter("fc1.weight", {26, 12}, 2, dtype, device, 0.3),
        parameter("fc1.bias", {26}, 3, dtype, device, 0.1), parameter("fc2.weight", {19, 13}, 4, dtype, device, 0.3)};
  }
  Variable loss(const TokenBatch& batch) const {
    using namespace autograd;
    Variable hidden = embedding(params[0], batch.tokens);
    Variable logits = linear(swiglu_fused(linear(hidden, params[1], params[2])), params[3]);
    return cross_entropy(logits, batch.labels);
  }
};

// One pre-norm transformer block between an embedding and an LM head: RMSNorm ->
// attention (q/k/v with bias, RoPE, 4 query heads over 2 K/V heads) -> residual ->
// RMSNorm -> SwiGLU MLP -> residual -> RMSNorm -> LM head -> cross-entropy.
struct TinyBlock {
  static constexpr std::int64_t kHidden = 24, kHeads = 4, kKvHeads = 2, kHeadDim = 6, kFfn = 20;
  std::vector<Variable> params;
  double dropout_p = 0.0;

  TinyBlock(DType dtype, Device device) {
    const double s = 1.0 / std::sqrt(static_cast<double>(kHidden));
    const std::int64_t kv = kKvHeads * kHeadDim;
    params = {parameter("embed", {19, kHidden}, 11, dtype, device, 1.0),
              parameter("attn_norm", {kHidden}, 0, dtype, device, 0.0),
              parameter("q.weight", {kHidden, kHidden}, 12, dtype, device, s),
              parameter("q.bias", {kHidden}, 13, dtype, device, 0.02),
              parameter("k.weight", {kv, kHidden}, 14, dtype, device, s),
              parameter("k.bias", {kv}, 15, dtype, device, 0.02),
              parameter("v.weight", {kv, kHidden}, 16, dtype, device, s),
              parameter("v.bias", {kv}, 17, dtype, device, 0.02),
              parameter("o.weight", {kHidden, kHidden}, 18, dtype, device, s),
              parameter("mlp_norm", {kHidden}, 0, dtype, device, 0.0),
              parameter("gate.weight", {kFfn, kHidden}, 19, dtype, device, s),
              parameter("up.weight", {kFfn, kHidden}, 20, dtype, device, s),
              parameter("down.weight", {kHidden, kFfn}, 21, dtype, device, 1.0 / std::sqrt(double(kFfn))),
              parameter("final_norm", {kHidden}, 0, dtype, device, 0.0),
              parameter("lm_head", {19, kHidden}, 22, dtype, device, s)};
  }

  // The block itself on hidden states [tokens, hidden]; p holds the block's parameters
  // (params[1..12]) so a checkpoint can pass them as its inputs.
  Variable block(const Variable& x, const std::vector<Variable>& p, const TokenBatch& batch) const {
    using namespace autograd;
    const std::int64_t tokens = x.data().size(0);
    ops::RopeConfig rope_config{ops::RopeStyle::kRotateHalf, 10000.0, 1.0};
    Variable h = rmsnorm(x, p[0], 1e-6f, ops::RmsNormStyle::kQwen);
    Variable q = rope(reshape(linear(h, p[1], p[2]), {tokens, kHeads, kHeadDim}), batch.positions, rope_config);
    Variable k = rope(reshape(linear(h, p[3], p[4]), {tokens, kKvHeads, kHeadDim}), batch.positions, rope_config);
    Variable v = reshape(linear(h, p[5], p[6]), {tokens, kKvHeads, kHeadDim});
    Variable attended = attention(q, k, v, batch.cu_seqlens, {1.0 / std::sqrt(double(kHeadDim)), true});
    Variable after_attention = residual_add(dropout(linear(reshape(attended, {tokens, kHidden}), p[7]), dropout_p), x);
    Variable m = rmsnorm(after_attention, p[8], 1e-6f, ops::RmsNormStyle::kQwen);
    Variable mlp = linear(swiglu(linear(m, p[9]), linear(m, p[10])), p[11]);
    return residual_add(mlp, after_attention);
  }

  std::vector<Variable> block_params() const { return {params.begin() + 1, params.begin() + 13}; }

  Variable head_loss(const Variable& hidden, const TokenBatch& batch) const {
    using namespace autograd;
    return cross_entropy(linear(rmsnorm(hidden, params[13], 1e-6f, ops::RmsNormStyle::kQwen), params[14]),
                         batch.labels);
  }

  Variable loss(const TokenBatch& batch) const {
    return head_loss(block(autograd::embedding(params[0], batch.tokens), block_params(), batch), batch);
  }
};

// AdamW on float32 parameters, which are their own master copies here.
class TinyAdamW {
 public:
  explicit TinyAdamW(const std::vector<Variable>& params) : params_(params) {
    for (const Variable& p : params) {
      exp_avg_.push_back(Tensor::zeros(p.data().shape(), DType::kF32, p.data().device()));
      exp_avg_sq_.push_back(Tensor::zeros(p.data().shape(), DType::kF32, p.data().device()));
    }
  }
  void step() {
    autograd::NoGradGuard no_recording;
    ++step_;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      ops::AdamWConfig config{.lr = 2e-2, .hyperparameters = {.weight_decay = 0.01}, .step = step_};
      ops::adamw_step(params_[i].data(), exp_avg_[i], exp_avg_sq_[i], params_[i].grad(), config);
      params_[i].zero_grad();
    }
  }

 private:
  std::vector<Variable> params_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  std::int64_t step_ = 0;
};

// The loss before each of `steps` optimizer steps.
template <typename Model>
std::vector<double> train(const Model& model, Device device, int steps) {
  TokenBatch batch(device);
  TinyAdamW optimizer(model.params);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    Variable loss = model.loss(batch);
    losses.push_back(loss.data().item());
    loss.backward();
    optimizer.step();
  }
  return losses;
}

// Gradients of every parameter of the block from one backward, with dropout on.
inline std::vector<std::vector<double>> block_gradients(Device device, bool checkpointed) {
  TinyBlock model(DType::kF32, device);
  model.dropout_p = 0.2;
  TokenBatch batch(device);
  default_generator().manual_seed(1234);
  Variable x = autograd::embedding(model.params[0], batch.tokens, /*deterministic=*/true);
  Variable hidden;
  if (checkpointed) {
    std::vector<Variable> inputs{x};
    for (const Variable& p : model.block_params()) inputs.push_back(p);
    auto fn = [&](const std::vector<Variable>& in) {
      return std::vector<Variable>{model.block(in[0], {in.begin() + 1, in.end()}, batch)};
    };
    hidden = autograd::checkpoint(fn, inputs)[0];
  } else {
    hidden = model.block(x, model.block_params(), batch);
  }
  model.head_loss(hidden, batch).backward();
  std::vector<std::vector<double>> grads;
  for (const Variable& p : model.params) grads.push_back(p.grad().to_vector());
  return grads;
}

}  // namespace zt::testing
