// The process's place in a distributed job, read from whichever launcher started it
// (zerotune launch / torchrun, OpenMPI, Slurm). Error messages and log lines carry it.
#pragma once

#include <string>

namespace zt {

struct ProcessRank {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  bool distributed = false;  // true when some launcher set the variables
  std::string launcher;      // "torchrun", "openmpi", "slurm", "inprocess" or "none"
  int local_world_size = 1;  // ranks on this node (in this process for in-process ranks); 1 when unknown
};

ProcessRank rank_from_environment();

// The rank used in messages and logs: the environment's, unless this thread set its own
// (in-process ranks run as threads, each naming itself).
ProcessRank current_rank();
void set_thread_rank(const ProcessRank& rank);

// " on rank R" when distributed, "" otherwise.
std::string rank_suffix();

}  // namespace zt
