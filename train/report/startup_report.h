// What a distributed run states when it starts, so a wrong launch is seen before the first
// step: the world (size, nodes, ranks per node and each rank's GPU, gathered from every rank
// rather than trusted from the launcher's variables), and the bytes of parameters, gradients
// and optimizer state every rank holds (train/memory_estimate.h).
#pragma once

#include <string>

#include "distributed/communicator.h"
#include "train/memory_estimate.h"

namespace zt::train {

// Collective. Rank 0 logs the world; every rank throws when two ranks share one GPU.
// `launcher` names who started the ranks ("torchrun", ...).
void report_world(distributed::Communicator& comm, int cuda_device, const std::string& launcher);

// Collective when `comm` is given: rank 0 logs one line per rank. `device` is where the
// communicator's tensors live.
void report_model_states(distributed::Communicator* comm, const HeldModelStates& held, Device device);

}  // namespace zt::train
