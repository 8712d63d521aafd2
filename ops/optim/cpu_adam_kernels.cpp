#include "ops/optim/cpu_adam_kernels.h"

// GCC 12's AVX-512 intrinsics start from a self-initialised "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The update loop below is written once for both vector widths and inlined into each
// instruction set's function; GCC notes that its vector arguments would change the ABI were
// it ever called out of line, which it never is.
#pragma GCC diagnostic ignored "-Wpsabi"
// AVX-512F brings fused multiply-add, which GCC would otherwise form from the separate
// multiplies and adds below and so round differently from the reference.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace zt::ops::cpu_adam {
namespace {

void write_working_scalar(const float* master, void* working, DType dtype, std::int64_t n) {
  if (working == nullptr) return;
  if (dtype == DType::kF32) {
    auto* out = static_cast<float*>(working);
    for (std::int64_t i = 0; i < n; ++i) out[i] = master[i];
  } else {
    auto* out = static_cast<std::uint16_t*>(working);
    const bool bf16 = dtype == DType::kBF16;
    for (std::int64_t i = 0; i < n; ++i) out[i] = bf16 ? float_to_bf16_bits(master[i]) : float_to_half_bits(master[i]);
  }
}

// The vector loops handle whole vectors; what is left goes through the scalar loop.
Range tail_of(const Range& r, std::int64_t done) {
  Range tail = r;
  tail.master += done;
  tail.exp_avg += done;
  tail.exp_avg_sq += done;
  tail.grad += done;
  if (r.working != nullptr)
    tail.working = static_cast<char*>(r.working) + done * static_cast<std::int64_t>(dtype_size(r.working_dtype));
  tail.n = r.n - done;
  return tail;
}

#define ZT_AVX2 __attribute__((target("avx2,f16c")))
#define ZT_AVX512 __attribute__((target("avx512f")))

// float32 -> bfloat16 bits, round to nearest even, NaN kept quiet: float_to_bf16_bits on 8 lanes.
ZT_AVX2 inline __m128i bf16_bits(__m256 p) {
  const __m256i u = _mm256_castps_si256(p);
  const __m256i high = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256i quiet_nan = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
  const __m256i bits = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
}

// F16C rounds to nearest even like float_to_half_bits; a NaN becomes sign | 0x7E00 as there.
ZT_AVX2 inline __m128i half_bits(__m256 p) {
  const __m256 sign_nan = _mm256_or_ps(_mm256_and_ps(p, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN))),
                                       _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)));
  const __m256 fixed = _mm256_blendv_ps(p, sign_nan, _mm256_cmp_ps(p, p, _CMP_UNORD_Q));
  return _mm256_cvtps_ph(fixed, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

ZT_AVX512 inline __m256i bf16_bits(__m512 p) {
  const __m512i u = _mm512_castps_si512(p);
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  const __m512i quiet_nan = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
  const __mmask16 is_nan = _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q);
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet_nan));
}

ZT_AVX512 inline __m256i half_bits(__m512 p) {
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(p), _mm512_set1_epi32(INT32_MIN));
  const __m512 sign_nan = _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_set1_epi32(0x7FC00000)));
  const __m512 fixed = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q), p, sign_nan);
  return _mm512_cvtps_ph(fixed, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

ZT_AVX2 inline __m256 square_root(__m256 v) { return _mm256_sqrt_ps(v); }
ZT_AVX512 inline __m512 square_root(__m512 v) { return _mm512_sqrt_ps(v); }

// Unaligned vector loads and stores, whatever the vector type.
template <typename V>
[[gnu::always_inline]] inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <typename V>
[[gnu::always_inline]] inline void store(void* p, const V& v) {
  std::memcpy(p, &v, sizeof(v));
}

// update_scalar on whole vectors V (__m256 for AVX2, __m512 for AVX-512F), with the same
// operations in the same order: GCC's vector operators (a scalar operand stands for a
// vector of it) compile to the instruction set of the function this is inlined into. The
// rest of the range goes through update_scalar.
template <typename V, DType W>
[[gnu::always_inline]] inline void update_vectors(const Range& r, const cuda::AdamWScalars& scalars) {
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(float);
  // Copies no store in the loop can alias, so their broadcasts are made once, before it.
  const cuda::AdamWScalars s = scalars;
  const float decay = r.decay_factor;
  std::int64_t i = 0;
  for (; i + kLanes <= r.n; i += kLanes) {
    const V g = load<V>(r.grad + i) / s.grad_scale;
    V p = load<V>(r.master + i) * decay;
    const V m = s.beta1 * load<V>(r.exp_avg + i) + s.one_minus_beta1 * g;
    const V v = s.beta2 * load<V>(r.exp_avg_sq + i) + s.one_minus_beta2 * (g * g);
    const V denom = square_root(v) / s.bias_correction2_sqrt + s.eps;
    p = p - s.step_size * (m / denom);
    store(r.master + i, p);
    store(r.exp_avg + i, m);
    store(r.exp_avg_sq + i, v);
    if constexpr (W == DType::kF32) store(static_cast<float*>(r.working) + i, p);
    if constexpr (W == DType::kBF16) store(static_cast<std::uint16_t*>(r.working) + i, bf16_bits(p));
    if constexpr (W == DType::kF16) store(static_cast<std::uint16_t*>(r.working) + i, half_bits(p));
  }
  update_scalar(tail_of(r, i), s);
}

// Picks the loop for the working dtype; kBool stands for "no working copy".
template <template <DType> class Loop>
void dispatch_working(const Range& r, const cuda::AdamWScalars& s) {
  if (r.working == nullptr) return Loop<DType::kBool>::run(r, s);
  switch (r.working_dtype) {
    case DType::kBF16:
      return Loop<DType::kBF16>::run(r, s);
    case DType::kF16:
      return Loop<DType::kF16>::run(r, s);
    default:
      return Loop<DType::kF32>::run(r, s);
  }
}

template <DType W>
struct Avx2Loop {
  ZT_AVX2 static void run(const Range& r, const cuda::AdamWScalars& s) { update_vectors<__m256, W>(r, s); }
};
template <DType W>
struct Avx512Loop {
  ZT_AVX512 static void run(const Range& r, const cuda::AdamWScalars& s) { update_vectors<__m512, W>(r, s); }
};

constexpr std::uint32_t kExponentMask = 0x7F800000;  // all ones: inf or NaN

}  // namespace

void update_scalar(const Range& r, const cuda::AdamWScalars& s) {
  for (std::int64_t i = 0; i < r.n; ++i) {
    const float g = r.grad[i] / s.grad_scale;
    float p = r.master[i] * r.decay_factor;
    const float m = s.beta1 * r.exp_avg[i] + s.one_minus_beta1 * g;
    const float v = s.beta2 * r.exp_avg_sq[i] + s.one_minus_beta2 * (g * g);
    const float denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
    p = p - s.step_size * (m / denom);
    r.master[i] = p;
    r.exp_avg[i] = m;
    r.exp_avg_sq[i] = v;
  }
  write_working_scalar(r.master, r.working, r.working_dtype, r.n);
}

bool any_non_finite_scalar(const float* values, std::int64_t n) {
  bool found = false;
  for (std::int64_t i = 0; i < n; ++i)
    found |= (std::bit_cast<std::uint32_t>(values[i]) & kExponentMask) == kExponentMask;
  return found;
}

void update_avx2(const Range& r, const cuda::AdamWScalars& s) { dispatch_working<Avx2Loop>(r, s); }
void update_avx512(const Range& r, const cuda::AdamWScalars& s) { dispatch_working<Avx512Loop>(r, s); }

ZT_AVX2 bool any_non_finite_avx2(const float* values, std::int64_t n) {
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(kExponentMask));
  __m256i found = _mm256_setzero_si256();
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + i)), mask);
    found = _mm256_or_si256(found, _mm256_cmpeq_epi32(bits, mask));
  }
  return !_mm256_testz_si256(found, found) || any_non_finite_scalar(values + i, n - i);
}

ZT_AVX512 bool any_non_finite_avx512(const float* values, std::int64_t n) {
  const __m512i mask = _mm512_set1_epi32(static_cast<int>(kExponentMask));
  __mmask16 found = 0;
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    found |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_loadu_si512(values + i), mask), mask);
  return found != 0 || any_non_finite_scalar(values + i, n - i);
}

}  // namespace zt::ops::cpu_adam
