// optimizer_index.json read on its own, before any rank file: what the trainer writes, and
// damaged indexes refused by name, including numbers C++ cannot hold as written (found by
// fuzz/optimizer_index_fuzz).
#include <gtest/gtest.h>

#include <string>

#include "tests/common/op_test_util.h"
#include "train/checkpoint/optimizer_index.h"

namespace zt::train {
namespace {

using testing::error_of;
using testing::expect_mentions;

// An index of one parameter of `shape` held by two slices split at `split`.
std::string index_json(const std::string& step, const std::string& shape, const std::string& split,
                       const std::string& end) {
  const std::string slice = R"("file": "optimizer/rank-00000-of-00002.safetensors", "master": "w.master",
                               "exp_avg": "w.exp_avg", "exp_avg_sq": "w.exp_avg_sq")";
  return R"({"step": )" + step + R"(, "parameters": {"w": {"shape": )" + shape + R"(, "slices": [{"begin": )" + split +
         R"(, "end": )" + end + ", " + slice + R"(}, {"begin": 0, "end": )" + split + ", " + slice + "}]}}}";
}

TEST(OptimizerIndex, ReadsSlicesInOrder) {
  const OptimizerIndex index = parse_optimizer_index(index_json("3", "[4, 6]", "10", "24"), "optimizer_index.json");
  EXPECT_EQ(index.step, 3);
  const OptimizerStateEntry& w = index.parameters.at("w");
  EXPECT_EQ(w.shape, (std::vector<std::int64_t>{4, 6}));
  ASSERT_EQ(w.pieces.size(), 2u);
  EXPECT_EQ(w.pieces[0].begin, 0);
  EXPECT_EQ(w.pieces[1].begin, 10);
  EXPECT_EQ(w.pieces[1].end, 24);
}

TEST(OptimizerIndex, ImpossibleNumbersAreErrorsNamingTheIndex) {
  const char* file = "checkpoint-3/optimizer_index.json";
  expect_mentions(
      error_of([&] { parse_optimizer_index(index_json("3", "[4294967296, 4294967296, 4]", "1", "2"), file); }),
      {file, "damaged", "shape of 'w'"});
  expect_mentions(error_of([&] { parse_optimizer_index(index_json("3", "[-4, -6]", "10", "24"), file); }),
                  {"shape of 'w'", "negative"});
  expect_mentions(error_of([&] { parse_optimizer_index(index_json("3", "[4, 6]", "1e300", "24"), file); }),
                  {file, "integer", "1e+300"});
  expect_mentions(
      error_of([&] { parse_optimizer_index(index_json("18446744073709551615", "[4, 6]", "10", "24"), file); }),
      {file, "integer", "18446744073709551615"});
  expect_mentions(error_of([&] { parse_optimizer_index(index_json("-120", "[4, 6]", "10", "24"), file); }),
                  {file, "damaged", "step is -120"});
  expect_mentions(error_of([&] { parse_optimizer_index(index_json("3", "[4, 6]", "10", "25"), file); }),
                  {"do not cover it exactly once"});
  expect_mentions(error_of([&] { parse_optimizer_index("[1, 2]", file); }), {file, "not valid JSON"});
}

}  // namespace
}  // namespace zt::train
