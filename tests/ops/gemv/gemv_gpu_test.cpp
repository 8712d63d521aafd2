// small_m_linear's kernel (cuda/gemv/) against its CPU reference, the composed ops, from the
// same inputs: float32 to 1e-5, 16-bit to 1e-2, at 1, 2, 5, 8, 17 and 32 rows. Every prologue
// (none, RMSNorm in both styles, SwiGLU split and fused) and epilogue (none, bias, residual,
// both) in every dtype on awkward sizes (k 1, 7, 1000; n 1, 3, 1001) and on every in- and
// out-features width of Qwen2.5-0.5B/1.5B/7B and GLM-4-9B (the other side kept small so the
// CPU reference stays quick); then those models' layers as a decode step runs them, with
// their own prologue and epilogue; misaligned and strided views; a caller-kept workspace and
// an output written over its residual. Each reference is computed once for 32 rows and its
// leading rows serve the smaller row counts (rows are independent). Every GPU result is
// computed twice and must repeat bit for bit; new GPU tensors start as NaN, so unwritten
// outputs fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/gemv/gemv.cuh"
#include "ops/gemv/gemv.h"
#include "runtime/streams/current_stream.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using ops::SmallMLinearOptions;
using ops::SmallMPrologue;
using Pair = testing::CpuGpuPair;
using testing::expect_gpu_matches;
using testing::gpu_tolerance;
using testing::random_pair;

class SmallMLinearGpu : public testing::PoisonedGpuTest {};

const DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
const std::int64_t kRowCounts[] = {1, 2, 5, 8, 17, 32};

enum class Variant { kPlain, kRmsNormQwen, kRmsNormGlm, kSwigluSplit, kSwigluFused };
const Variant kVariants[] = {Variant::kPlain, Variant::kRmsNormQwen, Variant::kRmsNormGlm, Variant::kSwigluSplit,
                             Variant::kSwigluFused};

const char* variant_name(Variant v) {
  const char* names[] = {"plain", "rmsnorm qwen", "rmsnorm glm", "swiglu split", "swiglu fused"};
  return names[static_cast<int>(v)];
}

struct Epilogue {
  bool bias = false, residual = false;
};
const Epilogue kEpilogues[] = {{false, false}, {true, false}, {false, true}, {true, true}};

// One problem: its inputs on both devices for `rows` rows; unused ones stay undefined.
struct Problem {
  Variant variant = Variant::kPlain;
  Epilogue epilogue;
  DType dtype = DType::kBF16;
  std::int64_t rows = 0, k = 0, n = 0;
  Pair x, weight, norm_weight, up, bias, residual;

  std::string name() const {
    return std::string(dtype_name(dtype)) + " " + variant_name(variant) + (epilogue.bias ? " +bias" : "") +
           (epilogue.residual ? " +residual" : "") + " k " + std::to_string(k) + " n " + std::to_string(n);
  }
};

Problem make_problem(Variant v, Epilogue e, DType dtype, std::int64_t rows, std::int64_t k, std::int64_t n,
                     std::uint64_t seed) {
  Problem p;
  p.variant = v;
  p.epilogue = e;
  p.dtype = dtype;
  p.rows = rows;
  p.k = k;
  p.n = n;
  p.weight = random_pair({n, k}, seed, dtype);
  p.x = random_pair({rows, v == Variant::kSwigluFused ? 2 * k : k}, seed + 1, dtype);
  if (v == Variant::kRmsNormQwen || v == Variant::kRmsNormGlm)
    p.norm_weight = random_pair({k}, seed + 2, dtype, 1.0, 0.5);
  if (v == Variant::kSwigluSplit) p.up = random_pair({rows, k}, seed + 3, dtype);
  if (e.bias) p.bias = random_pair({n}, seed + 4, dtype);
  if (e.residual) p.residual = random_pair({rows, n}, seed + 5, dtype);
  return p;
}

// The first `rows` rows of a [rows, ...] tensor (a view, so a GPU pointer keeps its alignment).
Tensor first_rows(const Tensor& t, std::int64_t rows) { return t.defined() ? t.narrow(0, 0, rows) : t; }

// The op's arguments on one device for the first `rows` rows.
struct Call {
  Tensor x, weight;
  SmallMLinearOptions options;
};

Call call_for(const Problem& p, bool gpu, std::int64_t rows) {
  auto pick = [&](const Pair& pair) { return gpu ? pair.gpu : pair.cpu; };
  Call c{first_rows(pick(p.x), rows), pick(p.weight), {}};
  if (p.variant == Variant::kRmsNormQwen || p.variant == Variant::kRmsNormGlm) {
    c.options.prologue = SmallMPrologue::kRmsNorm;
    c.options.norm_weight = pick(p.norm_weight);
    c.options.eps = 1e-5f;
    c.options.norm_style = p.variant == Variant::kRmsNormQwen ? ops::RmsNormStyle::kQwen : ops::RmsNormStyle::kGlm;
  }
  if (p.variant == Variant::kSwigluSplit || p.variant == Variant::kSwigluFused)
    c.options.prologue = SmallMPrologue::kSwiglu;
  c.options.up = first_rows(pick(p.up), rows);
  c.options.bias = pick(p.bias);
  c.options.residual = first_rows(pick(p.residual), rows);
  return c;
}

Tensor run(const Call& c) { return ops::small_m_linear(c.x, c.weight, c.options); }

// The GPU at each of `row_counts` (at most p.rows) against the CPU reference of all p.rows.
void check(const Problem& p, const std::vector<std::int64_t>& row_counts) {
  const Tensor reference = run(call_for(p, false, p.rows));
  for (std::int64_t rows : row_counts) {
    const std::string what = p.name() + " rows " + std::to_string(rows);
    SCOPED_TRACE(what);
    const Call c = call_for(p, true, rows);
    const Tensor out = run(c);
    expect_gpu_matches(out, first_rows(reference, rows), gpu_tolerance(p.dtype), what);
    EXPECT_EQ(run(c).to_vector(), out.to_vector()) << what << ": two runs on the same inputs differ";
  }
}

const std::vector<std::int64_t> kAllRowCounts(std::begin(kRowCounts), std::end(kRowCounts));

TEST_F(SmallMLinearGpu, AwkwardSizesEveryPrologueEpilogueDtypeAndRowCount) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 1;
  for (std::int64_t k : {1, 7, 1000})
    for (std::int64_t n : {1, 3, 1001})
      for (DType dtype : kDtypes)
        for (Variant v : kVariants)
          for (Epilogue e : kEpilogues) check(make_problem(v, e, dtype, 32, k, n, seed += 10), kAllRowCounts);
}

// Qwen2.5-0.5B/1.5B/7B and GLM-4-9B: hidden sizes and MLP widths as in_features, with few
// outputs (every k takes split-K: one strip of columns is too few blocks on its own).
TEST_F(SmallMLinearGpu, EveryModelInFeaturesWidthEveryPrologueAndEpilogue) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 5000;
  for (std::int64_t k : {896, 1536, 3584, 4096, 4864, 8960, 13696, 18944})
    for (DType dtype : kDtypes)
      for (Variant v : kVariants)
        for (Epilogue e : kEpilogues) check(make_problem(v, e, dtype, 32, k, 33, seed += 10), kAllRowCounts);
}

// Their projection widths (q, k/v, fused qkv, o, gate/up, fused gate_up, down) and the
// vocabulary as out_features, over a short k (40: whole 16-byte vectors, one partial step).
TEST_F(SmallMLinearGpu, EveryModelOutFeaturesWidth) {
  ZT_SKIP_WITHOUT_GPU();
  const std::int64_t widths[] = {128,  256,  512,  896,   1152,  1536,  2048,  3584,  4096,  4608,
                                 4864, 8960, 9728, 13696, 17920, 18944, 27392, 37888, 151936};
  const struct {
    Variant variant;
    Epilogue epilogue;
  } kinds[] = {
      {Variant::kPlain, {true, true}}, {Variant::kRmsNormQwen, {true, false}}, {Variant::kSwigluFused, {false, true}}};
  std::uint64_t seed = 9000;
  for (std::int64_t n : widths)
    for (DType dtype : kDtypes)
      for (const auto& kind : kinds)
        check(make_problem(kind.variant, kind.epilogue, dtype, 32, 40, n, seed += 10), kAllRowCounts);
}

// A decode step's linear layers, each with the prologue and epilogue it replaces: qkv after
// the input norm (with Qwen's and GLM's qkv bias), o_proj and down_proj into the residual,
// gate_up after the post-attention norm, down_proj after SwiGLU, the LM head after the final
// norm. bfloat16 everywhere, float32 and float16 on the two smaller models.
struct Layer {
  const char* name;
  std::int64_t k, n;
  Variant variant;
  Epilogue epilogue;
};

// norm: the model's RMSNorm style (Qwen's or GLM's rounding).
std::vector<Layer> layers_of(std::int64_t hidden, std::int64_t q, std::int64_t kv, std::int64_t ffn, Variant norm) {
  return {{"qkv", hidden, q + 2 * kv, norm, {true, false}},
          {"kv", hidden, kv, norm, {true, false}},
          {"o", q, hidden, Variant::kPlain, {false, true}},
          {"gate_up", hidden, 2 * ffn, norm, {false, false}},
          {"down", ffn, hidden, Variant::kSwigluFused, {false, true}}};
}

// rows: the most rows checked (17 on the two large models keeps their CPU reference short;
// 32 rows at their widths are in the in-features test above).
void check_layers(const char* model, const std::vector<Layer>& layers, const std::vector<DType>& dtypes,
                  std::int64_t rows, std::uint64_t seed) {
  std::vector<std::int64_t> counts;
  for (std::int64_t r : kRowCounts)
    if (r <= rows) counts.push_back(r);
  for (const Layer& l : layers)
    for (DType dtype : dtypes) {
      SCOPED_TRACE(std::string(model) + " " + l.name);
      check(make_problem(l.variant, l.epilogue, dtype, rows, l.k, l.n, seed += 10), counts);
    }
}

TEST_F(SmallMLinearGpu, DecodeLayersOfQwenAndGlm) {
  ZT_SKIP_WITHOUT_GPU();
  const std::vector<DType> all = {DType::kBF16, DType::kF32, DType::kF16}, bf16 = {DType::kBF16};
  const Variant qwen = Variant::kRmsNormQwen, glm = Variant::kRmsNormGlm;
  check_layers("Qwen2.5-0.5B", layers_of(896, 896, 128, 4864, qwen), all, 32, 100);
  check_layers("Qwen2.5-1.5B", layers_of(1536, 1536, 256, 8960, qwen), all, 32, 200);
  check_layers("Qwen2.5-7B", layers_of(3584, 3584, 512, 18944, qwen), bf16, 17, 300);
  check_layers("GLM-4-9B", layers_of(4096, 4096, 256, 13696, glm), bf16, 17, 400);
}

// Qwen2.5-0.5B's tied head (896 -> 151936) to 17 rows and Qwen2.5-7B's (3584 -> 151936) at 1
// and 2 rows; 32 rows at the vocabulary width are in the out-features test.
TEST_F(SmallMLinearGpu, LmHeadAfterTheFinalNorm) {
  ZT_SKIP_WITHOUT_GPU();
  check(make_problem(Variant::kRmsNormQwen, {}, DType::kBF16, 17, 896, 151936, 500), {1, 2, 5, 8, 17});
  check(make_problem(Variant::kRmsNormQwen, {}, DType::kBF16, 2, 3584, 151936, 510), {1, 2});
}

// Tensors that start 2 or 4 bytes past a 16-byte boundary, a weight sliced out of a wider
// one (a row stride above in_features, aligned or not), and the fused SwiGLU layout with an
// odd width (the up half misaligned): the kernel's element-wise path, against contiguous
// copies on the CPU.
Tensor shifted(const Tensor& t) {
  Tensor flat = Tensor::empty({t.numel() + 1}, t.dtype(), t.device());
  Tensor view = flat.narrow(0, 1, t.numel()).view(t.shape());
  view.copy_from(t);
  return view;
}

TEST_F(SmallMLinearGpu, MisalignedAndStridedViews) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 700;
  for (DType dtype : kDtypes)
    for (Variant v : kVariants)
      for (std::int64_t rows : {1, 5, 17, 32}) {
        Problem p = make_problem(v, {true, true}, dtype, rows, 1000, 300, seed += 10);
        const Tensor reference = run(call_for(p, false, rows));
        const std::string what = p.name() + " rows " + std::to_string(rows);
        Call shifted_call = call_for(p, true, rows);
        shifted_call.x = shifted(shifted_call.x);
        shifted_call.weight = shifted(shifted_call.weight);
        if (shifted_call.options.up.defined()) shifted_call.options.up = shifted(shifted_call.options.up);
        if (shifted_call.options.norm_weight.defined())
          shifted_call.options.norm_weight = shifted(shifted_call.options.norm_weight);
        shifted_call.options.bias = shifted(shifted_call.options.bias);
        shifted_call.options.residual = shifted(shifted_call.options.residual);
        expect_gpu_matches(run(shifted_call), reference, gpu_tolerance(dtype), what + " shifted");
        for (std::int64_t offset : {1, 8}) {
          const Pair wide = random_pair({300, 1000 + 16}, seed + 1, dtype);
          Call sliced = call_for(p, true, rows), sliced_cpu = call_for(p, false, rows);
          sliced.weight = wide.gpu.narrow(1, offset, 1000);
          sliced_cpu.weight = wide.cpu.narrow(1, offset, 1000);
          expect_gpu_matches(run(sliced), run(sliced_cpu), gpu_tolerance(dtype),
                             what + " weight sliced at column " + std::to_string(offset));
        }
      }
  for (DType dtype : kDtypes) {
    Problem odd = make_problem(Variant::kSwigluFused, {}, dtype, 5, 999, 77, seed += 10);
    expect_gpu_matches(run(call_for(odd, true, 5)), run(call_for(odd, false, 5)), gpu_tolerance(dtype),
                       odd.name() + " odd fused width");
  }
}

// The kernel entry with a workspace the caller keeps: zeroed once, then reused by launches of
// different shapes (each leaves its counters zero); and out written over its residual.
cuda::GemvArgs plain_args(const Problem& p, void* out) {
  cuda::GemvArgs a;
  a.x = p.x.gpu.data_ptr();
  a.x_row_stride = p.k;
  a.weight = p.weight.gpu.data_ptr();
  a.weight_row_stride = p.k;
  a.residual = p.residual.gpu.defined() ? p.residual.gpu.data_ptr() : nullptr;
  a.residual_row_stride = p.n;
  a.out = out;
  return a;
}

TEST_F(SmallMLinearGpu, KeptWorkspaceAndOutputOverTheResidual) {
  ZT_SKIP_WITHOUT_GPU();
  const Problem small = make_problem(Variant::kPlain, {false, true}, DType::kBF16, 8, 4096, 256, 800);
  const Problem other = make_problem(Variant::kPlain, {}, DType::kBF16, 3, 8960, 1536, 810);
  std::size_t bytes = 0;
  for (const Problem* p : {&small, &other}) {
    const cuda::GemvShape shape{p->rows, p->k, p->n};
    ASSERT_GT(cuda::gemv_splits(DType::kBF16, shape), 1) << p->name();
    bytes = std::max(bytes, cuda::gemv_workspace_bytes(DType::kBF16, shape));
  }
  Tensor workspace = Tensor::zeros({static_cast<std::int64_t>(bytes)}, DType::kU8, Device::cuda());
  for (int repeat = 0; repeat < 3; ++repeat)
    for (const Problem* p : {&small, &other}) {
      const Tensor expected = run(call_for(*p, true, p->rows));
      Tensor out = Tensor::empty({p->rows, p->n}, DType::kBF16, Device::cuda());
      cuda::gemv(plain_args(*p, out.data_ptr()), cuda::GemvPrologue::kNone, DType::kBF16, {p->rows, p->k, p->n},
                 workspace.data_ptr(), current_stream());
      EXPECT_EQ(out.to_vector(), expected.to_vector()) << p->name() << " repeat " << repeat;
    }
  const Tensor expected = run(call_for(small, true, small.rows));
  Tensor in_place = small.residual.gpu.clone();
  cuda::GemvArgs a = plain_args(small, in_place.data_ptr());
  a.residual = in_place.data_ptr();
  cuda::gemv(a, cuda::GemvPrologue::kNone, DType::kBF16, {small.rows, small.k, small.n}, nullptr, current_stream());
  EXPECT_EQ(in_place.to_vector(), expected.to_vector()) << "out written over its residual";
}

}  // namespace
}  // namespace zt
