// alpaca, ShareGPT and plain-text data in JSON arrays and JSON Lines, and errors that point
// at the sample (and line) that is wrong, a sample of another format included.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "train/data/dataset.h"

namespace zt::train {
namespace {

class DatasetFile : public testing::FolderTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
};

TEST_F(DatasetFile, AlpacaWithInputSystemAndHistory) {
  Dataset data = load_dataset(write("a.json", R"([
    {"instruction": "Translate", "input": "猫", "output": "cat"},
    {"instruction": "Go on", "output": "ok", "system": "Be brief.", "history": [["hi", "hello"]]}])"));
  EXPECT_EQ(data.format, DataFormat::kAlpaca);
  ASSERT_EQ(data.samples.size(), 2u);
  const auto& first = data.samples[0].messages;
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].role, "user");
  EXPECT_EQ(first[0].content, "Translate\n猫");
  EXPECT_EQ(first[1].content, "cat");
  const auto& second = data.samples[1].messages;
  ASSERT_EQ(second.size(), 5u);
  EXPECT_EQ(second[0].role, "system");
  EXPECT_EQ(second[1].content, "hi");
  EXPECT_EQ(second[2].role, "assistant");
  EXPECT_EQ(second[3].content, "Go on");
}

TEST_F(DatasetFile, ShareGptBothSpellingsAsJsonLines) {
  Dataset data = load_dataset(write(
      "s.jsonl",
      "{\"conversations\": [{\"from\": \"system\", \"value\": \"S\"}, {\"from\": \"human\", \"value\": \"q\"}, "
      "{\"from\": \"gpt\", \"value\": \"a\"}]}\n\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"q2\"}, {\"role\": \"assistant\", \"content\": \"a2\"}]}\n"));
  EXPECT_EQ(data.format, DataFormat::kShareGpt);
  ASSERT_EQ(data.samples.size(), 2u);
  EXPECT_EQ(data.samples[0].messages[0].role, "system");
  EXPECT_EQ(data.samples[0].messages[2].content, "a");
  EXPECT_EQ(data.samples[1].messages[1].role, "assistant");
}

TEST_F(DatasetFile, PlainTextAsJsonArrayAndJsonLines) {
  Dataset data = load_dataset(write("t.json", R"([{"text": "Once upon a time"}, {"text": "猫"}])"));
  EXPECT_EQ(data.format, DataFormat::kText);
  EXPECT_EQ(data.texts, (std::vector<std::string>{"Once upon a time", "猫"}));
  EXPECT_TRUE(data.samples.empty());
  EXPECT_EQ(data.size(), 2u);

  data = load_dataset(write("t.jsonl", "{\"text\": \"a\"}\n\n{\"text\": \"b\", \"meta\": 1}\n"));
  EXPECT_EQ(data.format, DataFormat::kText);
  EXPECT_EQ(data.texts, (std::vector<std::string>{"a", "b"}));

  std::string path = write("n.jsonl", "{\"text\": \"a\"}\n{\"text\": 7}\n");
  std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + ": sample 1 (line 2): \"text\" must be a string"), std::string::npos) << msg;
}

TEST_F(DatasetFile, MixedFormatsAreRefusedAtTheFirstOddSample) {
  std::string path = write("mixed.jsonl",
                           "{\"instruction\": \"x\", \"output\": \"y\"}\n"
                           "{\"instruction\": \"x2\", \"output\": \"y2\"}\n\n"
                           "{\"text\": \"plain\"}\n");
  std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + ": sample 2 (line 4) is plain text (\"text\") but the file's first sample is alpaca"),
            std::string::npos)
      << msg;

  path = write("mixed.json", R"([{"text": "a"}, {"messages": [{"role": "user", "content": "q"}]}])");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + ": sample 1 is ShareGPT"), std::string::npos) << msg;
  EXPECT_NE(msg.find("first sample is plain text"), std::string::npos) << msg;

  path = write("unknown.json", R"([{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]},
                                   {"prompt": "p"}])");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + ": sample 1 has none of the keys that name a format"), std::string::npos) << msg;
}

TEST_F(DatasetFile, ErrorsNameTheFileSampleAndLine) {
  std::string path = write("bad.jsonl", "{\"instruction\": \"x\", \"output\": \"y\"}\n{\"instruction\": \"x\"}\n");
  std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + ": sample 1 (line 2) has no \"output\""), std::string::npos) << msg;

  path = write("broken.jsonl", "{\"instruction\": \"x\", \"output\": \"y\"}\n{oops\n");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("line 2 is not valid JSON"), std::string::npos) << msg;

  path =
      write("order.json", R"([{"conversations": [{"from": "gpt", "value": "a"}, {"from": "human", "value": "q"}]}])");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("turn 0 is from assistant but should be from user"), std::string::npos) << msg;

  path = write("who.json", R"([{"conversations": [{"from": "bot", "value": "a"}]}])");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("unknown speaker \"bot\""), std::string::npos) << msg;

  path = write("what.json", R"([{"prompt": "p", "completion": "c"}])");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("cannot tell the data format"), std::string::npos) << msg;

  path = write("empty.json", "[]");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("holds no samples"), std::string::npos) << msg;

  msg = testing::error_of([&] { load_dataset((dir_ / "missing.json").string()); });
  EXPECT_NE(msg.find("cannot read the data file"), std::string::npos) << msg;

  path = write("type.json", R"([{"instruction": 3, "output": "y"}])");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("\"instruction\" must be a string"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt::train
