#include "autograd/saved_weight.h"

namespace zt::autograd {
namespace {

thread_local const WeightSource* current_source = nullptr;

}  // namespace

RereadWeights::RereadWeights(const WeightSource* source) : previous_(current_source) { current_source = source; }

RereadWeights::~RereadWeights() { current_source = previous_; }

SavedWeight SavedWeight::of(const Variable& weight) {
  SavedWeight saved;
  if (current_source != nullptr && !weight.requires_grad() && current_source->produces(weight)) {
    saved.weight_ = weight;
    saved.source_ = current_source;
  } else {
    saved.kept_ = weight.data();
  }
  return saved;
}

Tensor SavedWeight::value() const { return source_ != nullptr ? source_->produce(weight_) : kept_; }

}  // namespace zt::autograd
