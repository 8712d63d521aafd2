// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a
// counter-based generator, so element i of a stream is a pure function of (seed, offset, i).
// The same header compiles for host and device, which is why CPU and GPU draw the same
// numbers, and why a kernel can draw any element without touching the others.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define ZT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define ZT_HOST_DEVICE inline
#endif

namespace zt::philox {

struct Block {
  std::uint32_t lane[4];
};

ZT_HOST_DEVICE void mul_hi_lo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(product >> 32);
  lo = static_cast<std::uint32_t>(product);
}

// Ten rounds over counter (c0..c3) with key (k0, k1).
ZT_HOST_DEVICE Block philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                                   std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mul_hi_lo(kMul0, c0, hi0, lo0);
    mul_hi_lo(kMul1, c2, hi1, lo1);
    std::uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// The 4 words of block `block_index` of stream (seed, offset): counter = offset + block.
ZT_HOST_DEVICE Block block(std::uint64_t seed, std::uint64_t offset, std::uint64_t block_index) {
  std::uint64_t counter = offset + block_index;
  return philox4x32_10(static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), 0u, 0u,
                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// A uniform float in [0, 1) from the top 24 bits, exactly representable.
ZT_HOST_DEVICE float to_unit_float(std::uint32_t bits) { return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f); }

// Element i of the uniform [0,1) stream (seed, offset); offsets advance by ceil(n/4) blocks.
ZT_HOST_DEVICE float uniform(std::uint64_t seed, std::uint64_t offset, std::uint64_t i) {
  return to_unit_float(block(seed, offset, i / 4).lane[i % 4]);
}

// Element i of the standard-normal stream: Box-Muller on lanes (0,1) and (2,3) of a block,
// with u1 taken in (0, 1] so the logarithm is finite.
ZT_HOST_DEVICE float normal(std::uint64_t seed, std::uint64_t offset, std::uint64_t i) {
  Block b = block(seed, offset, i / 4);
  unsigned pair = static_cast<unsigned>(i % 4) / 2;
  float u1 = 1.0f - to_unit_float(b.lane[2 * pair]);
  float u2 = to_unit_float(b.lane[2 * pair + 1]);
  float radius = sqrtf(-2.0f * logf(u1));
  float angle = 6.2831853071795864f * u2;
  return (i % 2 == 0) ? radius * cosf(angle) : radius * sinf(angle);
}

// Blocks a draw of n elements consumes; the next draw starts at offset + blocks_for(n).
ZT_HOST_DEVICE std::uint64_t blocks_for(std::uint64_t n) { return (n + 3) / 4; }

}  // namespace zt::philox
