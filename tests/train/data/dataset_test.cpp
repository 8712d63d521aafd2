// alpaca, ShareGPT and plain-text data in JSON arrays and JSON Lines, and errors that point
// at the sample (and line) that is wrong, a sample of another format included.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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

// LLaMA-Factory's alpaca converter joins the prompt and query columns it finds non-empty, so a
// null instruction leaves the input as the prompt; a missing one is refused.
TEST_F(DatasetFile, ANullInstructionLeavesTheInputAsThePrompt) {
  Dataset data = load_dataset(write("n.json", R"([
    {"instruction": "Translate", "input": "cat", "output": "chat"},
    {"instruction": null, "input": "Name a colour.", "output": "Blue."}])"));
  ASSERT_EQ(data.samples.size(), 2u);
  EXPECT_EQ(data.samples[1].messages.at(0).content, "Name a colour.");
  const std::string missing = testing::error_of(
      [&] { load_dataset(write("m.json", R"([{"instruction": "a", "output": "b"}, {"output": "c"}])")); });
  EXPECT_NE(missing.find("sample 1 has none of the keys"), std::string::npos) << missing;
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

// LLaMA-Factory's sharegpt converter takes a system turn that opens the conversation as the
// system prompt and reads the "system" column only when the turns do not open with one.
TEST_F(DatasetFile, ASystemTurnFirstIsTheSystemPromptOverTheSystemKey) {
  Dataset data = load_dataset(write(
      "s.jsonl",
      R"({"system": "Column", "conversations": [{"from": "system", "value": "Turn"}, {"from": "human", "value": "q"}, )"
      R"({"from": "gpt", "value": "a"}]})"
      "\n"
      R"({"system": "Column", "messages": [{"role": "system", "content": "Turn"}, {"role": "user", "content": "q"}, )"
      R"({"role": "assistant", "content": "a"}]})"
      "\n"));
  ASSERT_EQ(data.samples.size(), 2u);
  for (const Conversation& sample : data.samples) {
    ASSERT_EQ(sample.messages.size(), 3u);
    EXPECT_EQ(sample.messages[0].role, "system");
    EXPECT_EQ(sample.messages[0].content, "Turn");
  }
}

// ChatGLM3's finetune_demo data: "conversations" of role/content turns (its README's sample),
// with its per-message "loss" where it is the default; other losses and its own tool turn refused.
TEST_F(DatasetFile, ChatGlm3FinetuneDemoConversations) {
  Dataset data = load_dataset(
      write("glm3.jsonl",
            "{\"conversations\": [{\"role\": \"user\", \"content\": \"Type#skirt*skirt length#skirt\"}, "
            "{\"role\": \"assistant\", \"content\": \"This is versatile Fashionable fairy skirt.\"} ]}\n"
            "{\"conversations\": [{\"role\": \"system\", \"content\": \"S\", \"loss\": false}, {\"role\": \"user\", "
            "\"content\": \"q\"}, {\"role\": \"assistant\", \"content\": \"a\", \"loss\": true}]}\n"));
  EXPECT_EQ(data.format, DataFormat::kShareGpt);
  ASSERT_EQ(data.samples.size(), 2u);
  EXPECT_EQ(data.samples[0].messages[1].role, "assistant");
  EXPECT_EQ(data.samples[0].messages[1].content, "This is versatile Fashionable fairy skirt.");
  EXPECT_EQ(data.samples[1].messages[0].role, "system");
  std::string msg = testing::error_of([&] {
    load_dataset(write("loss.json", R"([{"conversations": [{"role": "user", "content": "q", "loss": true},
                                          {"role": "assistant", "content": "a"}]}])"));
  });
  EXPECT_NE(msg.find("turn 0: \"loss\": true on a user message: zerotune trains every assistant message"),
            std::string::npos)
      << msg;
  msg = testing::error_of([&] {
    load_dataset(write("tool.json", R"([{"conversations": [{"role": "user", "content": "weather?"},
      {"role": "assistant", "content": "Let me look."},
      {"role": "tool", "name": "get_weather", "parameters": {"city": "Beijing"}, "observation": {"temp": 20}},
      {"role": "assistant", "content": "20 degrees."}]}])"));
  });
  EXPECT_NE(msg.find("a tool turn with \"name\", \"parameters\" and \"observation\" (ChatGLM3's finetune_demo) "
                     "is not read"),
            std::string::npos)
      << msg;
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

// LLaMA-Factory's wiki_demo.txt (its pt demo, "columns": {"prompt": "text"}): a text per line,
// as the datasets library's text loader reads it; empty lines too, line breaks dropped.
TEST_F(DatasetFile, TxtFilesHoldATextPerLine) {
  Dataset data = load_dataset(write("wiki_demo.txt",
                                    "Anarchism is a political philosophy and movement that is sceptical of authority.\n"
                                    "Autism is a neurodevelopmental disorder.\r\n\nAlbedo\r"));
  EXPECT_EQ(data.format, DataFormat::kText);
  EXPECT_EQ(data.texts, (std::vector<std::string>{
                            "Anarchism is a political philosophy and movement that is sceptical of authority.",
                            "Autism is a neurodevelopmental disorder.", "", "Albedo"}));
  const std::string empty = write("empty.txt", "");
  EXPECT_NE(testing::error_of([&] { load_dataset(empty); }).find(empty + " holds no text"), std::string::npos);
  // Kinds of data file zerotune does not read are named, not parsed as JSON.
  const std::string csv = write("data.csv", "instruction,output\nhi,hello\n");
  const std::string msg = testing::error_of([&] { load_dataset(csv); });
  EXPECT_NE(msg.find(csv + " is a csv file; zerotune reads data as JSON, JSON Lines or plain text (.txt"),
            std::string::npos)
      << msg;
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
  EXPECT_NE(msg.find(path + ":2:2: not valid JSON: syntax error while parsing object key"), std::string::npos) << msg;

  // A broken JSON array: the file, line and column of the fault, not nlohmann's raw text.
  path = write("broken.json",
               "[\n  {\"instruction\": \"a\", \"output\": \"b\"},\n  {\"instruction\": \"c\" \"output\": \"d\"}\n]\n");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_EQ(msg.rfind(path + ":3:30: not valid JSON: syntax error while parsing object", 0), 0u) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;

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

// Editors on Windows (Notepad, PowerShell's UTF-8 output) start a file with a byte order mark:
// it is no text, so a JSON array after it is still an array, not one JSON Lines record.
TEST_F(DatasetFile, ByteOrderMarkBeforeAJsonArrayIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  Dataset data = load_dataset(write("one_line.json", bom + R"([{"instruction": "a", "output": "b"}])"));
  ASSERT_EQ(data.samples.size(), 1u);
  EXPECT_EQ(data.samples[0].messages[1].content, "b");

  data = load_dataset(write("indented.json", bom + "[\n  {\"instruction\": \"a\", \"output\": \"b\"},\n  "
                                                   "{\"instruction\": \"c\", \"output\": \"d\"}\n]\n"));
  ASSERT_EQ(data.samples.size(), 2u);
  EXPECT_EQ(data.samples[1].messages[0].content, "c");
}

// A content part of a type zerotune does not read but that is no image, video or audio (the
// Responses API's "input_text") is named as such, not counted as media.
TEST_F(DatasetFile, UnknownTextPartTypeIsNotCalledMedia) {
  const std::string path =
      write("parts.jsonl", R"({"messages": [{"role": "user", "content": [{"type": )"
                           R"("input_text", "text": "Hi"}]}, {"role": "assistant", "content": "Hello"}]})"
                           "\n");
  const std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_EQ(msg.find("images, videos or audio"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a content part of type \"input_text\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("it reads \"text\" parts"), std::string::npos) << msg;

  const std::string image = write("image.jsonl", R"({"messages": [{"role": "user", "content": [{"type": )"
                                                 R"("input_image", "image_url": "x.png"}]}, {"role": "assistant", )"
                                                 R"("content": "A cat"}]})"
                                                 "\n");
  EXPECT_NE(testing::error_of([&] { load_dataset(image); }).find("samples carry images, videos or audio"),
            std::string::npos);
}

// One pretty-printed object is neither an array of samples nor JSON Lines: the error says so,
// where reading its first line as a record said the JSON ended early.
TEST_F(DatasetFile, OneObjectOverSeveralLinesIsNamedAsSuch) {
  std::string path = write("object.json", "{\n  \"instruction\": \"a\",\n  \"output\": \"b\"\n}\n");
  std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + " holds one JSON object over several lines"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[{...}, {...}]"), std::string::npos) << msg;

  path = write("field.json", "{\"version\": 1,\n \"data\": [{\"instruction\": \"a\", \"output\": \"b\"}]}\n");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("its \"data\" list"), std::string::npos) << msg;

  // On one line it is one JSON Lines record.
  EXPECT_EQ(load_dataset(write("line.json", R"({"instruction": "a", "output": "b"})")).samples.size(), 1u);
}

const std::filesystem::path kLlamaFactory = std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/training/llamafactory";

TEST(LlamaFactoryData, AlpacaDemo) {
  const Dataset data = load_dataset((kLlamaFactory / "alpaca_en_demo.json").string());
  ASSERT_EQ(data.samples.size(), 2u);
  ASSERT_EQ(data.samples[0].messages.size(), 2u);
  EXPECT_EQ(data.samples[0].messages[0].content,
            "Transform the following sentence using a synonym: The car sped quickly.");
  EXPECT_EQ(data.samples[0].messages[1].content, "The car accelerated rapidly.");
  EXPECT_EQ(data.samples[1].messages[0].content,
            "Given the parameters of a triangle, find out its perimeter.\nSide 1 = 4\nSide 2 = 6\nSide 3 = 8");
  EXPECT_TRUE(data.samples[1].tools.empty());
}

TEST(LlamaFactoryData, GlaiveToolCallsBecomeCallsResultsAndOpenAiTools) {
  const std::string path = (kLlamaFactory / "glaive_toolcall_en_demo.json").string();
  const Dataset data = load_dataset(path);
  ASSERT_EQ(data.samples.size(), 2u);
  EXPECT_TRUE(data.samples[0].tools.empty());  // "tools": "[]"
  const Conversation& tools = data.samples[1];
  EXPECT_EQ(tools.source, path + ": sample 1");
  ASSERT_EQ(tools.tools.size(), 2u);
  // Bare functions are wrapped as OpenAI's tools list holds them, their keys in order.
  const auto tool = nlohmann::ordered_json::parse(tools.tools[0]);
  EXPECT_EQ(tool["type"], "function");
  EXPECT_EQ(tool["function"].begin().key(), "name");
  EXPECT_EQ(tool["function"]["name"], "calculate_area");
  ASSERT_EQ(tools.messages.size(), 12u);
  const models::ChatMessage& call = tools.messages[1];
  EXPECT_EQ(call.role, "assistant");
  EXPECT_EQ(call.content, "");
  ASSERT_EQ(call.tool_calls.size(), 1u);
  EXPECT_EQ(call.tool_calls[0].name, "calculate_area");
  EXPECT_EQ(call.tool_calls[0].arguments, R"({"shape":"rectangle","dimensions":[5,3]})");
  EXPECT_EQ(tools.messages[2].role, "tool");
  EXPECT_EQ(tools.messages[2].content, R"({"area": 15})");
  EXPECT_EQ(tools.messages[3].role, "assistant");
  EXPECT_TRUE(tools.messages[3].tool_calls.empty());
}

TEST(LlamaFactoryData, MultimodalDemoIsRefusedNamingFileCountAndKey) {
  const std::string path = (kLlamaFactory / "mllm_demo.json").string();
  const std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + ": 2 of 2 samples carry images, videos or audio (\"images\" in 2, the first sample 0)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("zerotune trains on text only"), std::string::npos) << msg;
}

// KTO data marks each answer desirable or not; read as SFT data its undesirable answers would
// be trained like the others, so the file is refused, saying what to do.
TEST(LlamaFactoryData, KtoDemoIsRefusedAsSftData) {
  const std::string path = (kLlamaFactory / "kto_en_demo.json").string();
  const std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + " holds KTO data"), std::string::npos) << msg;
  testing::expect_mentions(msg, {"boolean \"label\"", "does not train KTO", "drop the key", "--stage dpo"});
}

// TRL's prompt-completion layout is not one zerotune reads; the refusal says how to carry it over.
TEST_F(DatasetFile, TrlPromptCompletionIsRefusedWithTheLayoutsThatCarryIt) {
  const std::string msg = testing::error_of([&] {
    load_dataset(write("pc.jsonl", R"({"prompt": "The sky is", "completion": " blue."})"
                                   "\n"));
  });
  testing::expect_mentions(msg, {"pc.jsonl: cannot tell the data format", "TRL's prompt-completion layout",
                                 "\"instruction\"", "\"output\""});
}

TEST_F(DatasetFile, OpenAiMessagesWithTextPartsToolCallsAndReasoning) {
  const Dataset data = load_dataset(write(
      "openai.jsonl",
      R"({"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}], "messages": [)"
      R"({"role": "system", "content": "S"},)"
      R"({"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"}]},)"
      R"({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},)"
      R"({"role": "tool", "tool_call_id": "c1", "content": "17"},)"
      R"({"role": "tool", "tool_call_id": "c2", "content": "18"},)"
      R"({"role": "assistant", "content": "It is 17.", "reasoning_content": "The tool said so."}]})"
      "\n"));
  ASSERT_EQ(data.samples.size(), 1u);
  const Conversation& c = data.samples[0];
  ASSERT_EQ(c.tools.size(), 1u);
  ASSERT_EQ(c.messages.size(), 6u);
  EXPECT_EQ(c.messages[1].content, "Weather in Paris?");
  ASSERT_EQ(c.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(c.messages[2].tool_calls[0].arguments, R"({"city":"Paris","days":2})");
  EXPECT_EQ(c.messages[3].role, "tool");
  EXPECT_EQ(c.messages[4].content, "18");
  EXPECT_EQ(c.messages[5].reasoning_content, "The tool said so.");
  EXPECT_FALSE(c.messages[2].reasoning_content.has_value());
}

// LLaMA-Factory v1's messages, as its converters write them (alpaca_converter,
// sharegpt_converter): content as {"type", "value"} parts, a loss_weight on each message,
// tool calls as "tool_call" parts holding a call's JSON.
TEST_F(DatasetFile, LlamaFactoryV1MessagePartsAndLossWeights) {
  const Dataset data = load_dataset(write(
      "v1.jsonl",
      R"j({"messages": [{"role": "system", "content": [{"type": "text", "value": "You are helpful."}], "loss_weight": 0.0}, )j"
      R"j({"role": "user", "content": [{"type": "text", "value": "Give three tips "}, {"type": "text", "value": "for staying healthy."}], "loss_weight": 0.0}, )j"
      R"j({"role": "assistant", "content": [{"type": "text", "value": "1. Eat well."}], "loss_weight": 1.0}]})j"
      "\n"
      R"j({"messages": [{"role": "user", "content": [{"type": "text", "value": "Area of a 5 by 3 rectangle?"}], "loss_weight": 0.0}, )j"
      R"j({"role": "assistant", "content": [{"type": "reasoning", "value": "Use the tool."}, {"type": "tool_call", "value": "{\"name\": \"calculate_area\", \"arguments\": {\"length\": 5, \"width\": 3}}"}], "loss_weight": 1.0}, )j"
      R"j({"role": "tool", "content": [{"type": "text", "value": "{\"area\": 15}"}], "loss_weight": 0.0}, )j"
      R"j({"role": "assistant", "content": [{"type": "text", "value": "It is 15."}], "loss_weight": 0}], )j"
      R"j("tools": "[{\"name\": \"calculate_area\", \"parameters\": {}}]"})j"
      "\n"));
  ASSERT_EQ(data.samples.size(), 2u);
  const Conversation& alpaca = data.samples[0];
  ASSERT_EQ(alpaca.messages.size(), 3u);
  EXPECT_EQ(alpaca.messages[0].content, "You are helpful.");
  EXPECT_EQ(alpaca.messages[1].content, "Give three tips for staying healthy.");
  EXPECT_EQ(alpaca.messages[2].content, "1. Eat well.");
  EXPECT_TRUE(alpaca.untrained_replies.empty());
  const Conversation& tools = data.samples[1];
  ASSERT_EQ(tools.messages.size(), 4u);
  EXPECT_EQ(tools.messages[1].content, "");
  EXPECT_EQ(tools.messages[1].reasoning_content, "Use the tool.");
  ASSERT_EQ(tools.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(tools.messages[1].tool_calls[0].name, "calculate_area");
  EXPECT_EQ(tools.messages[2].content, R"({"area": 15})");
  EXPECT_EQ(tools.untrained_replies, std::vector<std::size_t>{1});  // the second reply
}

TEST_F(DatasetFile, LossWeightsZerotuneCannotApplyAreRefused) {
  auto refusal = [&](const std::string& user_weight, const std::string& reply_weight) {
    return testing::error_of([&] {
      load_dataset(
          write("weights.jsonl",
                R"j({"messages": [{"role": "user", "content": [{"type": "text", "value": "q"}], "loss_weight": )j" +
                    user_weight +
                    R"j(}, {"role": "assistant", "content": [{"type": "text", "value": "a"}], "loss_weight": )j" +
                    reply_weight + "}]}\n"));
    });
  };
  testing::expect_mentions(refusal("0.0", "0.5"),
                           {"weights.jsonl: sample 0", "turn 1", "\"loss_weight\": 0.5", "0 or 1"});
  testing::expect_mentions(refusal("1.0", "1.0"), {"turn 0", "\"loss_weight\": 1 on a user message"});
  testing::expect_mentions(refusal("0", "\"1\""), {"\"loss_weight\": \"1\""});
}

const std::filesystem::path kPublished = std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/training/published";

// OpenAI's fine-tuning guide, its multi-turn example: "weight": 0 on an assistant message leaves
// that reply out of the loss, as loss_weight 0 does.
TEST(PublishedData, OpenAiWeightZeroLeavesAReplyUntrained) {
  const Dataset data = load_dataset((kPublished / "openai_multiturn_weight.jsonl").string());
  ASSERT_EQ(data.samples.size(), 1u);
  const Conversation& c = data.samples[0];
  ASSERT_EQ(c.messages.size(), 5u);
  EXPECT_EQ(c.messages[2].content, "Paris");
  EXPECT_EQ(c.untrained_replies, std::vector<std::size_t>{0});  // "Paris", not the sarcastic reply
}

TEST_F(DatasetFile, OpenAiWeightsZerotuneCannotApplyAreRefused) {
  auto refusal = [&](const std::string& user_weight, const std::string& reply_weight) {
    return testing::error_of([&] {
      load_dataset(write("w.jsonl", R"({"messages": [{"role": "user", "content": "q", "weight": )" + user_weight +
                                        R"(}, {"role": "assistant", "content": "a", "weight": )" + reply_weight +
                                        "}]}\n"));
    });
  };
  testing::expect_mentions(refusal("0", "0.5"), {"w.jsonl: sample 0", "turn 1", "\"weight\": 0.5", "0 or 1"});
  testing::expect_mentions(refusal("1", "1"), {"turn 0", "\"weight\": 1 on a user message", "make it 0"});
}

// axolotl's per-message "train" (its message_field_training): false leaves a reply untrained,
// in OpenAI "messages" and ShareGPT "conversations" alike; what zerotune cannot apply is refused.
TEST_F(DatasetFile, AxolotlTrainFlagsLeaveRepliesUntrainedOrAreRefused) {
  const Dataset data = load_dataset(
      write("a.jsonl", R"({"messages": [{"role": "user", "content": "q", "train": false}, )"
                       R"({"role": "assistant", "content": "a", "train": false}, {"role": "user", "content": "q2"}, )"
                       R"({"role": "assistant", "content": "b", "train": true}]})"
                       "\n"
                       R"({"conversations": [{"from": "human", "value": "q"}, )"
                       R"({"from": "gpt", "value": "a", "train": false}]})"
                       "\n"));
  ASSERT_EQ(data.samples.size(), 2u);
  EXPECT_EQ(data.samples[0].untrained_replies, std::vector<std::size_t>{0});
  EXPECT_EQ(data.samples[1].untrained_replies, std::vector<std::size_t>{0});
  auto refusal = [&](const std::string& user_keys, const std::string& reply_keys) {
    return testing::error_of([&] {
      load_dataset(write("b.jsonl", R"({"messages": [{"role": "user", "content": "q")" + user_keys +
                                        R"(}, {"role": "assistant", "content": "a")" + reply_keys + "}]}\n"));
    });
  };
  testing::expect_mentions(refusal(", \"train\": true", ""),
                           {"turn 0", "\"train\": true on a user message", "make it false"});
  testing::expect_mentions(refusal("", ", \"train\": 1"), {"turn 1", "\"train\": 1", "true or false"});
  testing::expect_mentions(refusal("", R"(, "train_detail": [{"begin_offset": 0, "end_offset": 1, "train": true}])"),
                           {"turn 1", "\"train_detail\"", "whole or not at all"});
}

// GLM-4's finetune_demo (its README's sample with tools): the tools ride on the system message,
// results are "observation" turns, and a call is the assistant's text, as GLM-4's script trains it.
TEST(PublishedData, Glm4FinetuneDemoToolsOnTheSystemMessage) {
  const Dataset data = load_dataset((kPublished / "glm4_finetune_tools.jsonl").string());
  ASSERT_EQ(data.samples.size(), 1u);
  const Conversation& c = data.samples[0];
  ASSERT_EQ(c.tools.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(c.tools[0])["function"]["name"], "get_recommended_books");
  ASSERT_EQ(c.messages.size(), 5u);
  EXPECT_EQ(c.messages[0].role, "system");
  EXPECT_EQ(c.messages[2].content,
            R"({"name": "get_recommended_books", "arguments": {"interests": ["history", "science fiction"]}})");
  EXPECT_TRUE(c.messages[2].tool_calls.empty());
  EXPECT_EQ(c.messages[3].role, "tool");
}

TEST_F(DatasetFile, ToolsBothBesideAndOnTheSystemMessageAreRefused) {
  const std::string msg = testing::error_of([&] {
    load_dataset(write("t.jsonl", R"({"tools": [{"name": "f"}], "messages": [{"role": "system", "content": "", )"
                                  R"("tools": [{"name": "g"}]}, {"role": "user", "content": "q"}, )"
                                  R"({"role": "assistant", "content": "a"}]})"
                                  "\n"));
  });
  testing::expect_mentions(msg, {"t.jsonl: sample 0 (line 1), turn 0", "system message has \"tools\"", "keep one"});
}

// OpenAI's fine-tuning guide, its function-calling example in the legacy layout: the call is
// the assistant's "function_call" and the functions are listed in "functions", read as
// "tool_calls" and "tools" are.
TEST(PublishedData, OpenAiLegacyFunctionCallIsAToolCall) {
  const Dataset data = load_dataset((kPublished / "openai_function_call_legacy.jsonl").string());
  ASSERT_EQ(data.samples.size(), 1u);
  const Conversation& c = data.samples[0];
  ASSERT_EQ(c.tools.size(), 1u);
  const auto tool = nlohmann::ordered_json::parse(c.tools[0]);
  EXPECT_EQ(tool["type"], "function");
  EXPECT_EQ(tool["function"]["name"], "get_current_weather");
  ASSERT_EQ(c.messages.size(), 2u);
  EXPECT_EQ(c.messages[1].role, "assistant");
  EXPECT_EQ(c.messages[1].content, "");
  ASSERT_EQ(c.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(c.messages[1].tool_calls[0].name, "get_current_weather");
  EXPECT_EQ(c.messages[1].tool_calls[0].arguments, R"({"location":"San Francisco, USA","format":"celsius"})");
}

// The legacy layout's result message has the role "function"; it takes the user's side as a
// "tool" message does. A message with both kinds of call, or a sample with both lists, is
// refused rather than one of them dropped.
TEST_F(DatasetFile, OpenAiLegacyFunctionResultsAndConflicts) {
  const std::string call = R"({"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}})";
  const Dataset data = load_dataset(
      write("legacy.jsonl", R"({"messages": [{"role": "user", "content": "q"}, )" + call +
                                R"(, {"role": "function", "name": "f", "content": "21.0"}, )"
                                R"({"role": "assistant", "content": "It is 21."}], "functions": [{"name": "f"}]})"
                                "\n"));
  ASSERT_EQ(data.samples[0].messages.size(), 4u);
  EXPECT_EQ(data.samples[0].messages[2].role, "tool");
  EXPECT_EQ(data.samples[0].messages[2].content, "21.0");
  const std::string both_calls = testing::error_of([&] {
    load_dataset(write("c.jsonl", R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", )"
                                  R"("function_call": {"name": "f"}, "tool_calls": []}]})"
                                  "\n"));
  });
  testing::expect_mentions(both_calls, {"c.jsonl: sample 0 (line 1), turn 1", "\"function_call\" and \"tool_calls\""});
  const std::string both_lists = testing::error_of([&] {
    load_dataset(
        write("l.jsonl", R"({"tools": [{"name": "g"}], "functions": [{"name": "f"}], "messages": [)" + call + "]}\n"));
  });
  testing::expect_mentions(both_lists, {"l.jsonl: sample 0 (line 1)", "both \"tools\" and \"functions\""});
}

TEST_F(DatasetFile, NonTextPartsAreNamedWithTheSampleAndThePartType) {
  std::string msg = testing::error_of([&] {
    load_dataset(write(
        "video.jsonl",
        R"j({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})j"
        "\n"
        R"j({"messages": [{"role": "user", "content": [{"type": "video_url", "value": "clip.mp4"}, {"type": "text", "value": "What happens?"}], "loss_weight": 0.0}, {"role": "assistant", "content": [{"type": "text", "value": "A cat jumps."}], "loss_weight": 1.0}]})j"
        "\n"));
  });
  testing::expect_mentions(msg, {"video.jsonl", "content parts of type \"video_url\"", "the first sample 1"});
  msg = testing::error_of([&] {
    load_dataset(write(
        "parts.jsonl",
        R"j({"messages": [{"role": "user", "content": [{"type": "tool_call", "value": "{}"}]}, {"role": "assistant", "content": "a"}]})j"
        "\n"));
  });
  testing::expect_mentions(
      msg, {"parts.jsonl: sample 0 (line 1), turn 0", "\"tool_call\"", "outside an assistant's message"});
  msg = testing::error_of([&] {
    load_dataset(write(
        "parts2.jsonl",
        R"j({"messages": [{"role": "user", "content": [{"type": "text"}]}, {"role": "assistant", "content": "a"}]})j"
        "\n"));
  });
  testing::expect_mentions(
      msg, {"parts2.jsonl: sample 0 (line 1), turn 0", "\"text\" (OpenAI) or \"value\" (LLaMA-Factory)"});
}

TEST_F(DatasetFile, MediaInContentPartsIsRefusedAndEmptyMediaListsAreNot) {
  std::string path = write(
      "parts.jsonl",
      R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})"
      "\n"
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "What is it?"}, {"type": "image_url", "image_url": {"url": "x.png"}}]}, {"role": "assistant", "content": "A cat."}]})"
      "\n"
      R"({"messages": [{"role": "user", "content": "<audio>Transcribe."}, {"role": "assistant", "content": "Hi."}], "audios": ["a.wav"]})"
      "\n");
  std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + ": 2 of 3 samples carry"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"audios\" in 1, the first sample 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("content parts of type \"image_url\" in 1, the first sample 1"), std::string::npos) << msg;
  path = write("empty_media.json", R"([{"instruction": "i", "output": "o", "images": [], "videos": []}])");
  EXPECT_EQ(load_dataset(path).samples.size(), 1u);
}

TEST_F(DatasetFile, ToolTurnsAreCheckedLikeTheOthers) {
  std::string path = write("call.json", R"json([{"conversations": [{"from": "human", "value": "q"},
      {"from": "function_call", "value": "calculate_area(5, 3)"}, {"from": "observation", "value": "15"},
      {"from": "gpt", "value": "15"}]}])json");
  std::string msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find(path + ": sample 0, turn 1: a function_call turn holds JSON"), std::string::npos) << msg;

  path = write("first.json", R"json([{"conversations": [{"from": "observation", "value": "15"},
      {"from": "gpt", "value": "a"}]}])json");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("turn 0 is from tool but should be from user"), std::string::npos) << msg;

  path = write("args.json", R"json([{"messages": [{"role": "user", "content": "q"}, {"role": "assistant",
      "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "city=Paris"}}]}]}])json");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("the arguments of the call of 'f' are text that is not JSON"), std::string::npos) << msg;

  path = write("tools.json", R"json([{"tools": "{\"name\": \"f\"}", "conversations": [{"from": "human", "value": "q"},
      {"from": "gpt", "value": "a"}]}])json");
  msg = testing::error_of([&] { load_dataset(path); });
  EXPECT_NE(msg.find("\"tools\" must be a list of functions"), std::string::npos) << msg;

  path = write("parallel.json", R"json([{"conversations": [{"from": "human", "value": "q"},
      {"from": "function_call", "value": "[{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": {\"x\": 1}}]"},
      {"from": "observation", "value": "r"}, {"from": "gpt", "value": "a"}]}])json");
  const Dataset data = load_dataset(path);
  ASSERT_EQ(data.samples[0].messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(data.samples[0].messages[1].tool_calls[1].arguments, R"json({"x":1})json");
}

}  // namespace
}  // namespace zt::train
