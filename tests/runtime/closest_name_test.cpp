// "Did you mean": a likely typo gets the name it misspells; a name far from all gets none.
#include "runtime/terminal/closest_name.h"

#include <gtest/gtest.h>

namespace zt {
namespace {

TEST(ClosestName, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("zero_optimization", "zero_optimizaton"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(ClosestName, ATypoGetsTheNearestKnownName) {
  const std::vector<std::string> known = {"zero_optimization", "optimizer", "scheduler", "fp16", "bf16"};
  EXPECT_EQ(closest_name("zero_optimizaton", known), "zero_optimization");
  EXPECT_EQ(closest_name("optimzer", known), "optimizer");
  EXPECT_EQ(closest_name("bf61", known), "bf16");
}

TEST(ClosestName, ANameFarFromEveryOneOrKnownGetsNone) {
  const std::vector<std::string> known = {"zero_optimization", "optimizer", "scheduler"};
  EXPECT_EQ(closest_name("my_custom_note", known), std::nullopt);
  EXPECT_EQ(closest_name("xyz", known), std::nullopt);
  EXPECT_EQ(closest_name("optimizer", known), std::nullopt);
}

}  // namespace
}  // namespace zt
