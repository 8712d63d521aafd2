// AdamW and L2-norm kernels against the CPU reference from the same inputs: several AdamW
// steps (bit for bit), the non-finite skip decided on the device, the rounded working copy,
// multi-tensor AdamW over many uneven and misaligned tensors in several launches, and norms
// over many tensors of mixed dtypes, deterministic. New GPU tensors start as NaN, so
// unwritten outputs fail.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ops/optim/adamw.h"
#include "ops/optim/l2norm.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using testing::expect_gpu_matches;

class OptimGpu : public testing::PoisonedGpuTest {};

// Master weights, moments and working copy on both devices, starting equal.
struct Copies {
  Tensor master, exp_avg, exp_avg_sq, working;
};
Copies make_state(const Shape& shape, std::uint64_t seed, DType working_dtype, Device device) {
  Tensor master = Tensor::normal(shape, seed, 0, 0.0, 1.0, DType::kF32).to(device);
  Tensor working = Tensor::empty(shape, working_dtype, device);
  working.copy_from(master);
  return {master, Tensor::zeros(shape, DType::kF32, device), Tensor::zeros(shape, DType::kF32, device), working};
}

TEST_F(OptimGpu, AdamWMatchesCpuOverSeveralSteps) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 1;
  for (const Shape& shape : {Shape{1}, Shape{1000}, Shape{37, 2703}})
    for (DType grad_dtype : {DType::kF32, DType::kBF16, DType::kF16})
      for (DType working_dtype : {DType::kBF16, DType::kF16}) {
        std::string what =
            shape_str(shape) + " grad " + dtype_name(grad_dtype) + " working " + dtype_name(working_dtype);
        Copies gpu = make_state(shape, seed, working_dtype, Device::cuda());
        Copies cpu = make_state(shape, seed, working_dtype, Device::cpu());
        ops::AdamWConfig config{2e-3, 0.9, 0.95, 1e-8, 0.1, 1, 8.0};
        for (std::int64_t step = 1; step <= 5; ++step) {
          config.step = step;
          Tensor grad = Tensor::normal(shape, seed + 100 * step, 0, 0.0, 8.0, grad_dtype);
          Tensor found_gpu =
              ops::adamw_step(gpu.master, gpu.exp_avg, gpu.exp_avg_sq, grad.to(Device::cuda()), config, gpu.working);
          Tensor found_cpu = ops::adamw_step(cpu.master, cpu.exp_avg, cpu.exp_avg_sq, grad, config, cpu.working);
          EXPECT_EQ(found_gpu.dtype(), DType::kBool);
          EXPECT_FALSE(found_gpu.item()) << what;
          EXPECT_FALSE(found_cpu.item()) << what;
        }
        ++seed;
        expect_gpu_matches(gpu.master, cpu.master, 1e-6, what + " master");
        expect_gpu_matches(gpu.exp_avg, cpu.exp_avg, 1e-6, what + " exp_avg");
        expect_gpu_matches(gpu.exp_avg_sq, cpu.exp_avg_sq, 1e-6, what + " exp_avg_sq");
        expect_gpu_matches(gpu.working, cpu.working, 1e-2, what + " working");
        EXPECT_EQ(gpu.working.to_vector(), gpu.master.to(working_dtype).to_vector()) << what << " working rounding";
      }
}

TEST_F(OptimGpu, AdamWSkipsTheStepOnANonFiniteGradient) {
  ZT_SKIP_WITHOUT_GPU();
  for (double bad : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    Shape shape{100003};
    Copies gpu = make_state(shape, 7, DType::kF16, Device::cuda());
    gpu.exp_avg.copy_from(Tensor::normal(shape, 8, 0, 0.0, 1.0, DType::kF32));
    std::vector<double> master = gpu.master.to_vector(), exp_avg = gpu.exp_avg.to_vector();
    std::vector<double> working = gpu.working.to_vector();
    std::vector<double> grad = Tensor::normal(shape, 9, 0, 0.0, 1.0, DType::kF32).to_vector();
    grad[99999] = bad;
    Tensor grad_gpu = Tensor::from_values(grad, shape, DType::kF16).to(Device::cuda());
    Tensor found = ops::adamw_step(gpu.master, gpu.exp_avg, gpu.exp_avg_sq, grad_gpu, {}, gpu.working);
    EXPECT_TRUE(found.device().is_cuda());
    EXPECT_TRUE(found.item()) << bad;
    EXPECT_EQ(gpu.master.to_vector(), master) << bad;
    EXPECT_EQ(gpu.exp_avg.to_vector(), exp_avg) << bad;
    EXPECT_EQ(gpu.exp_avg_sq.to_vector(), std::vector<double>(100003, 0.0)) << bad;
    EXPECT_EQ(gpu.working.to_vector(), working) << bad;
  }
}

// As on the CPU: with the gradients known finite the kernels do not look, so a NaN goes through.
TEST_F(OptimGpu, AdamWWithGradientsKnownFiniteSkipsTheCheck) {
  ZT_SKIP_WITHOUT_GPU();
  Shape shape{100003};
  Copies gpu = make_state(shape, 7, DType::kBF16, Device::cuda());
  std::vector<double> grad = Tensor::normal(shape, 9, 0, 0.0, 1.0, DType::kF32).to_vector();
  grad[99999] = std::numeric_limits<double>::quiet_NaN();
  ops::AdamWConfig config;
  config.gradients_known_finite = true;
  Tensor found = ops::adamw_step(gpu.master, gpu.exp_avg, gpu.exp_avg_sq,
                                 Tensor::from_values(grad, shape, DType::kF32).to(Device::cuda()), config, gpu.working);
  EXPECT_FALSE(found.item());
  const std::vector<double> master = gpu.master.to_vector();
  EXPECT_TRUE(std::isnan(master[99999]));
  EXPECT_FALSE(std::isnan(master[99998]));
}

TEST_F(OptimGpu, L2NormMatchesCpuOverManyTensors) {
  ZT_SKIP_WITHOUT_GPU();
  // 5M elements: more than 1024 partials' worth of one tensor, so blocks grid-stride.
  std::vector<Tensor> cpu{
      Tensor::normal({5000011}, 1, 0, 0.0, 1.0, DType::kF32), Tensor::normal({129, 77}, 2, 0, 0.0, 3.0, DType::kBF16),
      Tensor::normal({1}, 3, 0, 0.0, 1.0, DType::kF16),
      Tensor::normal({40, 30}, 4, 0, 0.0, 1.0, DType::kF32).transpose(0, 1), Tensor::zeros({0}, DType::kF32)};
  std::vector<Tensor> gpu;
  for (const Tensor& t : cpu) gpu.push_back(t.to(Device::cuda()));
  Tensor norm_gpu = ops::l2_norm(gpu);
  EXPECT_EQ(norm_gpu.shape(), Shape{});
  EXPECT_EQ(norm_gpu.dtype(), DType::kF32);
  expect_gpu_matches(norm_gpu, ops::l2_norm(cpu), 1e-6, "l2_norm");
  double first = norm_gpu.item();
  for (int run = 0; run < 3; ++run) EXPECT_EQ(ops::l2_norm(gpu).item(), first) << "l2_norm is deterministic";
  expect_gpu_matches(ops::l2_norm({gpu[2]}), ops::l2_norm({cpu[2]}), 1e-6, "l2_norm of one element");
}

TEST_F(OptimGpu, L2NormOfANonFiniteTensorIsNonFinite) {
  ZT_SKIP_WITHOUT_GPU();
  std::vector<double> values(5000, 1.0);
  values[4321] = std::numeric_limits<double>::infinity();
  Tensor t = Tensor::from_values(values, {5000}, DType::kBF16).to(Device::cuda());
  EXPECT_TRUE(std::isinf(ops::l2_norm({t}).item()));
  values[4321] = std::numeric_limits<double>::quiet_NaN();
  t = Tensor::from_values(values, {5000}, DType::kF32).to(Device::cuda());
  EXPECT_TRUE(std::isnan(ops::l2_norm({Tensor::ones({3}, DType::kF32, Device::cuda()), t}).item()));
}

// ---- many tensors at once ----

// A parameter on both devices, starting equal. offset > 0 puts every buffer `offset`
// elements into a larger allocation (ZeRO's flat buffers); skew > 0 misaligns the gradient
// against the other buffers.
struct MultiParam {
  Copies gpu, cpu;
  Tensor grad_cpu, grad_gpu;
};

Tensor placed(const Tensor& values, std::int64_t offset) {
  if (offset == 0) return values.to(Device::cuda()).clone();
  Tensor flat = Tensor::empty({values.numel() + offset}, values.dtype(), Device::cuda());
  Tensor view = flat.narrow(0, offset, values.numel()).view(values.shape());
  view.copy_from(values);
  return view;
}

Copies placed_state(const Copies& cpu, std::int64_t offset) {
  return {placed(cpu.master, offset), placed(cpu.exp_avg, offset), placed(cpu.exp_avg_sq, offset),
          cpu.working.defined() ? placed(cpu.working, offset) : Tensor()};
}

struct MultiSpec {
  Shape shape;
  DType grad_dtype, working_dtype;  // working kF64: none
  std::int64_t offset, skew;
  double weight_decay;
};

std::vector<MultiSpec> uneven_specs() {
  std::vector<MultiSpec> specs;
  const Shape shapes[] = {{0}, {1}, {3}, {4}, {5, 7}, {65536}, {65537}, {300001}, {0, 9}, {129, 31}};
  const DType grads[] = {DType::kF32, DType::kBF16, DType::kF16};
  const DType workings[] = {DType::kBF16, DType::kF16, DType::kF32, DType::kF64};
  for (int i = 0; i < 60; ++i)  // more than one launch's worth of tensors per group
    specs.push_back({shapes[i % 10], grads[i % 3], workings[(i / 3) % 4], i % 7 == 3 ? 1 : (i % 11 == 5 ? 3 : 0),
                     i % 13 == 4 ? 2 : 0, i % 5 == 0 ? 0.0 : 0.1});
  return specs;
}

MultiParam make_multi(const MultiSpec& spec, std::uint64_t seed) {
  Copies cpu = make_state(spec.shape, seed, spec.working_dtype == DType::kF64 ? DType::kBF16 : spec.working_dtype,
                          Device::cpu());
  if (spec.working_dtype == DType::kF64) cpu.working = Tensor();
  cpu.exp_avg.copy_from(Tensor::normal(spec.shape, seed, 5, 0.0, 0.1, DType::kF32));
  return {placed_state(cpu, spec.offset), cpu, Tensor(), Tensor()};
}

std::vector<ops::AdamWParam> params_of(std::vector<MultiParam>& ps, const std::vector<MultiSpec>& specs, bool gpu) {
  std::vector<ops::AdamWParam> params;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    Copies& c = gpu ? ps[i].gpu : ps[i].cpu;
    params.push_back(
        {c.master, c.exp_avg, c.exp_avg_sq, gpu ? ps[i].grad_gpu : ps[i].grad_cpu, c.working, specs[i].weight_decay});
  }
  return params;
}

TEST_F(OptimGpu, AdamWMultiIsBitExactAgainstCpuOverManyUnevenTensors) {
  ZT_SKIP_WITHOUT_GPU();
  std::vector<MultiSpec> specs = uneven_specs();
  std::vector<MultiParam> ps;
  for (std::size_t i = 0; i < specs.size(); ++i) ps.push_back(make_multi(specs[i], 700 + i));
  ops::AdamWConfig config{2e-3, 0.9, 0.95, 1e-8, 0.05, 1, 1024.0};
  for (std::int64_t step = 1; step <= 3; ++step) {
    config.step = step;
    for (std::size_t i = 0; i < ps.size(); ++i) {
      ps[i].grad_cpu = Tensor::normal(specs[i].shape, 900 + 10 * step + i, 0, 0.0, 500.0, specs[i].grad_dtype);
      ps[i].grad_gpu = placed(ps[i].grad_cpu, specs[i].offset + specs[i].skew);
    }
    Tensor found_gpu = ops::adamw_step_multi(params_of(ps, specs, true), config);
    Tensor found_cpu = ops::adamw_step_multi(params_of(ps, specs, false), config);
    EXPECT_TRUE(found_gpu.device().is_cuda());
    EXPECT_FALSE(found_gpu.item()) << "step " << step;
    EXPECT_FALSE(found_cpu.item()) << "step " << step;
  }
  for (std::size_t i = 0; i < ps.size(); ++i) {
    std::string what = "tensor " + std::to_string(i) + " " + shape_str(specs[i].shape) + " grad " +
                       dtype_name(specs[i].grad_dtype) + " offset " + std::to_string(specs[i].offset) + " skew " +
                       std::to_string(specs[i].skew);
    EXPECT_EQ(ps[i].gpu.master.to_vector(), ps[i].cpu.master.to_vector()) << what << " master";
    EXPECT_EQ(ps[i].gpu.exp_avg.to_vector(), ps[i].cpu.exp_avg.to_vector()) << what << " exp_avg";
    EXPECT_EQ(ps[i].gpu.exp_avg_sq.to_vector(), ps[i].cpu.exp_avg_sq.to_vector()) << what << " exp_avg_sq";
    if (ps[i].cpu.working.defined()) {
      EXPECT_EQ(ps[i].gpu.working.to_vector(), ps[i].cpu.working.to_vector()) << what << " working";
    }
  }
}

TEST_F(OptimGpu, AdamWMultiSkipsEveryTensorWhenOneGradientIsNonFinite) {
  ZT_SKIP_WITHOUT_GPU();
  std::vector<MultiSpec> specs = uneven_specs();
  std::vector<MultiParam> ps;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    ps.push_back(make_multi(specs[i], 1700 + i));
    ps[i].grad_cpu = Tensor::normal(specs[i].shape, 1900 + i, 0, 0.0, 1.0, specs[i].grad_dtype);
  }
  std::vector<double> bad = ps[57].grad_cpu.to_vector();  // 300001 elements: the last chunk's tail
  bad[300000] = std::numeric_limits<double>::infinity();
  ps[57].grad_cpu = Tensor::from_values(bad, specs[57].shape, specs[57].grad_dtype);
  std::vector<std::vector<double>> before;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    ps[i].grad_gpu = placed(ps[i].grad_cpu, specs[i].offset + specs[i].skew);
    before.push_back(ps[i].gpu.master.to_vector());
  }
  Tensor found = ops::adamw_step_multi(params_of(ps, specs, true), {});
  EXPECT_TRUE(found.device().is_cuda());
  EXPECT_TRUE(found.item());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(ps[i].gpu.master.to_vector(), before[i]) << "tensor " << i;
    EXPECT_EQ(ps[i].gpu.exp_avg_sq.to_vector(), ps[i].cpu.exp_avg_sq.to_vector()) << "tensor " << i;
  }
}

TEST_F(OptimGpu, L2NormOverManyTensorsMatchesCpuAndRepeats) {
  ZT_SKIP_WITHOUT_GPU();
  std::vector<Tensor> cpu, gpu;
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
  const std::int64_t sizes[] = {0, 1, 7, 8, 9, 65535, 65536, 65537, 1000003, 17};
  for (int i = 0; i < 70; ++i) {
    cpu.push_back(Tensor::normal({sizes[i % 10]}, 50 + i, 0, 0.0, 1.0 + i % 4, dtypes[i % 3]));
    gpu.push_back(placed(cpu.back(), i % 6 == 1 ? 3 : 0));
  }
  Tensor norm = ops::l2_norm(gpu);
  expect_gpu_matches(norm, ops::l2_norm(cpu), 1e-6, "l2_norm over 70 tensors");
  for (int run = 0; run < 3; ++run) EXPECT_EQ(ops::l2_norm(gpu).item(), norm.item()) << "run " << run;
}

}  // namespace
}  // namespace zt
