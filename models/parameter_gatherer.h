// The hook ZeRO stage 3 uses to partition a model's parameters over ranks while models/
// stays free of distributed code. Between uses a partitioned parameter's Variable holds an
// empty tensor; the whole value exists only while the module that reads it is computing.
// The model brackets every use of a module's parameters with gather() and release():
//
//   embedding      around the token lookup (its backward needs no weight values)
//   layer i        around its forward, and again around its recompute in backward
//                  (gathered_checkpoint below), unless the gatherer is a weight_source()
//   final norm     around the RMSNorm (its tape keeps the gathered weight until backward)
//   LM head        around the head's matmul; the trainer brackets the fused head + loss
//   prefix encoder around the P-Tuning prefix computation (the tape keeps what it saved)
//
// A gatherer that can multiply by a layer's weights as it holds them may let the layer skip
// its gather (multiplies_held below): models/quant/'s 4-bit base on a decode step, a short
// prefill or an evaluation batch.
//
// train/zero/zero3_partitioner.h implements the gatherer with all-gathers of each module's flat
// shards, and may start gathering the modules it expects next while one computes (its
// prefetch); gather() of such a module then only waits for it. Without a gatherer set on the
// model, none of this runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/checkpoint.h"
#include "autograd/saved_weight.h"
#include "autograd/variable.h"

namespace zt::models {

using autograd::Variable;

enum class ModuleKind { kEmbedding, kLayer, kFinalNorm, kLmHead, kPrefixEncoder };

// One unit of gathering: a kind, and for kLayer the layer index.
struct ModuleRef {
  ModuleKind kind = ModuleKind::kEmbedding;
  std::int64_t layer = 0;
  bool operator==(const ModuleRef& other) const {
    return kind == other.kind && (kind != ModuleKind::kLayer || layer == other.layer);
  }
};

std::string module_name(const ModuleRef& module);  // "embedding", "layer 3", "LM head", ...

class ParameterGatherer {
 public:
  virtual ~ParameterGatherer() = default;
  // Afterwards every parameter of `module` holds its whole value. Collective across ranks.
  virtual void gather(const ModuleRef& module) = 0;
  // The module's partitioned parameters may hold nothing again (memory the autograd tape
  // still references is freed when the tape lets go of it).
  virtual void release(const ModuleRef& module) = 0;

  // Whether a forward of `module` on `rows` tokens that records no gradient may skip gather()
  // and release(), because the gatherer multiplies by the weights as it holds them (the 4-bit
  // base's GEMV or GEMM on up to a few hundred tokens: models/quant/). Then each linear of the
  // module asks held_linear() first. None by default: ZeRO-3 must gather.
  virtual bool multiplies_held(const ModuleRef& /*module*/, std::int64_t /*rows*/) const { return false; }
  // x [rows, in] · weightᵀ (+ bias) read from `weight` as held, in x's dtype; nullopt for a
  // weight the gatherer does not hold (one kept dense), which the caller multiplies as it is.
  virtual std::optional<Tensor> held_linear(const Variable& /*weight*/, const Tensor& /*x*/,
                                            const Tensor& /*bias*/) const {
    return std::nullopt;
  }
  // The source of a layer's weights one at a time (autograd/saved_weight.h), when backward can
  // produce each again without gathering the layer (the 4-bit base dequantizes it): a layer
  // that records gradients without --gradient_checkpointing then runs once, gathered, keeping
  // its activations and only references to these weights. Null by default: ZeRO-3 recomputes.
  virtual const autograd::WeightSource* weight_source() const { return nullptr; }
};

// gather() now, release() at the end of the scope; nothing when `gatherer` is null.
class GatheredModule {
 public:
  GatheredModule(ParameterGatherer* gatherer, const ModuleRef& module);
  ~GatheredModule();
  GatheredModule(const GatheredModule&) = delete;
  GatheredModule& operator=(const GatheredModule&) = delete;

 private:
  ParameterGatherer* gatherer_;
  ModuleRef module_;
};

// Activation checkpointing (autograd/checkpoint.h) for a module whose parameters are
// partitioned. A plain checkpoint saves its inputs' values, and a linear's tape saves its
// weight, so neither can free a gathered weight after the forward. Here:
//   forward:  gather(module) -> fn(inputs) without recording -> release(module)
//   backward: gather(module) -> fn again, recording, on the saved activations and the
//             freshly gathered parameters -> backward through it -> release(module)
// and the parameters' gradients go on to their leaves, whose hooks reduce-scatter them.
// Inputs that are leaves (parameters) are read again when the recompute runs; the others
// (activations) are saved by value, as checkpoint does. The random stream is restored for
// the recompute, so dropout masks repeat. One recompute per module: the cost of
// --gradient_checkpointing.
std::vector<Variable> gathered_checkpoint(ParameterGatherer& gatherer, const ModuleRef& module,
                                          const autograd::CheckpointFn& fn, const std::vector<Variable>& inputs);

}  // namespace zt::models
