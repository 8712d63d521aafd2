#include <gtest/gtest.h>

#include <cmath>

#include "runtime/generator.h"
#include "runtime/philox.h"

namespace zt {
namespace {

// Known-answer vectors of Philox 4x32-10 published with the Random123 library.
TEST(Philox, MatchesPublishedKnownAnswers) {
  philox::Block zero = philox::philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(zero.lane[0], 0x6627e8d5u);
  EXPECT_EQ(zero.lane[1], 0xe169c58du);
  EXPECT_EQ(zero.lane[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.lane[3], 0x9b00dbd8u);
  philox::Block ones = philox::philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  EXPECT_EQ(ones.lane[0], 0x408f276du);
  EXPECT_EQ(ones.lane[1], 0x41c83b0eu);
  EXPECT_EQ(ones.lane[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.lane[3], 0x6d5451fdu);
  philox::Block pi = philox::philox4x32_10(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0);
  EXPECT_EQ(pi.lane[0], 0xd16cfe09u);
  EXPECT_EQ(pi.lane[1], 0x94fdccebu);
  EXPECT_EQ(pi.lane[2], 0x5001e420u);
  EXPECT_EQ(pi.lane[3], 0x24126ea1u);
}

TEST(Philox, OffsetsContinueAStream) {
  // Drawing 10 then continuing at offset + blocks_for(10) equals drawing 12 at once, from 12 on.
  const std::uint64_t seed = 1234, offset = 77;
  std::uint64_t next = offset + philox::blocks_for(10);
  for (std::uint64_t i = 0; i < 8; ++i)
    EXPECT_EQ(philox::uniform(seed, next, i), philox::uniform(seed, offset, 12 + i));
  EXPECT_NE(philox::uniform(seed, offset, 0), philox::uniform(seed + 1, offset, 0));
}

TEST(Philox, UniformAndNormalHaveTheRightMoments) {
  const int n = 200000;
  double sum_u = 0, sum_n = 0, sum_n2 = 0;
  float min_u = 1, max_u = 0;
  for (int i = 0; i < n; ++i) {
    float u = philox::uniform(42, 0, i);
    float z = philox::normal(42, 0, i);
    min_u = std::min(min_u, u);
    max_u = std::max(max_u, u);
    sum_u += u;
    sum_n += z;
    sum_n2 += static_cast<double>(z) * z;
    ASSERT_TRUE(std::isfinite(z));
  }
  EXPECT_GE(min_u, 0.0f);
  EXPECT_LT(max_u, 1.0f);
  EXPECT_NEAR(sum_u / n, 0.5, 0.005);
  EXPECT_NEAR(sum_n / n, 0.0, 0.01);
  EXPECT_NEAR(sum_n2 / n, 1.0, 0.02);
}

}  // namespace
}  // namespace zt

namespace zt {
namespace {

TEST(Generator, ReservesConsecutiveStretchesOfTheStream) {
  Generator generator(11);
  GeneratorState first = generator.reserve(10);
  GeneratorState second = generator.reserve(1);
  EXPECT_EQ(first.seed, 11u);
  EXPECT_EQ(first.offset, 0u);
  EXPECT_EQ(second.offset, philox::blocks_for(10));
  generator.set_state(first);
  EXPECT_EQ(generator.reserve(10), first);
  generator.manual_seed(3);
  EXPECT_EQ(generator.state(), (GeneratorState{3, 0}));
  EXPECT_EQ(&default_generator(), &default_generator());
}

}  // namespace
}  // namespace zt
