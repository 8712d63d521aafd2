// CPU cost of recording one op on the tape (and of running its backward node), with
// trivial math, so the figure is the bookkeeping alone.
#include <benchmark/benchmark.h>

#include "autograd/functions.h"
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

// x through a chain of 64 recorded ops that pass the gradient through.
Variable record_chain_of_64(const Variable& x, const Tensor& value) {
  Variable y = x;
  for (int i = 0; i < 64; ++i)
    y = record_one("op", value, {y},
                   [](const std::vector<Tensor>& g, const std::vector<bool>&) { return std::vector<Tensor>{g[0]}; });
  return y;
}

void BM_RecordChainOf64(benchmark::State& state) {
  Variable x(Tensor::zeros({1}, DType::kF32), true, "x");
  Tensor value = Tensor::zeros({1}, DType::kF32);
  for (auto _ : state) {
    Variable y = record_chain_of_64(x, value);
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}

// Recording plus running the backward of 64 nodes: the engine's bookkeeping per node.
void BM_RecordAndBackwardChainOf64(benchmark::State& state) {
  Variable x(Tensor::zeros({1}, DType::kF32), true, "x");
  Tensor value = Tensor::zeros({1}, DType::kF32);
  for (auto _ : state) {
    record_chain_of_64(x, value).backward();
    x.zero_grad();
  }
  state.SetItemsProcessed(state.iterations() * 64);
}

// A real differentiable op on one element: its forward math is negligible, so the time is
// the op's checks plus the record.
void BM_ScaleOpOnOneElement(benchmark::State& state) {
  Variable x(Tensor::zeros({1}, DType::kF32), true, "x");
  for (auto _ : state) {
    Variable y = scale(x, 2.0);
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_RecordOp);
BENCHMARK(BM_RecordChainOf64);
BENCHMARK(BM_RecordAndBackwardChainOf64);
BENCHMARK(BM_ScaleOpOnOneElement);

}  // namespace
}  // namespace zt::autograd
