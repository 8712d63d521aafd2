// ops/quant4 against values worked out by hand from bitsandbytes' tables and kernels, and on
// random and adversarial blocks (zeros, one huge value, denormals, odd sizes, NaN/Inf).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

#include "ops/quant4/blockwise.h"
#include "ops/quant4/code_books.h"
#include "runtime/error.h"

namespace zt::ops::quant4 {
namespace {

std::vector<float> normal_values(std::size_t n, unsigned seed, float scale = 0.02f) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (float& v : values) v = normal(generator);
  return values;
}

std::vector<float> dequantized(const Packed4& q, std::size_t n, std::int64_t blocksize, Quant4Type type) {
  std::vector<float> out(n);
  dequantize_4bit(q.packed, q.absmax, blocksize, type, out);
  return out;
}

TEST(Quant4CodeBooks, Nf4IsBitsandbytesTable) {
  const std::array<float, 16>& nf4 = code_book(Quant4Type::kNf4);
  EXPECT_EQ(nf4[0], -1.0f);
  EXPECT_EQ(nf4[1], -0.6961928009986877f);
  EXPECT_EQ(nf4[7], 0.0f);
  EXPECT_EQ(nf4[8], 0.07958029955625534f);
  EXPECT_EQ(nf4[14], 0.7229568362236023f);
  EXPECT_EQ(nf4[15], 1.0f);
  for (int i = 0; i < 15; ++i) EXPECT_LT(nf4[i], nf4[i + 1]) << i;
}

TEST(Quant4CodeBooks, Fp4IsSignExponentMantissaOverTwelve) {
  const std::array<float, 16>& fp4 = code_book(Quant4Type::kFp4);
  const float expected[8] = {0.0f, 0.0625f / 12.0f, 8.0f / 12.0f, 1.0f, 4.0f / 12.0f, 0.5f, 2.0f / 12.0f, 0.25f};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(fp4[i], expected[i]) << i;
    EXPECT_EQ(fp4[i + 8], -expected[i]) << i;
  }
  EXPECT_TRUE(std::signbit(fp4[8]));  // code 0b1000 is -0
  // The CUDA kernel's lookup table literals round to the same floats.
  EXPECT_EQ(fp4[2], 0.66666667f);
  EXPECT_EQ(fp4[4], 0.33333333f);
  EXPECT_EQ(fp4[6], 0.16666667f);
  EXPECT_EQ(fp4[1], 0.005208333333f);
}

// Every code's own value maps back to it, and a value just past a threshold moves one code.
TEST(Quant4CodeBooks, DecisionTreesPickTheNearestCode) {
  for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4}) {
    const std::array<float, 16>& book = code_book(type);
    auto nearest = [&](float x) { return type == Quant4Type::kNf4 ? nearest_nf4(x) : nearest_fp4(x); };
    for (int code = 0; code < 16; ++code) {
      if (type == Quant4Type::kFp4 && code == 8) continue;  // -0 compares equal to 0: code 0
      EXPECT_EQ(book[nearest(book[code])], book[code]) << quant4_type_name(type) << " code " << code;
    }
    std::mt19937 generator(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int i = 0; i < 20000; ++i) {
      const float x = uniform(generator);
      float best = std::numeric_limits<float>::infinity();
      for (float v : book) best = std::fmin(best, std::fabs(x - v));
      // A threshold written to 7 digits may sit a hair off the true midpoint.
      EXPECT_LE(std::fabs(x - book[nearest(x)]), best + 1e-6f) << x;
    }
  }
  EXPECT_EQ(nearest_nf4(0.5016634166240692f), 0b1100);  // on a threshold: the lower code
  EXPECT_EQ(nearest_nf4(0.5017f), 0b1101);
  EXPECT_EQ(nearest_fp4(-0.3f), 0b1100);  // sign bit + 1/3
  EXPECT_EQ(nearest_nf4(std::nanf("")), 0);
  EXPECT_EQ(nearest_fp4(std::nanf("")), 0);
}

TEST(Quant4CodeBooks, DynamicMapIsCreateDynamicMap) {
  const std::array<float, 256>& map = dynamic_map();
  for (int i = 0; i < 255; ++i) EXPECT_LT(map[i], map[i + 1]) << i;
  // Largest exponent: linspace(0.1, 1, 65) has step 0.9 / 64; its first and last means.
  EXPECT_EQ(map[0], -0.99296875f);
  EXPECT_EQ(map[254], 0.99296875f);
  EXPECT_EQ(map[255], 1.0f);
  EXPECT_EQ(map[127], 0.0f);
  // Smallest: 10**-6 * mean(0.1, 1) = 0.55e-6.
  EXPECT_FLOAT_EQ(map[128], 0.55e-6f);
  EXPECT_FLOAT_EQ(map[126], -0.55e-6f);
  EXPECT_EQ(nearest_in_map(map, 0.0f), 127);
  EXPECT_EQ(nearest_in_map(map, 1.0f), 255);
  EXPECT_EQ(nearest_in_map(map, -1.0f), 0);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(nearest_in_map(map, map[i]), i) << i;
}

// The map torch itself builds (tools/quant4_torch_reference.py run with torch 2.11 on the GPU
// machine), compared bit for bit: the nested absmax codes index it, so one ulp apart in an entry
// changes the dequantized weight of every block whose absmax falls on that code.
TEST(Quant4CodeBooks, DynamicMapEqualsTorchsBitForBit) {
  std::ifstream file(ZT_SOURCE_DIR "/tests/data/quant4/torch_dynamic_map.json");
  ASSERT_TRUE(file) << "tests/data/quant4/torch_dynamic_map.json";
  const nlohmann::json torch_map = nlohmann::json::parse(file);
  const auto& expected = torch_map.at("dynamic_map_bits");
  ASSERT_EQ(expected.size(), 256u);
  const std::array<float, 256>& map = dynamic_map();
  for (int i = 0; i < 256; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &map[i], sizeof bits);
    EXPECT_EQ(bits, expected[i].get<std::uint32_t>()) << "entry " << i << " (" << map[i] << ")";
  }
}

TEST(Quant4Blockwise, HandQuantizedBlock) {
  // absmax 2: scaled 1, -1, 0.25, 0 -> NF4 codes 15, 0, 10 (0.2035 < 0.25 <= 0.2920), 7.
  const std::vector<float> values = {2.0f, -2.0f, 0.5f, 0.0f};
  const Packed4 q = quantize_4bit(values, 64, Quant4Type::kNf4, "w");
  ASSERT_EQ(q.packed.size(), 2u);
  EXPECT_EQ(q.packed[0], 0xF0);
  EXPECT_EQ(q.packed[1], 0xA7);
  ASSERT_EQ(q.absmax.size(), 1u);
  EXPECT_EQ(q.absmax[0], 2.0f);
  const std::vector<float> back = dequantized(q, 4, 64, Quant4Type::kNf4);
  EXPECT_EQ(back[0], 2.0f);
  EXPECT_EQ(back[1], -2.0f);
  EXPECT_EQ(back[2], 0.24611230194568634f * 2.0f);
  EXPECT_EQ(back[3], 0.0f);
  // FP4: 1 -> 0b0011, -1 -> 0b1011, 0.25 -> 0b0111, 0 -> 0.
  const Packed4 f = quantize_4bit(values, 64, Quant4Type::kFp4, "w");
  EXPECT_EQ(f.packed[0], 0x3B);
  EXPECT_EQ(f.packed[1], 0x70);
}

TEST(Quant4Blockwise, ZeroBlockTakesTheNanPath) {
  const std::vector<float> values(64, 0.0f);
  const Packed4 q = quantize_4bit(values, 64, Quant4Type::kNf4, "w");
  EXPECT_EQ(q.absmax[0], 0.0f);
  for (std::uint8_t byte : q.packed) EXPECT_EQ(byte, 0x00);
  for (float v : dequantized(q, 64, 64, Quant4Type::kNf4)) {
    EXPECT_EQ(v, 0.0f);
    EXPECT_TRUE(std::signbit(v));  // -1 * 0
  }
}

TEST(Quant4Blockwise, OneHugeValueKeepsItselfAndZeroesTheRest) {
  std::vector<float> values = normal_values(64, 1, 1.0f);
  values[17] = 3.0e38f;
  const Packed4 q = quantize_4bit(values, 64, Quant4Type::kNf4, "w");
  const std::vector<float> back = dequantized(q, 64, 64, Quant4Type::kNf4);
  EXPECT_EQ(back[17], 3.0e38f);
  for (int i = 0; i < 64; ++i)
    if (i != 17) {
      EXPECT_EQ(back[i], 0.0f) << i;
    }
}

TEST(Quant4Blockwise, DenormalBlockOverflowsTheReciprocal) {
  // 1 / 1e-40 overflows to inf: +x -> +inf -> code 15, -x -> code 0, each dequantizing exactly.
  const float tiny = 1e-40f;
  const std::vector<float> values = {tiny, -tiny, tiny, -tiny};
  const Packed4 q = quantize_4bit(values, 64, Quant4Type::kNf4, "w");
  EXPECT_EQ(q.packed[0], 0xF0);
  const std::vector<float> back = dequantized(q, 4, 64, Quant4Type::kNf4);
  EXPECT_EQ(back[0], tiny);
  EXPECT_EQ(back[1], -tiny);
}

TEST(Quant4Blockwise, OddSizesPadWithTheCodeOfZero) {
  for (std::size_t n : {1u, 63u, 65u, 129u, 1001u}) {
    const std::vector<float> values = normal_values(n, static_cast<unsigned>(n));
    const Packed4 q = quantize_4bit(values, 64, Quant4Type::kNf4, "w");
    EXPECT_EQ(q.packed.size(), (n + 1) / 2);
    EXPECT_EQ(q.absmax.size(), (n + 63) / 64);
    if (n % 2 == 1) {
      EXPECT_EQ(q.packed.back() & 0x0F, 0b0111) << n;  // a zero in a nonzero block
    }
    const std::vector<float> back = dequantized(q, n, 64, Quant4Type::kNf4);
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_LE(std::fabs(back[i] - values[i]), 0.152f * q.absmax[i / 64]) << n << " " << i;
  }
}

TEST(Quant4Blockwise, RandomBlocksRoundTripWithinHalfAGap) {
  for (std::int64_t blocksize : {32, 64, 128, 4096}) {
    for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4}) {
      const std::vector<float> values = normal_values(8192, 3);
      const Packed4 q = quantize_4bit(values, blocksize, type, "w");
      const std::vector<float> back = dequantized(q, values.size(), blocksize, type);
      // Half the widest gap between neighbouring codes: NF4 (1 - 0.6962) / 2, FP4 (1 - 2/3) / 2.
      const float half_gap = type == Quant4Type::kNf4 ? 0.152f : 0.1667f;
      for (std::size_t i = 0; i < values.size(); ++i) {
        const float absmax = q.absmax[i / static_cast<std::size_t>(blocksize)];
        ASSERT_LE(std::fabs(back[i] - values[i]), half_gap * absmax) << i;
        // Each block's absmax element is exact.
        if (std::fabs(values[i]) == absmax) {
          EXPECT_EQ(std::fabs(back[i]), absmax);
        }
      }
    }
  }
}

// A tensor large enough to be quantized on several threads gives, block by block, what each
// block quantized alone gives.
TEST(Quant4Blockwise, ThreadedQuantizationEqualsBlockByBlock) {
  const std::vector<float> values = normal_values((std::size_t{1} << 21) + 131, 5);
  const Packed4 whole = quantize_4bit(values, 64, Quant4Type::kNf4, "w");
  ASSERT_EQ(whole.absmax.size(), (values.size() + 63) / 64);
  for (std::size_t block = 0; block < whole.absmax.size(); block += 997) {
    const std::size_t start = block * 64, count = std::min<std::size_t>(64, values.size() - start);
    const Packed4 alone =
        quantize_4bit(std::span<const float>(values).subspan(start, count), 64, Quant4Type::kNf4, "w");
    EXPECT_EQ(whole.absmax[block], alone.absmax[0]) << block;
    for (std::size_t byte = 0; byte < alone.packed.size(); ++byte)
      ASSERT_EQ(whole.packed[start / 2 + byte], alone.packed[byte]) << block;
  }
  const std::size_t last = whole.absmax.size() - 1;
  const Packed4 tail = quantize_4bit(std::span<const float>(values).subspan(last * 64), 64, Quant4Type::kNf4, "w");
  EXPECT_EQ(whole.absmax[last], tail.absmax[0]);
  EXPECT_EQ(whole.packed.back(), tail.packed.back());
}

TEST(Quant4Blockwise, NonFiniteWeightsAreRefusedByName) {
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    std::vector<float> values(10, 0.5f);
    values[6] = bad;
    try {
      quantize_4bit(values, 64, Quant4Type::kNf4, "model.layers.0.mlp.up_proj.weight");
      FAIL() << "a non-finite weight was quantized";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("model.layers.0.mlp.up_proj.weight"), std::string::npos) << message;
      EXPECT_NE(message.find(std::isnan(bad) ? "NaN" : "infinity"), std::string::npos) << message;
      EXPECT_NE(message.find("element 6"), std::string::npos) << message;
    }
  }
  EXPECT_THROW(quantize_4bit(std::vector<float>(8, 1.0f), 48, Quant4Type::kNf4, "w"), Error);
}

TEST(Quant4DoubleQuant, HandCheckedSmallCase) {
  // absmax {1, 3}: mean 2, centred {-1, 1}, one block of absmax 1: codes 0 (map[0] = -0.99296875
  // is the nearest) and 255 (1.0).
  const std::vector<float> absmax = {1.0f, 3.0f};
  const NestedAbsmax nested = compress_absmax(absmax);
  EXPECT_EQ(nested.offset, 2.0f);
  ASSERT_EQ(nested.absmax.size(), 1u);
  EXPECT_EQ(nested.absmax[0], 1.0f);
  ASSERT_EQ(nested.codes.size(), 2u);
  EXPECT_EQ(nested.codes[0], 0);
  EXPECT_EQ(nested.codes[1], 255);
  const std::vector<float> back =
      decompress_absmax(nested.codes, nested.absmax, nested.blocksize, nested.offset, dynamic_map());
  EXPECT_EQ(back[0], 2.0f - 0.99296875f);
  EXPECT_EQ(back[1], 3.0f);
}

TEST(Quant4DoubleQuant, RandomAbsmaxRoundTrip) {
  std::vector<float> weights = normal_values(64 * 1000 + 7, 11);
  const Packed4 q = quantize_4bit(weights, 64, Quant4Type::kNf4, "w");
  const NestedAbsmax nested = compress_absmax(q.absmax);
  EXPECT_EQ(nested.codes.size(), q.absmax.size());
  EXPECT_EQ(nested.absmax.size(), (q.absmax.size() + 255) / 256);
  const std::vector<float> back =
      decompress_absmax(nested.codes, nested.absmax, nested.blocksize, nested.offset, dynamic_map());
  for (std::size_t i = 0; i < back.size(); ++i) {
    // The top decade of the map has codes 0.9 / 64 apart: half of that times the block's scale.
    ASSERT_LE(std::fabs(back[i] - q.absmax[i]), 0.0071f * nested.absmax[i / 256] + 1e-7f) << i;
  }
}

}  // namespace
}  // namespace zt::ops::quant4
