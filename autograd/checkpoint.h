// Activation checkpointing: run `fn` without recording, keep only its inputs, and run it
// again during backward to get the gradients. The thread's random stream is restored for
// the recompute, so dropout masks repeat and the gradients equal those of a plain run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace zt::autograd {

using CheckpointFn = std::function<std::vector<Variable>(const std::vector<Variable>& inputs)>;

// `inputs` must include every Variable `fn` reads that needs a gradient, parameters too:
// the recompute differentiates with respect to exactly these (another one is an error).
std::vector<Variable> checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs);

// A checkpoint around parameters that exist whole only for a while (ZeRO stage 3,
// models/parameter_gatherer.h): `enter` runs before fn's forward and before its recompute,
// `leave` after each. Leaf inputs (the parameters) are kept by identity and read again at
// recompute, when `enter` has made their values whole once more; other inputs (activations)
// are kept by value, as the plain checkpoint keeps all of them. `name` labels the tape node.
struct CheckpointScope {
  std::string name;
  std::function<void()> enter;
  std::function<void()> leave;
};
std::vector<Variable> checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs,
                                 const CheckpointScope& scope);

}  // namespace zt::autograd
