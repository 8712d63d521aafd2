// Activation checkpointing: run `fn` without recording, keep only its inputs, and run it
// again during backward to get the gradients. The thread's random stream is restored for
// the recompute, so dropout masks repeat and the gradients equal those of a plain run.
#pragma once

#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace zt::autograd {

using CheckpointFn = std::function<std::vector<Variable>(const std::vector<Variable>& inputs)>;

// `inputs` must include every Variable `fn` reads that needs a gradient, parameters too:
// the recompute differentiates with respect to exactly these (another one is an error).
std::vector<Variable> checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs);

}  // namespace zt::autograd
