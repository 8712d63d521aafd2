#include <algorithm>
#include <optional>
#include <string>

#include "autograd/functions.h"
#include "autograd/node.h"
#include "autograd/op_region.h"
#include "autograd/saved_weight.h"
#include "ops/embedding/embedding.h"
#include "ops/embedding/row_gather.h"
#include "ops/gemm/linear.h"
#include "ops/gemm/lora_linear.h"
#include "ops/gemm/matmul.h"
#include "runtime/error.h"

namespace zt::autograd {

GradSinkRef GradSinkRef::of(const Variable& weight) {
  if (!weight.is_leaf() || !weight.requires_grad() || !weight.has_grad_sink()) return {};
  return {weight};
}

GradSinkRef GradSinkRef::on_the_gpu(const Variable& weight) {
  return weight.defined() && weight.data().device().is_cuda() ? of(weight) : GradSinkRef{};
}

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  OpRegion region("linear");
  Tensor y = ops::linear_forward(x.data(), weight.data(), bias.defined() ? bias.data() : Tensor());
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  // Only what the needed gradients read is kept: a frozen weight's layer keeps no input.
  Tensor saved_x = weight.requires_grad() ? x.data() : Tensor();
  SavedWeight saved_weight = x.requires_grad() ? SavedWeight::of(weight) : SavedWeight();
  // A trained weight's gradient may go straight into its sink (the optimizer's fp32 buffer).
  const GradSinkRef sink = GradSinkRef::of(weight);
  return record_one(
      "linear", std::move(y), inputs, [saved_x, saved_weight, sink](const TensorList& g, const NeedsList& needs) {
        bool with_bias = needs.size() > 2;
        ops::LinearGrads grads = ops::linear_backward(g[0], saved_x, needs[0] ? saved_weight.value() : Tensor(),
                                                      {needs[0], needs[1], with_bias && needs[2]},
                                                      {.grad_x = Tensor(), .weight_sink = sink.buffer()});
        TensorList out{grads.grad_x, grads.grad_weight};
        if (with_bias) out.push_back(grads.grad_bias);
        return out;
      });
}

// One projection: the same op as the several of projections().
Variable lora_linear(const Variable& x, const Variable& weight, const Variable& bias, const Variable& lora_a,
                     const Variable& lora_b, double scale) {
  return projections(x, {{.weight = weight, .bias = bias, .lora_a = lora_a, .lora_b = lora_b, .lora_scale = scale}})
      .front();
}

namespace {

// What the backward of one projection reads, and where its inputs sit in the node's inputs.
struct SavedProjection {
  SavedWeight weight;
  Tensor lora_a, lora_b, down;
  GradSinkRef sink;
  double lora_scale = 1.0;
  bool has_bias = false, has_lora = false;
  std::size_t first_input = 0;  // the weight; then the bias, then lora_a and lora_b
};

// `down`: the layer's columns of the stacked down-projection (ops::LoraStack), when its update
// is one of several computed together; undefined to compute its own.
SavedProjection save_projection(const Variable& x, const Projection& layer, const Tensor& down,
                                std::vector<Variable>& inputs, std::vector<Tensor>& outputs) {
  SavedProjection s;
  s.first_input = inputs.size();
  s.has_bias = layer.bias.defined();
  s.has_lora = layer.lora_a.defined();
  s.lora_scale = layer.lora_scale;
  const Tensor bias = s.has_bias ? layer.bias.data() : Tensor();
  if (s.has_lora && down.defined()) {
    outputs.push_back(ops::linear_forward(x.data(), layer.weight.data(), bias));
    ops::add_lora_up(outputs.back(), down, layer.lora_b.data());
    s.down = down;
  } else if (s.has_lora) {
    ops::LoraLinearOutput y = ops::lora_linear_forward(x.data(), layer.weight.data(), bias, layer.lora_a.data(),
                                                       layer.lora_b.data(), layer.lora_scale);
    outputs.push_back(y.y);
    s.down = y.down;
  } else {
    outputs.push_back(ops::linear_forward(x.data(), layer.weight.data(), bias));
  }
  if (s.has_lora) {
    s.lora_a = layer.lora_a.data();
    s.lora_b = layer.lora_b.data();
  }
  if (x.requires_grad()) s.weight = SavedWeight::of(layer.weight);
  s.sink = GradSinkRef::of(layer.weight);
  inputs.push_back(layer.weight);
  if (s.has_bias) inputs.push_back(layer.bias);
  if (s.has_lora) {
    inputs.push_back(layer.lora_a);
    inputs.push_back(layer.lora_b);
  }
  return s;
}

// Two or more updates of one scale read x together (ops::LoraStack); otherwise each its own.
std::optional<ops::LoraStack> shared_lora_stack(const std::vector<Projection>& layers) {
  if (layers.size() < 2) return std::nullopt;
  std::vector<Tensor> as;
  for (const Projection& layer : layers) {
    if (!layer.lora_a.defined() || layer.lora_scale != layers.front().lora_scale) return std::nullopt;
    as.push_back(layer.lora_a.data());
  }
  return ops::stack_lora(as, layers.front().lora_scale);
}

}  // namespace

std::vector<Variable> projections(const Variable& x, const std::vector<Projection>& layers) {
  OpRegion region("linear");
  std::vector<Variable> inputs{x};
  std::vector<Tensor> outputs;
  std::vector<SavedProjection> saved;
  bool reads_x = false;  // a trained weight or an update needs x in backward
  std::optional<ops::LoraStack> stack = shared_lora_stack(layers);
  const Tensor stacked_down = stack ? ops::lora_stacked_down(x.data(), *stack) : Tensor();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Tensor down = stack ? ops::stacked_down_of(stacked_down, *stack, i) : Tensor();
    saved.push_back(save_projection(x, layers[i], down, inputs, outputs));
    reads_x = reads_x || layers[i].weight.requires_grad() || layers[i].lora_a.defined();
  }
  const Tensor saved_x = reads_x ? x.data() : Tensor();
  return record("linear", std::move(outputs), inputs,
                [saved, saved_x, stack, stacked_down](const TensorList& g, const NeedsList& needs) {
                  TensorList grads(needs.size());
                  Tensor grad_x;  // the first layer's input gradient; the others' are added into it
                  for (std::size_t i = 0; i < saved.size(); ++i) {
                    const SavedProjection& s = saved[i];
                    const std::size_t k = s.first_input;
                    const ops::LinearGradsNeeded needed{needs[0], needs[k], s.has_bias && needs[k + 1]};
                    const ops::LinearGradTargets into{.grad_x = grad_x, .weight_sink = s.sink.buffer()};
                    const Tensor weight = needs[0] ? s.weight.value() : Tensor();  // may be produced again
                    ops::LinearGrads base;
                    if (s.has_lora && !stack) {
                      ops::LoraLinearGrads lora = ops::lora_linear_backward(g[i], saved_x, weight, s.lora_a, s.lora_b,
                                                                            s.down, s.lora_scale, needed, into);
                      base = lora.base;
                      grads[k + (s.has_bias ? 2 : 1)] = lora.grad_a;
                      grads[k + (s.has_bias ? 3 : 2)] = lora.grad_b;
                    } else {
                      base = ops::linear_backward(g[i], saved_x, weight, needed, into);
                    }
                    grad_x = base.grad_x;
                    grads[k] = base.grad_weight;
                    if (s.has_bias) grads[k + 1] = base.grad_bias;
                  }
                  if (stack) {
                    std::vector<Tensor> bs;
                    for (const SavedProjection& s : saved) bs.push_back(s.lora_b);
                    ops::LoraStackGrads lora =
                        ops::lora_stack_backward(g, saved_x, bs, *stack, stacked_down, needs[0] ? grad_x : Tensor());
                    for (std::size_t i = 0; i < saved.size(); ++i) {
                      const std::size_t a_input = saved[i].first_input + (saved[i].has_bias ? 2 : 1);
                      grads[a_input] = lora.grad_a[i];
                      grads[a_input + 1] = lora.grad_b[i];
                    }
                  }
                  grads[0] = grad_x;
                  return grads;
                });
}

namespace {

std::optional<Tensor> adjacent_data(const std::vector<Variable>& weights) {
  std::vector<Tensor> parts;
  for (const Variable& w : weights) parts.push_back(w.data());
  return Tensor::adjacent_rows(parts);
}

// The weights' sinks as one [Σ rows, in] matrix, when every weight has one and they lie one
// after another. Asked in backward, when the sinks' buffers are.
Tensor joined_sink(const std::vector<GradSinkRef>& sinks) {
  std::vector<Tensor> buffers;
  for (const GradSinkRef& sink : sinks) {
    buffers.push_back(sink.buffer());
    if (!buffers.back().defined()) return Tensor();
  }
  return Tensor::adjacent_rows(buffers).value_or(Tensor());
}

}  // namespace

Variable joined_linear(const Variable& x, const std::vector<Variable>& weights) {
  OpRegion region("linear");
  const std::optional<Tensor> joined = adjacent_data(weights);
  ZT_REQUIRE(joined.has_value(), "joined_linear: the " + std::to_string(weights.size()) +
                                     " weights are not stored one after another in one tensor");
  std::vector<Variable> inputs{x};
  bool any_trained = false;
  std::vector<std::int64_t> rows;
  std::vector<GradSinkRef> sinks;
  for (const Variable& w : weights) {
    inputs.push_back(w);
    any_trained = any_trained || w.requires_grad();
    rows.push_back(w.data().size(0));
    sinks.push_back(GradSinkRef::of(w));
  }
  const Tensor saved_x = any_trained ? x.data() : Tensor();
  const Tensor saved_weight = x.requires_grad() ? *joined : Tensor();
  return record_one("linear", ops::linear_forward(x.data(), *joined), inputs,
                    [saved_x, saved_weight, sinks, rows](const TensorList& g, const NeedsList& needs) {
                      const bool weights_needed = std::any_of(needs.begin() + 1, needs.end(), [](bool n) { return n; });
                      ops::LinearGrads grads = ops::linear_backward(
                          g[0], saved_x, needs[0] ? saved_weight : Tensor(), {needs[0], weights_needed, false},
                          {.grad_x = Tensor(), .weight_sink = joined_sink(sinks)});
                      TensorList out{grads.grad_x};
                      std::int64_t first = 0;
                      for (std::size_t i = 0; i < rows.size(); ++i) {
                        const bool mine = grads.grad_weight.defined() && needs[i + 1];
                        out.push_back(mine ? grads.grad_weight.narrow(0, first, rows[i]) : Tensor());
                        first += rows[i];
                      }
                      return out;
                    });
}

Variable matmul(const Variable& a, const Variable& b, bool transpose_a, bool transpose_b) {
  OpRegion region("matmul");
  Tensor a_value = a.data(), b_value = b.data();
  return record_one("matmul", ops::matmul_forward(a_value, b_value, transpose_a, transpose_b), {a, b},
                    [=](const TensorList& g, const NeedsList& needs) {
                      ops::MatmulGrads grads = ops::matmul_backward(g[0], a_value, b_value, transpose_a, transpose_b);
                      return TensorList{needs[0] ? grads.grad_a : Tensor(), needs[1] ? grads.grad_b : Tensor()};
                    });
}

Variable embedding(const Variable& weight, const Tensor& ids, bool deterministic) {
  OpRegion region("embedding");
  std::int64_t vocab_size = weight.data().size(0);
  // A trained table's gradient rows may go straight into its sink (the optimizer's fp32 buffer).
  const GradSinkRef sink = GradSinkRef::on_the_gpu(weight);
  return record_one("embedding", ops::embedding_forward(weight.data(), ids), {weight},
                    [ids, vocab_size, deterministic, sink](const TensorList& g, const NeedsList&) {
                      return TensorList{ops::embedding_backward(g[0], ids, vocab_size, deterministic, sink.buffer())};
                    });
}

Variable gather_rows(const Variable& x, const ops::RowGather& gather) {
  OpRegion region("gather_rows");
  return record_one("gather_rows", ops::gather_rows(x.data(), gather.index), {x},
                    [gather](const TensorList& g, const NeedsList&) {
                      return TensorList{ops::gather_rows(g[0], gather.first_source, gather.second_source)};
                    });
}

}  // namespace zt::autograd
