// RMSNorm and RoPE kernels against the CPU reference from the same inputs: float32 to 1e-5,
// 16-bit to 1e-2, on awkward sizes (hidden 1, odd widths, more rows than dweight chunks),
// forward and backward. New GPU tensors start as NaN, so unwritten outputs fail.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "runtime/error.h"
#include "tests/test_util.h"

namespace zt {
namespace {

using ops::RmsNormStyle;
using ops::RopeConfig;
using ops::RopeStyle;

class NormGpu : public ::testing::Test {
 protected:
  void SetUp() override { set_poison_new_device_tensors(true); }
  void TearDown() override { set_poison_new_device_tensors(false); }
};

double tolerance(DType dtype) { return dtype == DType::kF32 ? 1e-5 : 1e-2; }

struct Pair {
  Tensor cpu, gpu;
};
Pair random_pair(const Shape& shape, std::uint64_t seed, DType dtype, double mean = 0.0) {
  Tensor cpu = Tensor::normal(shape, seed, 0, mean, 1.0, dtype);
  return {cpu, cpu.to(Device::cuda())};
}

void expect_matches(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  std::vector<double> values = gpu.to_vector();
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_FALSE(std::isnan(values[i])) << what << ": NaN at " << i;
  EXPECT_LE(relative_error(gpu, cpu), tol) << what;
}

const DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// ---- RMSNorm ----

void check_rmsnorm(const Shape& shape, DType dtype, RmsNormStyle style, std::uint64_t seed) {
  std::int64_t hidden = shape.back();
  Pair x = random_pair(shape, seed, dtype), w = random_pair({hidden}, seed + 1, dtype, 1.0);
  Pair gy = random_pair(shape, seed + 2, dtype);
  std::string what = std::string(dtype_name(dtype)) + (style == RmsNormStyle::kQwen ? " qwen " : " glm ") +
                     shape_str(shape);
  double tol = tolerance(dtype);
  // With hidden 1 and a tiny eps, y is sign(x) and grad_x is pure cancellation noise; a
  // large eps keeps that case meaningful.
  float eps = hidden == 1 ? 0.5f : 1e-6f;
  ops::RmsNormOutput out_gpu = ops::rmsnorm_forward(x.gpu, w.gpu, eps, style);
  ops::RmsNormOutput out_cpu = ops::rmsnorm_forward(x.cpu, w.cpu, eps, style);
  expect_matches(out_gpu.y, out_cpu.y, tol, what + " y");
  expect_matches(out_gpu.rstd, out_cpu.rstd, 1e-5, what + " rstd");
  ops::RmsNormGrads g_gpu = ops::rmsnorm_backward(gy.gpu, x.gpu, w.gpu, out_gpu.rstd, style);
  ops::RmsNormGrads g_cpu = ops::rmsnorm_backward(gy.cpu, x.cpu, w.cpu, out_cpu.rstd, style);
  expect_matches(g_gpu.grad_x, g_cpu.grad_x, tol, what + " grad_x");
  expect_matches(g_gpu.grad_weight, g_cpu.grad_weight, tol, what + " grad_weight");
}

TEST_F(NormGpu, RmsNormMatchesCpuOnAwkwardSizes) {
  ZT_SKIP_WITHOUT_GPU();
  const Shape shapes[] = {{1, 1}, {3, 37}, {2, 5, 1}, {517, 8}, {1000, 129}, {40, 4099}};
  std::uint64_t seed = 1;
  for (const Shape& shape : shapes)
    for (DType dtype : kDtypes)
      for (RmsNormStyle style : {RmsNormStyle::kQwen, RmsNormStyle::kGlm})
        check_rmsnorm(shape, dtype, style, seed += 3);
}

TEST_F(NormGpu, RmsNormTakesNonContiguousViews) {
  ZT_SKIP_WITHOUT_GPU();
  Pair x = random_pair({24, 10}, 50, DType::kF32), w = random_pair({48}, 51, DType::kF32);
  Pair gy = random_pair({10, 24}, 52, DType::kF32);
  Tensor x_gpu = x.gpu.transpose(0, 1), x_cpu = x.cpu.transpose(0, 1);  // [10, 24] views
  Tensor w_gpu = w.gpu.slice(0, 0, 48, 2), w_cpu = w.cpu.slice(0, 0, 48, 2);
  ops::RmsNormOutput out_gpu = ops::rmsnorm_forward(x_gpu, w_gpu, 1e-6f, RmsNormStyle::kQwen);
  ops::RmsNormOutput out_cpu = ops::rmsnorm_forward(x_cpu, w_cpu, 1e-6f, RmsNormStyle::kQwen);
  expect_matches(out_gpu.y, out_cpu.y, 1e-5, "views y");
  ops::RmsNormGrads g_gpu = ops::rmsnorm_backward(gy.gpu, x_gpu, w_gpu, out_gpu.rstd, RmsNormStyle::kQwen);
  ops::RmsNormGrads g_cpu = ops::rmsnorm_backward(gy.cpu, x_cpu, w_cpu, out_cpu.rstd, RmsNormStyle::kQwen);
  expect_matches(g_gpu.grad_x, g_cpu.grad_x, 1e-5, "views grad_x");
  expect_matches(g_gpu.grad_weight, g_cpu.grad_weight, 1e-5, "views grad_weight");
}

TEST_F(NormGpu, RmsNormWeightGradientIsDeterministicAndZeroForNoRows) {
  ZT_SKIP_WITHOUT_GPU();
  Pair x = random_pair({3001, 77}, 60, DType::kBF16), w = random_pair({77}, 61, DType::kBF16);
  Pair gy = random_pair({3001, 77}, 62, DType::kBF16);
  ops::RmsNormOutput out = ops::rmsnorm_forward(x.gpu, w.gpu, 1e-6f, RmsNormStyle::kGlm);
  std::vector<double> first = ops::rmsnorm_backward(gy.gpu, x.gpu, w.gpu, out.rstd, RmsNormStyle::kGlm)
                                  .grad_weight.to_vector();
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(ops::rmsnorm_backward(gy.gpu, x.gpu, w.gpu, out.rstd, RmsNormStyle::kGlm).grad_weight.to_vector(),
              first);
  Tensor empty_x = Tensor::empty({0, 16}, DType::kF32, Device::cuda());
  Tensor w16 = Tensor::ones({16}, DType::kF32, Device::cuda());
  ops::RmsNormOutput empty_out = ops::rmsnorm_forward(empty_x, w16, 1e-6f, RmsNormStyle::kQwen);
  ops::RmsNormGrads g = ops::rmsnorm_backward(empty_x, empty_x, w16, empty_out.rstd, RmsNormStyle::kQwen);
  EXPECT_EQ(g.grad_weight.to_vector(), std::vector<double>(16, 0.0));
}

TEST_F(NormGpu, RmsNormRejectsFloat64OnTheGpu) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor x = Tensor::ones({2, 4}, DType::kF64, Device::cuda()), w = Tensor::ones({4}, DType::kF64, Device::cuda());
  try {
    ops::rmsnorm_forward(x, w, 1e-6f, RmsNormStyle::kQwen);
    FAIL() << "float64 on the GPU must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
}

// ---- RoPE ----

struct RopeCase {
  RopeConfig config;
  std::int64_t heads, head_dim;
};

std::string rope_name(const RopeCase& c, DType dtype, DType position_dtype, std::int64_t tokens) {
  return std::string(dtype_name(dtype)) + (c.config.style == RopeStyle::kRotateHalf ? " rotate_half" : " interleaved") +
         " fraction " + std::to_string(c.config.rotary_fraction) + " heads " + std::to_string(c.heads) +
         " head_dim " + std::to_string(c.head_dim) + " tokens " + std::to_string(tokens) + " positions " +
         dtype_name(position_dtype);
}

// Packed sequences: positions restart every `period` tokens, from a large offset.
Tensor packed_positions(std::int64_t tokens, DType dtype, std::int64_t start) {
  std::vector<double> values(static_cast<std::size_t>(tokens));
  for (std::int64_t t = 0; t < tokens; ++t) values[t] = static_cast<double>(start + t % 97);
  return Tensor::from_values(values, {tokens}, dtype);
}

TEST_F(NormGpu, RopeMatchesCpuForBothStylesForwardAndBackward) {
  ZT_SKIP_WITHOUT_GPU();
  const RopeCase cases[] = {{{RopeStyle::kRotateHalf, 1e6, 1.0}, 5, 128},
                            {{RopeStyle::kInterleaved, 10000.0, 0.5}, 3, 128},
                            {{RopeStyle::kRotateHalf, 10000.0, 0.5}, 2, 12},
                            {{RopeStyle::kInterleaved, 500.0, 1.0}, 1, 6},
                            {{RopeStyle::kRotateHalf, 10000.0, 1.0}, 7, 2},
                            {{RopeStyle::kInterleaved, 10000.0, 1.0}, 2, 512}};
  std::uint64_t seed = 100;
  for (const RopeCase& c : cases)
    for (std::int64_t tokens : {1, 7, 300})
      for (DType dtype : kDtypes)
        for (DType position_dtype : {DType::kI64, DType::kI32}) {
          std::string what = rope_name(c, dtype, position_dtype, tokens);
          Pair x = random_pair({tokens, c.heads, c.head_dim}, seed++, dtype);
          Tensor pos_cpu = packed_positions(tokens, position_dtype, tokens == 300 ? 32000 : 3);
          Tensor pos_gpu = pos_cpu.to(Device::cuda());
          expect_matches(ops::rope_forward(x.gpu, pos_gpu, c.config), ops::rope_forward(x.cpu, pos_cpu, c.config),
                         tolerance(dtype), what + " forward");
          expect_matches(ops::rope_backward(x.gpu, pos_gpu, c.config), ops::rope_backward(x.cpu, pos_cpu, c.config),
                         tolerance(dtype), what + " backward");
        }
}

TEST_F(NormGpu, RopeTakesAHeadSliceOfAFusedProjection) {
  ZT_SKIP_WITHOUT_GPU();
  // q is the first 4 heads of a [tokens, 6 heads, 64] qkv-like tensor: a non-contiguous view.
  Pair qkv = random_pair({9, 6, 64}, 200, DType::kBF16);
  Tensor pos_cpu = packed_positions(9, DType::kI64, 0), pos_gpu = pos_cpu.to(Device::cuda());
  RopeConfig config{RopeStyle::kInterleaved, 10000.0, 0.5};
  expect_matches(ops::rope_forward(qkv.gpu.narrow(1, 0, 4), pos_gpu, config),
                 ops::rope_forward(qkv.cpu.narrow(1, 0, 4), pos_cpu, config), 1e-2, "sliced q");
}

TEST_F(NormGpu, RopeBackwardUndoesForwardAndPositionZeroIsIdentity) {
  ZT_SKIP_WITHOUT_GPU();
  Pair x = random_pair({33, 4, 80}, 300, DType::kF32);
  Tensor pos = packed_positions(33, DType::kI32, 1000).to(Device::cuda());
  RopeConfig config{RopeStyle::kRotateHalf, 1e6, 1.0};
  Tensor back = ops::rope_backward(ops::rope_forward(x.gpu, pos, config), pos, config);
  EXPECT_LE(relative_error(back, x.gpu), 1e-6);
  Tensor zeros = Tensor::zeros({33}, DType::kI64, Device::cuda());
  EXPECT_EQ(ops::rope_forward(x.gpu, zeros, config).to_vector(), x.cpu.to_vector());
}

}  // namespace
}  // namespace zt
