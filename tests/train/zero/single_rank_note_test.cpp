// The single-rank note (train/zero/single_rank_note.h) says that a 16-bit
// data_types.grad_accum_dtype changes nothing on one rank, only under stages 1 and 2 without
// optimizer offload (the config reader warns of the other cases).
#include <gtest/gtest.h>

#include "train/zero/single_rank_note.h"

namespace zt::train {
namespace {

constexpr const char* kNoEffect = "data_types.grad_accum_dtype has no effect";

TEST(SingleRankNote, SaysA16BitGradAccumDtypeHasNoEffectUnderStages1And2) {
  for (int stage : {1, 2})
    for (const bool engine : {false, true}) {
      const std::string note =
          single_rank_zero_note({.stage = stage, .zero_engine = engine, .grad_accum_16bit = true}).value_or("");
      EXPECT_NE(note.find(std::string(kNoEffect) +
                          ": with nothing partitioned the gradients accumulate in fp32. ZeRO partitions"),
                std::string::npos)
          << note;
      EXPECT_EQ(single_rank_zero_note({.stage = stage, .zero_engine = engine}).value_or("").find(kNoEffect),
                std::string::npos);
    }
  EXPECT_EQ(single_rank_zero_note({.stage = 3, .grad_accum_16bit = true}).value_or("").find(kNoEffect),
            std::string::npos);
  EXPECT_EQ(single_rank_zero_note({.stage = 2, .offload = true, .grad_accum_16bit = true}).value_or("").find(kNoEffect),
            std::string::npos);
  EXPECT_FALSE(single_rank_zero_note({.stage = 0, .grad_accum_16bit = true}).has_value());
}

}  // namespace
}  // namespace zt::train
