// What a linear op keeps of the weight it multiplied by, for its input's gradient.
//
// Usually the weight's tensor. A frozen weight that a WeightSource can produce again is kept by
// reference instead, while a RereadWeights scope names that source: the 4-bit base
// (models/quant/) dequantizes a layer's weights for its forward and frees them after, and
// backward dequantizes each weight once more when the input gradient needs it. A layer then
// keeps its activations without keeping its dense weights, at the cost of one more
// dequantization per weight, where recomputing the layer would cost its forward GEMMs again.
#pragma once

#include "autograd/variable.h"

namespace zt::autograd {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // Whether produce() gives `weight`'s value.
  virtual bool produces(const Variable& weight) const = 0;
  // `weight`'s value as the forward read it (a fresh tensor the caller may drop at once).
  virtual Tensor produce(const Variable& weight) const = 0;
};

// While alive, linear ops on this thread keep the frozen weights `source` produces by reference.
// The source must outlive the backward of everything recorded in the scope. A null source keeps
// every weight.
class RereadWeights {
 public:
  explicit RereadWeights(const WeightSource* source);
  ~RereadWeights();
  RereadWeights(const RereadWeights&) = delete;
  RereadWeights& operator=(const RereadWeights&) = delete;

 private:
  const WeightSource* previous_;
};

class SavedWeight {
 public:
  SavedWeight() = default;
  // What to keep of `weight` (the current scope's source decides).
  static SavedWeight of(const Variable& weight);
  // The value: the kept tensor, or produced again; undefined when nothing was kept.
  Tensor value() const;

 private:
  Tensor kept_;
  Variable weight_;  // produced again from source_ when set
  const WeightSource* source_ = nullptr;
};

}  // namespace zt::autograd
