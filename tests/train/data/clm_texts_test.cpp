// run_clm.py's data files: a CSV's "text" (or first) column with quoted commas, quotes and line
// breaks, errors with the file and line; .txt lines with or without their breaks; JSON's
// "text" or first field; the validation split's rounding; the block grouping over shards and
// batches; the default block size.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "train/data/clm_texts.h"
#include "train/data/pretraining_blocks.h"

namespace zt::train {
namespace {

TEST(ClmCsv, QuotedFieldsKeepCommasQuotesAndLineBreaks) {
  const Dataset data = clm_csv_texts(
      "id,text\n1,plain words\n2,\"a, b and c\"\r\n3,\"she said \"\"hi\"\"\"\n\n4,\"two\nlines\"\n", "d.csv");
  ASSERT_EQ(data.format, DataFormat::kText);
  EXPECT_EQ(data.texts, (std::vector<std::string>{"plain words", "a, b and c", "she said \"hi\"", "two\nlines"}));
}

TEST(ClmCsv, WithoutATextColumnTheFirstIsRead) {
  const Dataset data = clm_csv_texts(
      "\xEF\xBB\xBF"
      "body,label\n\"first, text\",1\nsecond,0",
      "d.csv");
  EXPECT_EQ(data.texts, (std::vector<std::string>{"first, text", "second"}));
}

TEST(ClmCsv, ErrorsNameTheFileAndLine) {
  // The record of line 3 is opened there and never closed.
  EXPECT_NE(testing::error_of([] { clm_csv_texts("text\nok\n\"open\nstill open", "d.csv"); }).find("d.csv:3:"),
            std::string::npos);
  const std::string extra = testing::error_of([] { clm_csv_texts("text\nfine\na,b\n", "d.csv"); });
  EXPECT_NE(extra.find("d.csv:3: 2 fields, but the header names 1 columns"), std::string::npos) << extra;
  const std::string empty = testing::error_of([] { clm_csv_texts("id,text\n1,x\n2,\n", "d.csv"); });
  EXPECT_NE(empty.find("d.csv:3: column 2 (\"text\") is empty"), std::string::npos) << empty;
  const std::string after = testing::error_of([] { clm_csv_texts("text\n\"a\"b\n", "d.csv"); });
  EXPECT_NE(after.find("d.csv:2: text after a quoted field's closing quote"), std::string::npos) << after;
  // A quoted field spanning lines moves the line count on.
  const std::string later = testing::error_of([] { clm_csv_texts("text\n\"a\nb\"\nNA\n", "d.csv"); });
  EXPECT_NE(later.find("d.csv:4:"), std::string::npos) << later;
}

TEST(ClmTextLines, KeepLinebreaksAsTheDatasetsTextLoader) {
  EXPECT_EQ(clm_text_lines("a\r\n\nb\rc", "t.txt", true).texts, (std::vector<std::string>{"a\n", "\n", "b\n", "c"}));
  EXPECT_EQ(clm_text_lines("a\r\n\nb\n", "t.txt", false).texts, (std::vector<std::string>{"a", "", "b"}));
}

TEST(ClmSplit, FirstPercentEvaluatesRoundedHalfToEven) {
  Dataset data;
  data.format = DataFormat::kText;
  for (int i = 0; i < 50; ++i) data.texts.push_back(std::to_string(i));
  // 5 % of 50 is 2.5, which Python's round() takes to 2.
  auto [train, eval] = split_clm_validation(data, 5);
  EXPECT_EQ(eval.texts, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(train.texts.size(), 48u);
  EXPECT_EQ(train.texts.front(), "2");
  data.texts.resize(70);  // 3.5 rounds to 4
  for (int i = 50; i < 70; ++i) data.texts[static_cast<std::size_t>(i)] = std::to_string(i);
  EXPECT_EQ(split_clm_validation(data, 5).second.texts.size(), 4u);
}

TEST(ClmGroups, BatchesOfAThousandWithinContiguousShards) {
  using Groups = std::vector<std::pair<std::size_t, std::size_t>>;
  EXPECT_EQ(run_clm_groups(2500, 1), (Groups{{0, 1000}, {1000, 2000}, {2000, 2500}}));
  // datasets' shard(contiguous=True): 1251 and 1250 rows.
  EXPECT_EQ(run_clm_groups(2501, 2), (Groups{{0, 1000}, {1000, 1251}, {1251, 2251}, {2251, 2501}}));
  EXPECT_EQ(run_clm_groups(3, 8), (Groups{{0, 1}, {1, 2}, {2, 3}}));  // num_proc capped at the rows
}

TEST(ClmBlockSize, RunClmDefaults) {
  std::string note;
  EXPECT_EQ(run_clm_block_size(std::nullopt, 131072, 32768, note), 1024);  // Qwen2.5: min(1024, positions)
  EXPECT_NE(note.find("1024"), std::string::npos);
  note.clear();
  EXPECT_EQ(run_clm_block_size(std::nullopt, 512, 32768, note), 512);  // model_max_length when it fits
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(run_clm_block_size(std::nullopt, std::nullopt, 256, note), 256);  // unset: unlimited
  EXPECT_EQ(run_clm_block_size(64, 512, 32768, note), 64);
  EXPECT_EQ(run_clm_block_size(4096, 512, 32768, note), 512);  // capped at model_max_length
}

}  // namespace
}  // namespace zt::train
