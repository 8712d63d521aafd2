// Preference records in each layout users have (LLaMA-Factory's alpaca and ShareGPT ranking,
// TRL's standard, conversational and implicit-prompt layouts, OpenAI's) read into a prompt and two
// answers; a dataset_info.json entry's columns and tags honoured; bad records refused with the
// record's position and what to do.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/common/op_test_util.h"
#include "train/data/dataset.h"
#include "train/data/preference_data.h"

namespace zt::train {
namespace {

using nlohmann::json;

PreferenceDataset parse(const std::string& text, const std::optional<EntryColumns>& columns = std::nullopt) {
  return parse_preference_dataset(text, "pairs.json", columns);
}

std::string error_for(const std::string& text, const std::optional<EntryColumns>& columns = std::nullopt) {
  return testing::error_of([&] { parse(text, columns); });
}

// The prompt's turns as "role: content".
std::vector<std::string> turns(const PreferenceConversation& pair) {
  std::vector<std::string> out;
  for (const models::ChatMessage& message : pair.prompt.messages) out.push_back(message.role + ": " + message.content);
  return out;
}

void expect_answers(const PreferenceConversation& pair, const std::string& chosen, const std::string& rejected) {
  EXPECT_EQ(pair.chosen.role, "assistant");
  EXPECT_EQ(pair.chosen.content, chosen);
  EXPECT_EQ(pair.rejected.role, "assistant");
  EXPECT_EQ(pair.rejected.content, rejected);
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

// An empty instruction leaves the input alone, as LLaMA-Factory joins the non-empty ones.
TEST(PreferenceData, AlpacaEmptyInstructionIsNotJoined) {
  const PreferenceDataset data = parse(R"([{"instruction": "", "input": "4 2", "chosen": "a", "rejected": "b"}])");
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: 4 2"}));
}

TEST(PreferenceData, AlpacaRankingWithSystemAndHistory) {
  const PreferenceDataset data = parse(R"([
    {"instruction": "Translate", "input": "猫", "chosen": "cat", "rejected": "dog"},
    {"instruction": "Go on", "chosen": "ok", "rejected": "no", "system": "Be brief.",
     "history": [["hi", "hello"]]}])");
  ASSERT_EQ(data.pairs.size(), 2u);
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: Translate\n猫"}));
  expect_answers(data.pairs[0], "cat", "dog");
  EXPECT_EQ(turns(data.pairs[1]),
            (std::vector<std::string>{"system: Be brief.", "user: hi", "assistant: hello", "user: Go on"}));
  expect_answers(data.pairs[1], "ok", "no");
  EXPECT_EQ(data.pairs[1].prompt.source, "pairs.json: sample 1");
}

// LLaMA-Factory's dpo_en_demo.json layout, and OpenAI's messages with a tool-calling answer.
TEST(PreferenceData, ShareGptRanking) {
  const PreferenceDataset data =
      parse(R"({"conversations": [{"from": "human", "value": "q1"}, {"from": "gpt", "value": "a1"},)"
            R"( {"from": "human", "value": "q2"}], "chosen": {"from": "gpt", "value": "good"},)"
            R"( "rejected": {"from": "gpt", "value": "bad"}, "system": "S"})"
            "\n"
            R"({"messages": [{"role": "system", "content": "T"}, {"role": "user", "content": "weather?"}],)"
            R"( "chosen": {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function":)"
            R"( {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},)"
            R"( "rejected": {"role": "assistant", "content": "sunny"}, "tools": [{"name": "weather"}]})");
  ASSERT_EQ(data.pairs.size(), 2u);
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"system: S", "user: q1", "assistant: a1", "user: q2"}));
  expect_answers(data.pairs[0], "good", "bad");
  EXPECT_EQ(turns(data.pairs[1]), (std::vector<std::string>{"system: T", "user: weather?"}));
  ASSERT_EQ(data.pairs[1].chosen.tool_calls.size(), 1u);
  EXPECT_EQ(data.pairs[1].chosen.tool_calls[0].name, "weather");
  EXPECT_EQ(json::parse(data.pairs[1].chosen.tool_calls[0].arguments), json({{"city", "Paris"}}));
  EXPECT_EQ(data.pairs[1].rejected.content, "sunny");
  EXPECT_EQ(data.pairs[1].prompt.tools.size(), 1u);
  EXPECT_EQ(data.pairs[1].prompt.source, "pairs.json: sample 1 (line 2)");
}

// OpenAI's preference fine-tuning layout, the example line of its guide: the prompt from
// input.messages, the answers each a list of one assistant message.
TEST(PreferenceData, OpenAiLayoutAsItsGuidePublishesIt) {
  const std::filesystem::path file =
      std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/training/published/openai_dpo.jsonl";
  const PreferenceDataset data = load_preference_dataset(file.string());
  ASSERT_EQ(data.pairs.size(), 1u);
  EXPECT_EQ(turns(data.pairs[0]),
            (std::vector<std::string>{"user: Hello, can you tell me how cold San Francisco is today?"}));
  expect_answers(data.pairs[0],
                 "Today in San Francisco, it is not quite cold as expected. Morning clouds will give away to "
                 "sunshine, with a high near 68°F (20°C) and a low around 57°F (14°C).",
                 "It is not particularly cold in San Francisco today.");
  EXPECT_TRUE(data.pairs[0].prompt.tools.empty());
}

// A system turn, earlier turns and tools in input; a tool call as the preferred answer.
TEST(PreferenceData, OpenAiLayoutWithSystemTurnsAndTools) {
  const PreferenceDataset data =
      parse(R"({"input": {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},)"
            R"( {"role": "assistant", "content": "hello"}, {"role": "user", "content": "weather in Paris?"}],)"
            R"( "tools": [{"type": "function", "function": {"name": "weather", "parameters": {}}}]},)"
            R"( "preferred_output": [{"role": "assistant", "content": "", "tool_calls": [{"type": "function",)"
            R"( "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]}],)"
            R"( "non_preferred_output": [{"role": "assistant", "content": "I cannot tell."}]})");
  ASSERT_EQ(data.pairs.size(), 1u);
  EXPECT_EQ(turns(data.pairs[0]),
            (std::vector<std::string>{"system: S", "user: hi", "assistant: hello", "user: weather in Paris?"}));
  ASSERT_EQ(data.pairs[0].chosen.tool_calls.size(), 1u);
  EXPECT_EQ(data.pairs[0].chosen.tool_calls[0].name, "weather");
  EXPECT_EQ(data.pairs[0].rejected.content, "I cannot tell.");
  EXPECT_EQ(data.pairs[0].prompt.tools.size(), 1u);
}

TEST(PreferenceData, OpenAiLayoutRefusesWhatItCannotRead) {
  const std::string prompt = R"("input": {"messages": [{"role": "user", "content": "q"}]})";
  std::string msg = error_for("{" + prompt +
                              R"(, "preferred_output": [{"role": "assistant", "content": "a"},)"
                              R"( {"role": "assistant", "content": "b"}], "non_preferred_output": []})");
  EXPECT_HAS(msg, "pairs.json: sample 0 (line 1): \"preferred_output\" must be a list of one assistant message");
  msg = error_for(R"({"input": "q", "preferred_output": [], "non_preferred_output": []})");
  EXPECT_HAS(msg, "sample 0 (line 1): \"input\" must be an object holding the prompt's \"messages\"");
  msg = error_for("{" + prompt +
                  R"(, "preferred_output": [{"role": "user", "content": "a"}],)"
                  R"( "non_preferred_output": [{"role": "assistant", "content": "b"}]})");
  EXPECT_HAS(msg, "sample 0 (line 1): \"preferred_output\" must be the assistant's message");
  // Supervised fine-tuning says where such a file belongs.
  msg = testing::error_of([&] {
    parse_dataset("{" + prompt +
                      R"(, "preferred_output": [{"role": "assistant", "content": "a"}],)"
                      R"( "non_preferred_output": [{"role": "assistant", "content": "b"}]})",
                  "p.jsonl");
  });
  EXPECT_HAS(msg, "p.jsonl holds preference pairs in OpenAI's layout");
  EXPECT_HAS(msg, "which --stage dpo trains on");
}

TEST(PreferenceData, TrlStandardIsOneUserTurn) {
  const PreferenceDataset data = parse(R"([{"prompt": "The sky is", "chosen": " blue.", "rejected": " green."}])");
  ASSERT_EQ(data.pairs.size(), 1u);
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: The sky is"}));
  expect_answers(data.pairs[0], " blue.", " green.");
}

TEST(PreferenceData, TrlConversational) {
  const PreferenceDataset data = parse(R"([{
    "prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "What color is the sky?"}],
    "chosen": [{"role": "assistant", "content": "It is blue."}],
    "rejected": [{"role": "assistant", "content": "It is green."}]}])");
  ASSERT_EQ(data.pairs.size(), 1u);
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"system: S", "user: What color is the sky?"}));
  expect_answers(data.pairs[0], "It is blue.", "It is green.");
}

// TRL's maybe_extract_prompt: the longest run of turns both conversations start with.
TEST(PreferenceData, TrlImplicitPromptFromConversations) {
  const PreferenceDataset data = parse(R"([{
    "chosen": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
               {"role": "user", "content": "sky?"}, {"role": "assistant", "content": "blue"}],
    "rejected": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                 {"role": "user", "content": "sky?"}, {"role": "assistant", "content": "green"}]}])");
  ASSERT_EQ(data.pairs.size(), 1u);
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: hi", "assistant: hello", "user: sky?"}));
  expect_answers(data.pairs[0], "blue", "green");
}

// As TRL extracts it from text: the shared start, a space before the first difference going
// to the answers; never half a UTF-8 character.
TEST(PreferenceData, TrlImplicitPromptFromText) {
  PreferenceDataset data = parse(R"([{"chosen": "Q: sky? A: blue", "rejected": "Q: sky? A: grey"}])");
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: Q: sky? A:"}));
  expect_answers(data.pairs[0], " blue", " grey");
  // é and è share their first byte.
  data = parse(R"([{"chosen": "café", "rejected": "cafè"}])");
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: caf"}));
  expect_answers(data.pairs[0], "é", "è");
}

// HuggingFaceH4/ultrafeedback_binarized: a text prompt and whole conversations as answers;
// TRL then takes the prompt from the conversations.
TEST(PreferenceData, TrlTextPromptWithConversationsTakesThePromptFromThem) {
  const PreferenceDataset data = parse(R"([{"prompt": "sky?",
    "chosen": [{"role": "user", "content": "sky?"}, {"role": "assistant", "content": "blue"}],
    "rejected": [{"role": "user", "content": "sky?"}, {"role": "assistant", "content": "green"}]}])");
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: sky?"}));
  expect_answers(data.pairs[0], "blue", "green");
}

// TRL's extract_prompt when one answer is the start of the other: its loop ends without a
// difference, one element (or character) before the shorter one's end.
TEST(PreferenceData, TrlImplicitPromptWhenOneAnswerStartsTheOther) {
  PreferenceDataset data = parse(R"([{"chosen": "Say: yes", "rejected": "Say: yes!"}])");
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: Say: ye"}));
  expect_answers(data.pairs[0], "s", "s!");
  data = parse(R"([{"chosen": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                    "rejected": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}])");
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: q"}));
  expect_answers(data.pairs[0], "a", "a");
  EXPECT_HAS(identical_pairs_note("pairs.json", data), "1 of 1 pairs have the same chosen and rejected answer");
}

// HuggingFaceH4/ultrafeedback_binarized's columns: a `messages` column beside TRL's lists is
// not LLaMA-Factory's ShareGPT prompt, and TRL reads the prompt from the answers.
TEST(PreferenceData, UltrafeedbackColumnsAreTrl) {
  const PreferenceDataset data = parse(R"([{"prompt": "sky?", "prompt_id": "1", "score_chosen": 9.0,
    "chosen": [{"role": "user", "content": "sky?"}, {"role": "assistant", "content": "blue"}],
    "rejected": [{"role": "user", "content": "sky?"}, {"role": "assistant", "content": "green"}],
    "messages": [{"role": "user", "content": "sky?"}, {"role": "assistant", "content": "blue"}]}])");
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: sky?"}));
  expect_answers(data.pairs[0], "blue", "green");
}

TEST(PreferenceData, IdenticalAnswersAreReadAndNoted) {
  const PreferenceDataset data = parse(R"([{"instruction": "a", "chosen": "x", "rejected": "x"},
                                           {"instruction": "b", "chosen": "x", "rejected": "y"}])");
  ASSERT_EQ(data.pairs.size(), 2u);
  const std::string note = identical_pairs_note("pairs.json", data);
  EXPECT_HAS(note, "pairs.json: 1 of 2 pairs have the same chosen and rejected answer");
  EXPECT_EQ(identical_pairs_note("pairs.json", parse(R"([{"instruction": "b", "chosen": "x", "rejected": "y"}])")), "");
}

TEST(PreferenceData, BadRecordsAreRefusedWithTheirPosition) {
  const std::string good = R"({"instruction": "q", "chosen": "a", "rejected": "b"})";
  // JSON Lines: the record's index and line.
  std::string msg = error_for(good + "\n\n" + R"({"instruction": "q", "chosen": "a"})");
  EXPECT_HAS(msg, "pairs.json: sample 1 (line 3) has no \"chosen\" and \"rejected\" answers");
  EXPECT_HAS(msg, "split it into one file per layout, or fix the record");
  msg = error_for("[" + good + R"(, {"instruction": "q", "chosen": "", "rejected": "b"}])");
  EXPECT_HAS(msg, "pairs.json: sample 1: the answer \"chosen\" is empty");
  EXPECT_HAS(msg, "fill it in or drop the record");
  msg = error_for(R"([{"instruction": "q", "chosen": 3, "rejected": "b"}])");
  EXPECT_HAS(msg, "pairs.json: sample 0: \"chosen\" must be a string (the answer), got 3");
  msg = error_for(R"([{"instruction": ["q"], "chosen": "a", "rejected": "b"}])");
  EXPECT_HAS(msg, "sample 0: \"instruction\" must be a string");
  // ShareGPT: answers are one message each, the assistant's, after a prompt that ends on the user.
  msg = error_for(R"([{"conversations": [{"from": "human", "value": "q"}], "chosen": "a",
                      "rejected": {"from": "gpt", "value": "b"}}])");
  EXPECT_HAS(msg, "sample 0: \"chosen\" must be one message");
  msg = error_for(R"([{"conversations": [{"from": "human", "value": "q"}], "chosen": {"from": "gpt", "value": "a"},
                      "rejected": {"from": "human", "value": "b"}}])");
  EXPECT_HAS(msg, "sample 0: \"rejected\" must be the assistant's message");
  msg = error_for(R"([{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "x"}],
                      "chosen": {"from": "gpt", "value": "a"}, "rejected": {"from": "gpt", "value": "b"}}])");
  EXPECT_HAS(msg, "sample 0: turn 2 is from assistant but should be from user");
  msg = error_for(R"([{"conversations": [], "chosen": {"from": "gpt", "value": "a"},
                      "rejected": {"from": "gpt", "value": "b"}}])");
  EXPECT_HAS(msg, "\"conversations\" must be a non-empty list of the prompt's turns");
  // TRL: one answer per side, answers of one kind, a prompt to share.
  msg = error_for(R"([{"prompt": [{"role": "user", "content": "q"}],
                      "chosen": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "more"}],
                      "rejected": [{"role": "assistant", "content": "b"}]}])");
  EXPECT_HAS(msg, "sample 0: \"chosen\" holds 2 messages after the prompt; zerotune trains one answer per side");
  msg = error_for(R"([{"prompt": "q", "chosen": "a", "rejected": [{"role": "assistant", "content": "b"}]}])");
  EXPECT_HAS(msg, "\"chosen\" and \"rejected\" must both be strings or both lists of messages");
  msg = error_for(R"([{"chosen": "yes", "rejected": "no"}])");
  EXPECT_HAS(msg, "sample 0: \"chosen\" and \"rejected\" share no prompt: name the prompt \"prompt\"");
  // Intel/orca_dpo_pairs' keys: LLaMA-Factory reads them through an entry's columns.
  msg = error_for(R"([{"system": "S", "question": "q", "chosen": "yes", "rejected": "no"}])");
  EXPECT_HAS(msg,
             "share no prompt (its other keys: system, question): name the prompt \"prompt\", or map the "
             "record's keys with a dataset_info.json entry's columns");
  msg = error_for(R"([{"prompt": "q", "chosen": {"a": 1}, "rejected": "b"}])");
  EXPECT_HAS(msg, "\"chosen\" must be a string or a list of messages");
}

TEST(PreferenceData, FilesThatHoldNoPairsAreRefused) {
  std::string msg = error_for(R"([{"instruction": "q", "output": "a"}])");
  EXPECT_HAS(msg, "pairs.json: the first record");
  EXPECT_HAS(msg, "is no preference pair: --stage dpo reads records with \"chosen\" and \"rejected\"");
  EXPECT_HAS(error_for("[]"), "pairs.json holds no preference records");
  EXPECT_HAS(error_for("[{\"instruction\": "), "pairs.json");
  msg = error_for(R"([{"instruction": "q", "chosen": "a", "rejected": "b", "images": ["x.png"]}])");
  EXPECT_HAS(msg, "carry images, videos or audio");
  // Layouts do not mix in a file.
  msg = error_for(R"([{"instruction": "q", "chosen": "a", "rejected": "b"},
                      {"prompt": "q", "chosen": "a", "rejected": "b"}])");
  EXPECT_HAS(msg, "sample 1 is in TRL's preference layout");
  EXPECT_HAS(msg, "but the file's first record is in LLaMA-Factory's alpaca ranking");
  // The SFT reader says where such a file belongs.
  msg = testing::error_of([] { parse_dataset(R"([{"instruction": "q", "chosen": "a", "rejected": "b"}])", "p.json"); });
  EXPECT_HAS(msg, "p.json holds preference pairs (\"chosen\" and \"rejected\"), which --stage dpo trains on");
}

// An entry's columns as LLaMA-Factory's parser reads them: renamed keys, and a column the
// entry does not list is not read (here "input" and "system").
TEST(PreferenceData, AlpacaColumnsOfADatasetInfoEntry) {
  const std::optional<EntryColumns> columns = ranking_columns(
      json::parse(R"({"ranking": true, "columns": {"prompt": "question", "chosen": "better", "rejected": "worse",
                      "history": "past"}})"),
      "info: dataset \"x\"");
  ASSERT_TRUE(columns);
  const PreferenceDataset data = parse(R"([{"question": "q", "input": "ignored", "system": "ignored",
    "past": [["h", "i"]], "better": "a", "worse": "b"}])",
                                       columns);
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"user: h", "assistant: i", "user: q"}));
  expect_answers(data.pairs[0], "a", "b");
  EXPECT_HAS(error_for(R"([{"instruction": "q", "better": "a", "worse": "b"}])", columns),
             "sample 0 has no \"question\", the instruction");
  EXPECT_HAS(error_for(R"([{"question": "q", "chosen": "a", "worse": "b"}])", columns),
             "sample 0 has no \"better\"; a preference record holds two answers");
}

TEST(PreferenceData, ShareGptColumnsAndTagsOfADatasetInfoEntry) {
  const std::optional<EntryColumns> columns = ranking_columns(json::parse(R"({"formatting": "sharegpt",
    "ranking": true, "columns": {"messages": "dialog", "chosen": "good", "rejected": "bad", "system": "sys"},
    "tags": {"role_tag": "speaker", "content_tag": "text", "user_tag": "me", "assistant_tag": "bot"}})"),
                                                              "info: dataset \"x\"");
  ASSERT_TRUE(columns);
  const PreferenceDataset data =
      parse(R"([{"dialog": [{"speaker": "me", "text": "q1"}, {"speaker": "bot", "text": "a1"},
    {"speaker": "me", "text": "q2"}], "good": {"speaker": "bot", "text": "yes"},
    "bad": {"speaker": "bot", "text": "no"}, "sys": "S"}])",
            columns);
  EXPECT_EQ(turns(data.pairs[0]), (std::vector<std::string>{"system: S", "user: q1", "assistant: a1", "user: q2"}));
  expect_answers(data.pairs[0], "yes", "no");
  const std::string msg = error_for(R"([{"dialog": [{"speaker": "human", "text": "q"}],
    "good": {"speaker": "bot", "text": "yes"}, "bad": {"speaker": "bot", "text": "no"}}])",
                                    columns);
  EXPECT_HAS(msg, "sample 0: a message's \"speaker\" is \"human\", none of the entry's tags (user me, assistant bot");
}

// LLaMA-Factory's OpenAI-style sharegpt entry (role/content tags), with a tool's result in
// the prompt and tool calls in an answer.
TEST(PreferenceData, OpenAiTagsOfADatasetInfoEntry) {
  const std::optional<EntryColumns> columns = ranking_columns(json::parse(R"({"formatting": "sharegpt",
    "ranking": true, "columns": {"messages": "messages", "chosen": "chosen", "rejected": "rejected", "tools": "tools"},
    "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
             "observation_tag": "tool", "system_tag": "system"}})"),
                                                              "info: dataset \"x\"");
  const PreferenceDataset data =
      parse(R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "weather?"},)"
            R"( {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "w",)"
            R"( "arguments": "{}"}}]}, {"role": "tool", "content": "rain"}],)"
            R"( "chosen": {"role": "assistant", "content": "It rains."},)"
            R"( "rejected": {"role": "assistant", "content": null, "tool_calls": [{"type": "function",)"
            R"( "function": {"name": "w", "arguments": "{}"}}]}, "tools": [{"name": "w"}]})",
            columns);
  ASSERT_EQ(data.pairs.size(), 1u);
  EXPECT_EQ(turns(data.pairs[0]),
            (std::vector<std::string>{"system: S", "user: weather?", "assistant: ", "tool: rain"}));
  EXPECT_EQ(data.pairs[0].prompt.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(data.pairs[0].chosen.content, "It rains.");
  ASSERT_EQ(data.pairs[0].rejected.tool_calls.size(), 1u);
  EXPECT_EQ(data.pairs[0].rejected.tool_calls[0].name, "w");
  EXPECT_EQ(data.pairs[0].prompt.tools.size(), 1u);
}

TEST(PreferenceData, EntryColumnsRefuseWhatZerotuneDoesNotTrain) {
  const auto columns_error = [](const std::string& entry) {
    return testing::error_of([&] { ranking_columns(json::parse(entry), "info: dataset \"x\""); });
  };
  EXPECT_FALSE(ranking_columns(json::parse(R"({"ranking": true})"), "x"));  // no columns: detected
  EXPECT_HAS(columns_error(R"({"columns": {"prompt": "q", "chosen": "c", "rejected": "r", "images": "i"}})"),
             "info: dataset \"x\" maps the column images; zerotune trains on text only");
  EXPECT_HAS(columns_error(R"({"columns": {"prompt": "q", "kto_tag": "label"}})"), "maps kto_tag");
  EXPECT_HAS(columns_error(R"({"columns": {"prompt": 3}})"), "columns prompt must name a key of the records");
  EXPECT_HAS(columns_error(R"({"formatting": "sharegpt", "columns": {"chosen": "c", "rejected": "r"}})"),
             "sharegpt data needs columns messages");
}

}  // namespace
}  // namespace zt::train
