// `zerotune launch`: torchrun's job for zerotune. Starts one process per GPU of this node
// with the environment torchrun gives (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT) plus this job's rendezvous token (ZT_JOB_TOKEN), prefixes
// every output line with its rank, forwards SIGINT/SIGTERM, and when one rank fails stops
// the others and exits with that rank's status, saying which rank it was.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace zt::distributed {

// What the job is: torchrun's flags (their defaults are `zerotune launch`'s) and the command.
struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::vector<std::string> command;                           // the program and its arguments
  std::chrono::milliseconds grace{std::chrono::seconds(10)};  // SIGTERM to SIGKILL
};

// Runs the job; returns the exit status to exit with (0 when every rank succeeded). "zerotune"
// as the command's program means this very binary. The options come checked from
// `zerotune launch`'s command line (cli/launch_command.h).
int launch(const LaunchOptions& options);

}  // namespace zt::distributed
