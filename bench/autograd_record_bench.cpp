// CPU cost of recording one op on the tape (and of running its backward node), with
// trivial math, so the figure is the bookkeeping alone.
#include <benchmark/benchmark.h>

#include "autograd/node.h"

namespace zt::autograd {
namespace {

void BM_RecordOp(benchmark::State& state) {
  Variable x(Tensor::zeros({1}, DType::kF32), true, "x");
  Tensor value = Tensor::zeros({1}, DType::kF32);
  for (auto _ : state) {
    Variable y = record_one("op", value, {x, x}, [](const std::vector<Tensor>& g, const std::vector<bool>&) {
      return std::vector<Tensor>{g[0], Tensor()};
    });
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_RecordChainOf64(benchmark::State& state) {
  Variable x(Tensor::zeros({1}, DType::kF32), true, "x");
  Tensor value = Tensor::zeros({1}, DType::kF32);
  for (auto _ : state) {
    Variable y = x;
    for (int i = 0; i < 64; ++i)
      y = record_one("op", value, {y}, [](const std::vector<Tensor>& g, const std::vector<bool>&) {
        return std::vector<Tensor>{g[0]};
      });
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}

BENCHMARK(BM_RecordOp);
BENCHMARK(BM_RecordChainOf64);

}  // namespace
}  // namespace zt::autograd
