#include "runtime/rank.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace zt {
namespace {

std::optional<int> env_int(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  char* end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  if (*end != '\0') return std::nullopt;
  return static_cast<int>(parsed);
}

struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* world_size;
  const char* local_rank;
  const char* local_world_size;
};

constexpr LauncherVariables kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

thread_local std::optional<ProcessRank> thread_rank;

}  // namespace

ProcessRank rank_from_environment() {
  for (const auto& vars : kLaunchers) {
    auto rank = env_int(vars.rank);
    auto world = env_int(vars.world_size);
    if (!rank || !world) continue;
    ProcessRank result;
    result.rank = *rank;
    result.world_size = *world;
    result.local_rank = env_int(vars.local_rank).value_or(0);
    result.local_world_size = std::max(1, env_int(vars.local_world_size).value_or(1));
    result.distributed = true;
    result.launcher = vars.launcher;
    return result;
  }
  ProcessRank single;
  single.launcher = "none";
  return single;
}

ProcessRank current_rank() {
  if (thread_rank) return *thread_rank;
  static const ProcessRank process_rank = rank_from_environment();
  return process_rank;
}

void set_thread_rank(const ProcessRank& rank) { thread_rank = rank; }

std::string rank_suffix() {
  const ProcessRank r = current_rank();
  if (!r.distributed && r.world_size <= 1) return "";
  return " on rank " + std::to_string(r.rank);
}

}  // namespace zt
