// A step plan sent to the other tensor-parallel ranks comes back as it was: every request's
// prompt and options exactly (a 64-bit seed, doubles to the last bit), and the cancelled ids.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "serve/step_plan.h"

namespace zt::serve {
namespace {

TEST(StepPlan, EncodesEveryValueExactly) {
  StepPlan plan;
  models::GenerationOptions options;
  options.max_new_tokens = 77;
  options.min_new_tokens = 3;
  options.do_sample = true;
  options.temperature = std::nextafter(0.7, 1.0);
  options.top_k = 0;
  options.top_p = 1.0 / 3.0;
  options.min_p = 0.05;
  options.repetition_penalty = 1.1;
  options.seed = std::numeric_limits<std::uint64_t>::max() - 12345;
  options.eos_token_ids = {151643, 151645};
  plan.added.emplace_back(41, infer::GenerationRequest{{1, 2, 151935}, options});
  plan.added.emplace_back(42, infer::GenerationRequest{{9}, models::GenerationOptions{}});
  plan.cancelled = {3, 40};

  const StepPlan back = decode_step_plan(encode_step_plan(plan));
  ASSERT_EQ(back.added.size(), 2u);
  EXPECT_EQ(back.added[0].first, 41u);
  EXPECT_EQ(back.added[0].second.prompt, (std::vector<std::int64_t>{1, 2, 151935}));
  const models::GenerationOptions& o = back.added[0].second.options;
  EXPECT_EQ(o.max_new_tokens, 77);
  EXPECT_EQ(o.min_new_tokens, 3);
  EXPECT_TRUE(o.do_sample);
  EXPECT_EQ(o.temperature, options.temperature);
  EXPECT_EQ(o.top_k, 0);
  EXPECT_EQ(o.top_p, options.top_p);
  EXPECT_EQ(o.min_p, options.min_p);
  EXPECT_EQ(o.repetition_penalty, 1.1);
  EXPECT_EQ(o.seed, options.seed);
  EXPECT_EQ(o.eos_token_ids, options.eos_token_ids);
  EXPECT_FALSE(back.added[1].second.options.do_sample);
  EXPECT_EQ(back.cancelled, (std::vector<std::size_t>{3, 40}));
  EXPECT_TRUE(decode_step_plan(encode_step_plan(StepPlan{})).empty());
}

}  // namespace
}  // namespace zt::serve
