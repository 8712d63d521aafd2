// RMSNorm (plain and with the fused residual add) and RoPE (out of place, and in place on q
// and k together) against the CPU reference from the same inputs: float32 to 1e-5, 16-bit to
// 1e-2, on awkward sizes that reach every kernel variant (one warp or one block per row,
// 16-byte or element-wise access, rows too long for registers), forward and backward; each
// GPU result is computed twice and must repeat bit for bit. New GPU tensors start as NaN, so
// unwritten outputs fail.
#include <gtest/gtest.h>

#include <string>

#include "ops/norm/rmsnorm.h"
#include "ops/rope/rope.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using ops::RmsNormStyle;
using ops::RopeConfig;
using ops::RopeStyle;

using Pair = testing::CpuGpuPair;
using testing::expect_gpu_matches;
using testing::gpu_tolerance;
using testing::random_pair;

class NormGpu : public testing::PoisonedGpuTest {};

const DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// ---- RMSNorm ----

void check_rmsnorm(const Shape& shape, DType dtype, RmsNormStyle style, std::uint64_t seed) {
  std::int64_t hidden = shape.back();
  Pair x = random_pair(shape, seed, dtype), w = random_pair({hidden}, seed + 1, dtype, 1.0);
  Pair gy = random_pair(shape, seed + 2, dtype);
  std::string what =
      std::string(dtype_name(dtype)) + (style == RmsNormStyle::kQwen ? " qwen " : " glm ") + shape_str(shape);
  double tol = gpu_tolerance(dtype);
  // With hidden 1 and a tiny eps, y is sign(x) and grad_x is pure cancellation noise; a
  // large eps keeps that case meaningful.
  float eps = hidden == 1 ? 0.5f : 1e-6f;
  ops::RmsNormOutput out_gpu = ops::rmsnorm_forward(x.gpu, w.gpu, eps, style);
  ops::RmsNormOutput out_cpu = ops::rmsnorm_forward(x.cpu, w.cpu, eps, style);
  expect_gpu_matches(out_gpu.y, out_cpu.y, tol, what + " y");
  expect_gpu_matches(out_gpu.rstd, out_cpu.rstd, 1e-5, what + " rstd");
  ops::RmsNormGrads g_gpu = ops::rmsnorm_backward(gy.gpu, x.gpu, w.gpu, out_gpu.rstd, style);
  ops::RmsNormGrads g_cpu = ops::rmsnorm_backward(gy.cpu, x.cpu, w.cpu, out_cpu.rstd, style);
  expect_gpu_matches(g_gpu.grad_x, g_cpu.grad_x, tol, what + " grad_x");
  expect_gpu_matches(g_gpu.grad_weight, g_cpu.grad_weight, tol, what + " grad_weight");
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

// ---- RMSNorm on every kernel variant ----

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  EXPECT_EQ(a.to_vector(), b.to_vector()) << what << ": two runs on the same inputs differ";
}

// A contiguous [rows, hidden] view whose data starts one element past an allocation, so no
// 16-byte access is allowed: the element-wise kernels run.
Tensor misaligned(const Tensor& t) {
  Tensor flat = Tensor::empty({t.numel() + 1}, t.dtype(), t.device());
  Tensor view = flat.narrow(0, 1, t.numel()).view(t.shape());
  view.copy_from(t);
  return view;
}

struct RmsNormCase {
  std::int64_t rows, hidden;
  DType dtype;
  RmsNormStyle style;
  bool misaligned;
};

std::string case_name(const RmsNormCase& c) {
  return std::string(dtype_name(c.dtype)) + (c.style == RmsNormStyle::kQwen ? " qwen" : " glm") + " rows " +
         std::to_string(c.rows) + " hidden " + std::to_string(c.hidden) + (c.misaligned ? " misaligned" : "");
}

void check_rmsnorm_case(const RmsNormCase& c, std::uint64_t seed) {
  std::string what = case_name(c);
  SCOPED_TRACE(what);
  Pair x = random_pair({c.rows, c.hidden}, seed, c.dtype), w = random_pair({c.hidden}, seed + 1, c.dtype, 1.0);
  Pair gy = random_pair({c.rows, c.hidden}, seed + 2, c.dtype);
  if (c.misaligned) {
    x.gpu = misaligned(x.gpu);
    gy.gpu = misaligned(gy.gpu);
  }
  double tol = gpu_tolerance(c.dtype);
  float eps = c.hidden == 1 ? 0.5f : 1e-6f;
  ops::RmsNormOutput cpu = ops::rmsnorm_forward(x.cpu, w.cpu, eps, c.style);
  ops::RmsNormOutput gpu = ops::rmsnorm_forward(x.gpu, w.gpu, eps, c.style);
  expect_gpu_matches(gpu.y, cpu.y, tol, what + " y");
  expect_gpu_matches(gpu.rstd, cpu.rstd, 1e-5, what + " rstd");
  expect_same_bits(ops::rmsnorm_forward(x.gpu, w.gpu, eps, c.style).y, gpu.y, what + " y");
  ops::RmsNormGrads g_cpu = ops::rmsnorm_backward(gy.cpu, x.cpu, w.cpu, cpu.rstd, c.style);
  ops::RmsNormGrads g_gpu = ops::rmsnorm_backward(gy.gpu, x.gpu, w.gpu, gpu.rstd, c.style);
  expect_gpu_matches(g_gpu.grad_x, g_cpu.grad_x, tol, what + " grad_x");
  expect_gpu_matches(g_gpu.grad_weight, g_cpu.grad_weight, tol, what + " grad_weight");
  ops::RmsNormGrads again = ops::rmsnorm_backward(gy.gpu, x.gpu, w.gpu, gpu.rstd, c.style);
  expect_same_bits(again.grad_x, g_gpu.grad_x, what + " grad_x");
  expect_same_bits(again.grad_weight, g_gpu.grad_weight, what + " grad_weight");
}

TEST_F(NormGpu, RmsNormMatchesCpuOnEveryKernelVariant) {
  ZT_SKIP_WITHOUT_GPU();
  // 4097 and 16385 are too long for registers element-wise; 16384 float32 takes 8 vectors a
  // thread; 1000 is one warp per row in bfloat16 and several rows per block in float32.
  const std::int64_t hiddens[] = {1, 3, 17, 1000, 4097, 8192, 16384, 16385};
  std::uint64_t seed = 1000;
  int index = 0;
  for (std::int64_t rows : {1, 17, 2049})
    for (std::int64_t hidden : hiddens)
      for (DType dtype : kDtypes) {
        RmsNormStyle style = ++index % 2 ? RmsNormStyle::kQwen : RmsNormStyle::kGlm;
        check_rmsnorm_case({rows, hidden, dtype, style, false}, seed += 3);
      }
  for (DType dtype : kDtypes) check_rmsnorm_case({33, 1000, dtype, RmsNormStyle::kQwen, true}, seed += 3);
  for (DType dtype : kDtypes) check_rmsnorm_case({5, 8192, dtype, RmsNormStyle::kGlm, true}, seed += 3);
}

void check_residual_case(const RmsNormCase& c, bool with_grad_sum, std::uint64_t seed) {
  std::string what = case_name(c) + (with_grad_sum ? " residual + grad_sum" : " residual");
  SCOPED_TRACE(what);
  Pair x = random_pair({c.rows, c.hidden}, seed, c.dtype), r = random_pair({c.rows, c.hidden}, seed + 1, c.dtype);
  Pair w = random_pair({c.hidden}, seed + 2, c.dtype, 1.0), gy = random_pair({c.rows, c.hidden}, seed + 3, c.dtype);
  Pair gs = random_pair({c.rows, c.hidden}, seed + 4, c.dtype);
  if (c.misaligned) r.gpu = misaligned(r.gpu);
  double tol = gpu_tolerance(c.dtype);
  ops::RmsNormResidualOutput cpu = ops::rmsnorm_residual_forward(x.cpu, r.cpu, w.cpu, 1e-6f, c.style);
  ops::RmsNormResidualOutput gpu = ops::rmsnorm_residual_forward(x.gpu, r.gpu, w.gpu, 1e-6f, c.style);
  EXPECT_EQ(gpu.sum.to_vector(), cpu.sum.to_vector()) << what << ": sum rounds once, as on the CPU";
  expect_gpu_matches(gpu.y, cpu.y, tol, what + " y");
  expect_gpu_matches(gpu.rstd, cpu.rstd, 1e-5, what + " rstd");
  Tensor grad_sum_cpu = with_grad_sum ? gs.cpu : Tensor(), grad_sum_gpu = with_grad_sum ? gs.gpu : Tensor();
  ops::RmsNormResidualGrads g_cpu =
      ops::rmsnorm_residual_backward(gy.cpu, grad_sum_cpu, cpu.sum, w.cpu, cpu.rstd, c.style);
  ops::RmsNormResidualGrads g_gpu =
      ops::rmsnorm_residual_backward(gy.gpu, grad_sum_gpu, gpu.sum, w.gpu, gpu.rstd, c.style);
  expect_gpu_matches(g_gpu.grad_input, g_cpu.grad_input, tol, what + " grad_input");
  expect_gpu_matches(g_gpu.grad_weight, g_cpu.grad_weight, tol, what + " grad_weight");
  ops::RmsNormResidualGrads again =
      ops::rmsnorm_residual_backward(gy.gpu, grad_sum_gpu, gpu.sum, w.gpu, gpu.rstd, c.style);
  expect_same_bits(again.grad_input, g_gpu.grad_input, what + " grad_input");
  expect_same_bits(again.grad_weight, g_gpu.grad_weight, what + " grad_weight");
}

TEST_F(NormGpu, RmsNormResidualMatchesCpu) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 5000;
  int index = 0;
  for (std::int64_t rows : {1, 17, 2049})
    for (std::int64_t hidden : {3, 1000, 4097, 4096, 16384})
      for (DType dtype : kDtypes) {
        RmsNormStyle style = ++index % 2 ? RmsNormStyle::kQwen : RmsNormStyle::kGlm;
        check_residual_case({rows, hidden, dtype, style, false}, index % 3 != 0, seed += 5);
      }
  check_residual_case({9, 4096, DType::kBF16, RmsNormStyle::kQwen, true}, true, seed += 5);
}

TEST_F(NormGpu, RmsNormTakesNonContiguousViews) {
  ZT_SKIP_WITHOUT_GPU();
  Pair x = random_pair({24, 10}, 50, DType::kF32), w = random_pair({48}, 51, DType::kF32);
  Pair gy = random_pair({10, 24}, 52, DType::kF32);
  Tensor x_gpu = x.gpu.transpose(0, 1), x_cpu = x.cpu.transpose(0, 1);  // [10, 24] views
  Tensor w_gpu = w.gpu.slice(0, 0, 48, 2), w_cpu = w.cpu.slice(0, 0, 48, 2);
  ops::RmsNormOutput out_gpu = ops::rmsnorm_forward(x_gpu, w_gpu, 1e-6f, RmsNormStyle::kQwen);
  ops::RmsNormOutput out_cpu = ops::rmsnorm_forward(x_cpu, w_cpu, 1e-6f, RmsNormStyle::kQwen);
  expect_gpu_matches(out_gpu.y, out_cpu.y, 1e-5, "views y");
  ops::RmsNormGrads g_gpu = ops::rmsnorm_backward(gy.gpu, x_gpu, w_gpu, out_gpu.rstd, RmsNormStyle::kQwen);
  ops::RmsNormGrads g_cpu = ops::rmsnorm_backward(gy.cpu, x_cpu, w_cpu, out_cpu.rstd, RmsNormStyle::kQwen);
  expect_gpu_matches(g_gpu.grad_x, g_cpu.grad_x, 1e-5, "views grad_x");
  expect_gpu_matches(g_gpu.grad_weight, g_cpu.grad_weight, 1e-5, "views grad_weight");
}

TEST_F(NormGpu, RmsNormWeightGradientIsDeterministicAndZeroForNoRows) {
  ZT_SKIP_WITHOUT_GPU();
  Pair x = random_pair({3001, 77}, 60, DType::kBF16), w = random_pair({77}, 61, DType::kBF16);
  Pair gy = random_pair({3001, 77}, 62, DType::kBF16);
  ops::RmsNormOutput out = ops::rmsnorm_forward(x.gpu, w.gpu, 1e-6f, RmsNormStyle::kGlm);
  std::vector<double> first =
      ops::rmsnorm_backward(gy.gpu, x.gpu, w.gpu, out.rstd, RmsNormStyle::kGlm).grad_weight.to_vector();
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(ops::rmsnorm_backward(gy.gpu, x.gpu, w.gpu, out.rstd, RmsNormStyle::kGlm).grad_weight.to_vector(), first);
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
         " fraction " + std::to_string(c.config.rotary_fraction) + " heads " + std::to_string(c.heads) + " head_dim " +
         std::to_string(c.head_dim) + " tokens " + std::to_string(tokens) + " positions " + dtype_name(position_dtype);
}

// Packed sequences: positions restart every `period` tokens, from a large offset.
Tensor packed_positions(std::int64_t tokens, DType dtype, std::int64_t start) {
  std::vector<double> values(static_cast<std::size_t>(tokens));
  for (std::int64_t t = 0; t < tokens; ++t) values[t] = static_cast<double>(start + t % 97);
  return Tensor::from_values(values, {tokens}, dtype);
}

TEST_F(NormGpu, RopeMatchesCpuForBothStylesForwardAndBackward) {
  ZT_SKIP_WITHOUT_GPU();
  const RopeCase cases[] = {
      {{RopeStyle::kRotateHalf, 1e6, 1.0}, 5, 128},    {{RopeStyle::kInterleaved, 10000.0, 0.5}, 3, 128},
      {{RopeStyle::kRotateHalf, 10000.0, 0.5}, 2, 12}, {{RopeStyle::kInterleaved, 500.0, 1.0}, 1, 6},
      {{RopeStyle::kRotateHalf, 10000.0, 1.0}, 7, 2},  {{RopeStyle::kInterleaved, 10000.0, 1.0}, 2, 512}};
  std::uint64_t seed = 100;
  for (const RopeCase& c : cases)
    for (std::int64_t tokens : {1, 7, 300})
      for (DType dtype : kDtypes)
        for (DType position_dtype : {DType::kI64, DType::kI32}) {
          std::string what = rope_name(c, dtype, position_dtype, tokens);
          Pair x = random_pair({tokens, c.heads, c.head_dim}, seed++, dtype);
          Tensor pos_cpu = packed_positions(tokens, position_dtype, tokens == 300 ? 32000 : 3);
          Tensor pos_gpu = pos_cpu.to(Device::cuda());
          expect_gpu_matches(ops::rope_forward(x.gpu, pos_gpu, c.config), ops::rope_forward(x.cpu, pos_cpu, c.config),
                             gpu_tolerance(dtype), what + " forward");
          expect_gpu_matches(ops::rope_backward(x.gpu, pos_gpu, c.config), ops::rope_backward(x.cpu, pos_cpu, c.config),
                             gpu_tolerance(dtype), what + " backward");
        }
}

TEST_F(NormGpu, RopeTakesAHeadSliceOfAFusedProjection) {
  ZT_SKIP_WITHOUT_GPU();
  // q is the first 4 heads of a [tokens, 6 heads, 64] qkv-like tensor: a non-contiguous view.
  Pair qkv = random_pair({9, 6, 64}, 200, DType::kBF16);
  Tensor pos_cpu = packed_positions(9, DType::kI64, 0), pos_gpu = pos_cpu.to(Device::cuda());
  RopeConfig config{RopeStyle::kInterleaved, 10000.0, 0.5};
  expect_gpu_matches(ops::rope_forward(qkv.gpu.narrow(1, 0, 4), pos_gpu, config),
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

// In place on q and k together (one launch) against the CPU's out-of-place op, on layouts
// that take the vector path (Qwen 7B and GLM heads, a pass-through tail in float32) and the
// element-wise one (head dims that are not whole vectors), contiguous and as head slices of
// a fused qkv tensor.
struct RopeInPlaceCase {
  RopeConfig config;
  std::int64_t q_heads, k_heads, head_dim;
};

void check_rope_inplace(const RopeInPlaceCase& c, DType dtype, std::int64_t tokens, bool fused, std::uint64_t seed) {
  std::string what = rope_name({c.config, c.q_heads, c.head_dim}, dtype, DType::kI64, tokens) + " k_heads " +
                     std::to_string(c.k_heads) + (fused ? " fused qkv" : "");
  SCOPED_TRACE(what);
  std::int64_t all = c.q_heads + 2 * c.k_heads;
  Pair qkv = random_pair({tokens, all, c.head_dim}, seed, dtype);
  Tensor pos_cpu = packed_positions(tokens, DType::kI64, 4000), pos_gpu = pos_cpu.to(Device::cuda());
  Tensor q_cpu = qkv.cpu.narrow(1, 0, c.q_heads), k_cpu = qkv.cpu.narrow(1, c.q_heads, c.k_heads);
  Tensor q_ref = ops::rope_forward(q_cpu, pos_cpu, c.config), k_ref = ops::rope_forward(k_cpu, pos_cpu, c.config);
  Tensor q_gpu = fused ? qkv.gpu.narrow(1, 0, c.q_heads) : q_cpu.contiguous().to(Device::cuda());
  Tensor k_gpu = fused ? qkv.gpu.narrow(1, c.q_heads, c.k_heads) : k_cpu.contiguous().to(Device::cuda());
  Tensor q_twice = q_gpu.clone(), k_twice = k_gpu.clone();
  ops::rope_forward_inplace(q_gpu, k_gpu, pos_gpu, c.config);
  expect_gpu_matches(q_gpu.contiguous(), q_ref, gpu_tolerance(dtype), what + " q");
  expect_gpu_matches(k_gpu.contiguous(), k_ref, gpu_tolerance(dtype), what + " k");
  ops::rope_forward_inplace(q_twice, k_twice, pos_gpu, c.config);
  EXPECT_EQ(q_twice.to_vector(), q_gpu.to_vector()) << what << ": two runs differ";
  EXPECT_EQ(k_twice.to_vector(), k_gpu.to_vector()) << what << ": two runs differ";
  if (fused) {
    EXPECT_EQ(qkv.gpu.narrow(1, c.q_heads + c.k_heads, c.k_heads).to_vector(),
              qkv.cpu.narrow(1, c.q_heads + c.k_heads, c.k_heads).to_vector())
        << what << ": v must be untouched";
  }
  Tensor q_back_ref = ops::rope_backward(q_ref, pos_cpu, c.config);
  Tensor k_back_ref = ops::rope_backward(k_ref, pos_cpu, c.config);
  ops::rope_backward_inplace(q_gpu, k_gpu, pos_gpu, c.config);
  expect_gpu_matches(q_gpu.contiguous(), q_back_ref, gpu_tolerance(dtype), what + " q backward");
  expect_gpu_matches(k_gpu.contiguous(), k_back_ref, gpu_tolerance(dtype), what + " k backward");
}

TEST_F(NormGpu, RopeInPlaceOnQAndKMatchesCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const RopeInPlaceCase cases[] = {
      {{RopeStyle::kRotateHalf, 1e6, 1.0}, 28, 4, 128},   {{RopeStyle::kInterleaved, 10000.0, 0.5}, 32, 2, 128},
      {{RopeStyle::kRotateHalf, 10000.0, 0.5}, 3, 1, 16}, {{RopeStyle::kInterleaved, 10000.0, 0.5}, 2, 2, 12},
      {{RopeStyle::kRotateHalf, 500.0, 1.0}, 5, 1, 6},    {{RopeStyle::kInterleaved, 10000.0, 1.0}, 1, 1, 512}};
  std::uint64_t seed = 400;
  for (const RopeInPlaceCase& c : cases)
    for (DType dtype : kDtypes)
      for (std::int64_t tokens : {1, 17, 300})
        for (bool fused : {false, true}) check_rope_inplace(c, dtype, tokens, fused, seed++);
}

TEST_F(NormGpu, RopeRepeatsBitForBitOnTheVectorPath) {
  ZT_SKIP_WITHOUT_GPU();
  Pair x = random_pair({257, 28, 128}, 500, DType::kBF16);
  Tensor pos_cpu = packed_positions(257, DType::kI32, 100), pos_gpu = pos_cpu.to(Device::cuda());
  RopeConfig config{RopeStyle::kInterleaved, 10000.0, 0.5};
  Tensor first = ops::rope_forward(x.gpu, pos_gpu, config);
  expect_gpu_matches(first, ops::rope_forward(x.cpu, pos_cpu, config), 1e-2, "GLM bf16 out of place");
  EXPECT_EQ(ops::rope_forward(x.gpu, pos_gpu, config).to_vector(), first.to_vector());
  Tensor alone = x.gpu.clone();
  ops::rope_forward_inplace(alone, Tensor(), pos_gpu, config);
  EXPECT_EQ(alone.to_vector(), first.to_vector()) << "q alone in place";
}

}  // namespace
}  // namespace zt
