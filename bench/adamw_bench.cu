// The optimizer step over Qwen2.5-0.5B's parameter list (494M parameters in 290 tensors of
// their real sizes: embedding, per-layer projections with biases, norms): multi-tensor AdamW
// (fp32 master and moments, bf16 gradient in, bf16 working copy out: 28 bytes a parameter)
// against one adamw_step call per tensor, and the multi-tensor L2 norm of the gradients
// (2 bytes a parameter).
#include <vector>

#include "bench/gpu_bench.h"
#include "ops/optim/adamw.h"
#include "ops/optim/l2norm.h"

namespace zt::bench {
namespace {

struct Param {
  Tensor master, exp_avg, exp_avg_sq, grad, working;
  bool decays;
};

std::vector<Shape> qwen_0_5b_shapes() {
  const std::int64_t hidden = 896, ffn = 4864, kv = 128, vocab = 151936;
  std::vector<Shape> shapes{{vocab, hidden}};
  for (int layer = 0; layer < 24; ++layer) {
    for (Shape s : {Shape{hidden, hidden}, Shape{hidden}, Shape{kv, hidden}, Shape{kv}, Shape{kv, hidden}, Shape{kv},
                    Shape{hidden, hidden}, Shape{ffn, hidden}, Shape{ffn, hidden}, Shape{hidden, ffn}, Shape{hidden},
                    Shape{hidden}})
      shapes.push_back(s);
  }
  shapes.push_back({hidden});
  return shapes;
}

struct Model {
  std::vector<Param> params;
  double count = 0;
  Model() {
    std::uint64_t seed = 1;
    for (const Shape& s : qwen_0_5b_shapes()) {
      Param p{Tensor::normal(s, seed, 0, 0.0, 0.02, DType::kF32, Device::cuda()),
              Tensor::zeros(s, DType::kF32, Device::cuda()),
              Tensor::zeros(s, DType::kF32, Device::cuda()),
              Tensor::normal(s, seed, 1, 0.0, 1e-3, DType::kBF16, Device::cuda()),
              Tensor::empty(s, DType::kBF16, Device::cuda()),
              s.size() == 2};
      count += static_cast<double>(p.master.numel());
      params.push_back(p);
      ++seed;
    }
  }
};

void BM_AdamWMulti(benchmark::State& state) {
  Model model;
  std::vector<ops::AdamWParam> params;
  for (const Param& p : model.params)
    params.push_back({p.master, p.exp_avg, p.exp_avg_sq, p.grad, p.working,
                      p.decays ? std::optional<double>() : std::optional<double>(0.0)});
  ops::AdamWConfig config{1e-5, 0.9, 0.999, 1e-8, 0.1, 1, 1.0};
  time_on_gpu(state, [&] { ops::adamw_step_multi(params, config); });
  report_bandwidth(state, 28.0 * model.count);
  state.counters["tensors"] = static_cast<double>(params.size());
}

void BM_AdamWPerTensor(benchmark::State& state) {
  Model model;
  ops::AdamWConfig config{1e-5, 0.9, 0.999, 1e-8, 0.1, 1, 1.0};
  time_on_gpu(state, [&] {
    for (const Param& p : model.params) ops::adamw_step(p.master, p.exp_avg, p.exp_avg_sq, p.grad, config, p.working);
  });
  report_bandwidth(state, 28.0 * model.count);
}

void BM_L2NormMulti(benchmark::State& state) {
  Model model;
  std::vector<Tensor> grads;
  for (const Param& p : model.params) grads.push_back(p.grad);
  time_on_gpu(state, [&] { ops::l2_norm(grads); });
  report_bandwidth(state, 2.0 * model.count);
}

BENCHMARK(BM_AdamWMulti)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AdamWPerTensor)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_L2NormMulti)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zt::bench
