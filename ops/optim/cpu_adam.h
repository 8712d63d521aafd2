// AdamW on the CPU over float32 host arrays, for optimizer offload: ops::adamw_step_multi's
// update, bit for bit (bias corrections, decoupled weight decay per parameter, the
// grad_scale divisor, inf/NaN detection that skips the step, the working-dtype copy), run
// with the widest instruction set the CPU has (AVX-512F, AVX2 + F16C, else plain C++; chosen
// at run time) and split evenly across a pool of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ops/optim/adamw.h"
#include "ops/worker_pool.h"

namespace zt::ops {

enum class CpuAdamIsa { kScalar, kAvx2, kAvx512 };

const char* cpu_adam_isa_name(CpuAdamIsa isa);  // "scalar", "avx2", "avx512"
bool cpu_supports(CpuAdamIsa isa);
CpuAdamIsa best_cpu_adam_isa();

// One parameter, or a contiguous part of one: numel elements at each pointer.
struct CpuAdamSpan {
  float* master = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  const float* grad = nullptr;
  void* working = nullptr;  // bfloat16/float16/float32 copy of master; may be null
  DType working_dtype = DType::kF32;
  std::int64_t numel = 0;
  std::optional<double> weight_decay;  // instead of config.hyperparameters.weight_decay
};

// ZT_CPU_ADAM_THREADS, when set; else the cores given to this rank: those the process may run
// on (its affinity mask), shared evenly by the ranks of the node (current_rank()'s
// local_world_size: the launcher's, or the in-process ranks) unless the launcher bound the
// process to a subset of the machine's cores (then they are this rank's alone), or
// `core_share` of them (DeepSpeed's cpuadam_cores_perc), at least one.
int default_cpu_adam_threads(std::optional<double> core_share = std::nullopt);
// That share: `cores` the process may run on out of `machine_cores`, `local_ranks` on the node.
int cores_per_rank(int cores, int machine_cores, int local_ranks);

class CpuAdam {
 public:
  // threads 0: default_cpu_adam_threads(). isa: the best the CPU has unless given; one the
  // CPU lacks is an error.
  explicit CpuAdam(int threads = 0, std::optional<CpuAdamIsa> isa = std::nullopt);

  // adamw_step_multi on host spans: returns true, and modifies nothing, when any gradient
  // holds an inf or NaN.
  bool step(const std::vector<CpuAdamSpan>& spans, const AdamWConfig& config);

  int threads() const { return pool_->size(); }
  CpuAdamIsa isa() const { return isa_; }

 private:
  std::unique_ptr<WorkerPool> pool_;
  CpuAdamIsa isa_;
};

}  // namespace zt::ops
