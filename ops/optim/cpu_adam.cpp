#include "ops/optim/cpu_adam.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include <sched.h>

#include "ops/optim/adamw_scalars.h"
#include "ops/optim/cpu_adam_kernels.h"
#include "runtime/enum_names.h"
#include "runtime/error.h"
#include "runtime/rank.h"

namespace zt::ops {
namespace {

// Below this many elements waking the pool costs more than it saves.
constexpr std::int64_t kMinElementsPerThread = 1 << 15;
// Thread shares start on whole cache lines, so no two threads write one line.
constexpr std::int64_t kShareAlignment = 16;

void check_step(const std::vector<CpuAdamSpan>& spans, const AdamWConfig& config) {
  check_adamw_config("cpu adam", config);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const CpuAdamSpan& s = spans[i];
    const std::string where = "cpu adam: spans[" + std::to_string(i) + "]";
    ZT_REQUIRE(s.numel >= 0, where + " has negative numel " + std::to_string(s.numel));
    ZT_REQUIRE(s.numel == 0 || (s.master && s.exp_avg && s.exp_avg_sq && s.grad),
               where + " has a null master, exp_avg, exp_avg_sq or grad pointer");
    ZT_REQUIRE(s.working == nullptr || s.working_dtype == DType::kF32 || s.working_dtype == DType::kBF16 ||
                   s.working_dtype == DType::kF16,
               where + ": the working copy must be float32, bfloat16 or float16, got " + dtype_name(s.working_dtype));
  }
}

struct Kernels {
  cpu_adam::UpdateFn update;
  cpu_adam::ScanFn scan;
};

Kernels kernels_of(CpuAdamIsa isa) {
  switch (isa) {
    case CpuAdamIsa::kAvx512:
      return {cpu_adam::update_avx512, cpu_adam::any_non_finite_avx512};
    case CpuAdamIsa::kAvx2:
      return {cpu_adam::update_avx2, cpu_adam::any_non_finite_avx2};
    default:
      return {cpu_adam::update_scalar, cpu_adam::any_non_finite_scalar};
  }
}

// Elements [begin, end) of the spans laid end to end, as ranges of whole or partial spans.
std::vector<cpu_adam::Range> ranges_between(const std::vector<CpuAdamSpan>& spans, const AdamWConfig& config,
                                            std::int64_t begin, std::int64_t end) {
  std::vector<cpu_adam::Range> ranges;
  std::int64_t offset = 0;
  for (const CpuAdamSpan& s : spans) {
    const std::int64_t from = std::max(begin, offset) - offset, to = std::min(end, offset + s.numel) - offset;
    offset += s.numel;
    if (from >= to) continue;
    cpu_adam::Range r;
    r.master = s.master + from;
    r.exp_avg = s.exp_avg + from;
    r.exp_avg_sq = s.exp_avg_sq + from;
    r.grad = s.grad + from;
    r.working_dtype = s.working_dtype;
    if (s.working)
      r.working = static_cast<char*>(s.working) + from * static_cast<std::int64_t>(dtype_size(s.working_dtype));
    r.n = to - from;
    r.decay_factor = static_cast<float>(1.0 - config.lr * s.weight_decay.value_or(config.hyperparameters.weight_decay));
    ranges.push_back(r);
  }
  return ranges;
}

}  // namespace

const char* cpu_adam_isa_name(CpuAdamIsa isa) {
  constexpr EnumName<CpuAdamIsa> kNames[] = {
      {CpuAdamIsa::kScalar, "scalar"}, {CpuAdamIsa::kAvx2, "avx2"}, {CpuAdamIsa::kAvx512, "avx512"}};
  return name_of(kNames, isa, "scalar");
}

bool cpu_supports(CpuAdamIsa isa) {
  switch (isa) {
    case CpuAdamIsa::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case CpuAdamIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    default:
      return true;
  }
}

CpuAdamIsa best_cpu_adam_isa() {
  for (CpuAdamIsa isa : {CpuAdamIsa::kAvx512, CpuAdamIsa::kAvx2})
    if (cpu_supports(isa)) return isa;
  return CpuAdamIsa::kScalar;
}

int default_cpu_adam_threads(std::optional<double> core_share) {
  if (const char* value = std::getenv("ZT_CPU_ADAM_THREADS")) {
    char* end = nullptr;
    const long threads = std::strtol(value, &end, 10);
    ZT_REQUIRE(end != value && *end == '\0' && threads >= 1 && threads <= 4096,
               std::string("ZT_CPU_ADAM_THREADS='") + value + "' is not a thread count; set a number from 1 up");
    return static_cast<int>(threads);
  }
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int allowed = machine;
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) allowed = std::max(1, CPU_COUNT(&mask));
  const int cores = cores_per_rank(allowed, machine, current_rank().local_world_size);
  return core_share ? std::max(1, static_cast<int>(std::lround(*core_share * cores))) : cores;
}

int cores_per_rank(int cores, int machine_cores, int local_ranks) {
  if (cores < machine_cores) return std::max(1, cores);  // bound to its own cores by the launcher
  return std::max(1, cores / std::max(1, local_ranks));
}

CpuAdam::CpuAdam(int threads, std::optional<CpuAdamIsa> isa) : isa_(isa.value_or(best_cpu_adam_isa())) {
  ZT_REQUIRE(cpu_supports(isa_), std::string("cpu adam: this CPU has no ") + cpu_adam_isa_name(isa_) + "; use " +
                                     cpu_adam_isa_name(best_cpu_adam_isa()));
  pool_ = std::make_unique<WorkerPool>(threads > 0 ? threads : default_cpu_adam_threads());
}

bool CpuAdam::step(const std::vector<CpuAdamSpan>& spans, const AdamWConfig& config) {
  check_step(spans, config);
  std::int64_t total = 0;
  for (const CpuAdamSpan& s : spans) total += s.numel;
  const cuda::AdamWScalars scalars = adamw_scalars(config);
  const Kernels kernels = kernels_of(isa_);
  const auto shares = static_cast<int>(std::clamp<std::int64_t>(total / kMinElementsPerThread, 1, threads()));
  const std::int64_t per_share = (total + shares - 1) / shares;
  const std::int64_t share = (per_share + kShareAlignment - 1) / kShareAlignment * kShareAlignment;
  auto each_share = [&](auto&& body) {
    auto task = [&](int t) {
      if (t < shares) body(ranges_between(spans, config, t * share, std::min(total, (t + 1) * share)));
    };
    if (shares == 1) return task(0);
    pool_->run(task);
  };
  // Every gradient is checked before anything is written: a skipped step leaves all intact.
  std::atomic<bool> found_non_finite{false};
  each_share([&](const std::vector<cpu_adam::Range>& ranges) {
    for (const cpu_adam::Range& r : ranges)
      if (kernels.scan(r.grad, r.n)) found_non_finite = true;
  });
  if (found_non_finite) return true;
  each_share([&](const std::vector<cpu_adam::Range>& ranges) {
    for (const cpu_adam::Range& r : ranges) kernels.update(r, scalars);
  });
  return false;
}

}  // namespace zt::ops
