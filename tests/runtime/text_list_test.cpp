// Comma lists as flags and data_files spell them, and lists joined back for messages.
#include "runtime/terminal/text_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace zt {
namespace {

TEST(TextList, SplitTrimsSpacesAndTabsAndDropsEmptyItems) {
  EXPECT_EQ(split_comma_list("a, b,,c "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_comma_list("\ttrain.json ,\teval.json\t"), (std::vector<std::string>{"train.json", "eval.json"}));
  EXPECT_EQ(split_comma_list("one file.json"), (std::vector<std::string>{"one file.json"}));
  EXPECT_TRUE(split_comma_list("").empty());
  EXPECT_TRUE(split_comma_list(" , ,\t").empty());
}

TEST(TextList, JoinSeparatesWithACommaAndASpace) {
  EXPECT_EQ(join_list({"cosine", "linear"}), "cosine, linear");
  EXPECT_EQ(join_list({"one"}), "one");
  EXPECT_EQ(join_list({}), "");
  EXPECT_EQ(join_list(split_comma_list("a,b")), "a, b");
}

}  // namespace
}  // namespace zt
