// The backward engine: runs recorded nodes in dependency order from the given outputs,
// accumulates gradients into leaves (+=), and fires each leaf's hooks once its gradient
// for this backward is complete.
#pragma once

#include <memory>
#include <unordered_set>
#include <vector>

#include "autograd/variable.h"

namespace zt::autograd {

void run_backward(const std::vector<Variable>& roots, const std::vector<Tensor>& root_grads);

// While alive on this thread, backward may only reach the leaves given; reaching another
// is an error naming it. Checkpoint recompute uses this to catch functions that read a
// Variable they were not passed.
class LeafScope {
 public:
  explicit LeafScope(const std::vector<Variable>& allowed);
  ~LeafScope();
  LeafScope(const LeafScope&) = delete;
  LeafScope& operator=(const LeafScope&) = delete;

 private:
  const std::unordered_set<const VariableImpl*>* previous_;
  std::unordered_set<const VariableImpl*> allowed_;
};

}  // namespace zt::autograd
