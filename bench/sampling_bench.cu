// Choosing the next token at Qwen's vocabulary, [rows, 151936] float32 logits, rows 1, 8 and
// 32: ops::sample_rows on the device (rules up, one kernel, ids down) against the host path it
// replaces (the logits copied to the host as float64, then the reference on each row). Two
// rule sets: Qwen2.5's generation_config (temperature 0.7, top_k 20, top_p 0.8, repetition
// penalty 1.05 over 2000 seen ids), and nucleus only (top_p 0.9 over the whole vocabulary,
// the device's slowest case: its top-p select sees every token).
#include <vector>

#include "bench/gpu_bench.h"
#include "ops/sampling/sampling.h"

namespace zt::bench {
namespace {

constexpr std::int64_t kVocab = 151936;

struct Problem {
  Tensor logits;
  std::vector<std::int64_t> seen;
  std::vector<ops::RowSampling> rules;
};

Problem make_problem(std::int64_t rows, bool nucleus_only) {
  Problem p;
  p.logits = Tensor::normal({rows, kVocab}, 1, 0, 0.0, 3.0, DType::kF32, Device::cuda());
  for (std::int64_t i = 0; i < 2000; ++i) p.seen.push_back(i * 7919 % kVocab);
  for (std::int64_t r = 0; r < rows; ++r) {
    ops::RowSampling rule;
    rule.do_sample = true;
    rule.temperature = 0.7;
    rule.top_k = nucleus_only ? 0 : 20;
    rule.top_p = nucleus_only ? 0.9 : 0.8;
    rule.repetition_penalty = nucleus_only ? 1.0 : 1.05;
    rule.uniform = (static_cast<double>(r) + 0.5) / static_cast<double>(rows);
    p.rules.push_back(rule);
  }
  for (ops::RowSampling& rule : p.rules) rule.seen = p.seen;
  return p;
}

void BM_SampleOnDevice(benchmark::State& state) {
  const Problem p = make_problem(state.range(0), state.range(1) != 0);
  time_on_gpu(state, [&] { benchmark::DoNotOptimize(ops::sample_rows(p.logits, p.rules)); });
}

void BM_SampleOnHost(benchmark::State& state) {
  const Problem p = make_problem(state.range(0), state.range(1) != 0);
  for (auto _ : state) {
    const Tensor host = p.logits.to(Device::cpu(), DType::kF64);
    const double* data = host.data<double>();
    for (std::size_t r = 0; r < p.rules.size(); ++r) {
      const double* row = data + static_cast<std::int64_t>(r) * kVocab;
      benchmark::DoNotOptimize(ops::sample_row(std::vector<double>(row, row + kVocab), p.rules[r]));
    }
  }
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "nucleus"});
  for (std::int64_t nucleus : {0, 1})
    for (std::int64_t rows : {1, 8, 32}) b->Args({rows, nucleus});
}

BENCHMARK(BM_SampleOnDevice)->Apply(Shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleOnHost)->Apply(Shapes)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zt::bench
