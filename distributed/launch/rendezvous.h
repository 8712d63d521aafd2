// The TCP rendezvous that starts a job: rank 0 listens at MASTER_ADDR:MASTER_PORT and hands
// the job's secret payload (NCCL's ncclUniqueId) to every other rank that proves it belongs
// to the job. It is a network service and is treated as one: it binds only the given
// address, accepts a peer only with this job's token, bounds every message and every wait,
// serves many connections at once so a silent or hostile one cannot stall it, and drops
// anything malformed without crashing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace zt::distributed {

struct RendezvousConfig {
  std::string address = "127.0.0.1";  // MASTER_ADDR
  int port = 29500;                   // MASTER_PORT
  std::string token;                  // this job's secret, the same on every rank
  int world_size = 1;
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};      // the whole rendezvous
  std::chrono::milliseconds peer_timeout{std::chrono::seconds(5)};  // one connection's request
};

inline constexpr std::size_t kMaxTokenBytes = 256;
inline constexpr std::size_t kMaxPayloadBytes = 4096;

// Rank 0: serves `payload` until every rank 1 .. world_size - 1 has received it. Throws
// zt::Error naming the ranks that never came when the timeout passes.
void serve_rendezvous(const RendezvousConfig& config, const std::vector<std::uint8_t>& payload);

// Rank r > 0: connects (retrying while rank 0 is not listening yet) and returns the payload.
std::vector<std::uint8_t> join_rendezvous(const RendezvousConfig& config, int rank);

// The job token from the environment: ZT_JOB_TOKEN (zerotune launch sets it), else an id
// the launcher gives every rank alike (TORCHELASTIC_RUN_ID, SLURM_JOB_ID, OMPI_MCA_ess_base_jobid).
std::string job_token_from_environment();

}  // namespace zt::distributed
