// The data the arguments name: comma-separated files, LLaMA-Factory's dataset_info.json names,
// --max_samples per file, and --val_size's split.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/common/op_test_util.h"
#include "train/args/dataset_selection.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(ZT_SOURCE_DIR) / "tests/data/args/llama_factory/data";

TrainingArguments arguments(std::vector<std::string> extra) {
  std::vector<std::string> all = {"--model_name_or_path", "m", "--output_dir", "o"};
  all.insert(all.end(), extra.begin(), extra.end());
  return parse_training_arguments(all);
}

std::string error_for(const std::string& names) {
  return testing::error_of([&] { llama_factory_files(names, kData.string()); });
}

std::vector<std::string> outputs(const Dataset& data) {
  std::vector<std::string> replies;
  for (const Conversation& sample : data.samples) replies.push_back(sample.messages.back().content);
  return replies;
}

TEST(DatasetSelection, TrainFileListsSplitOnCommas) {
  EXPECT_EQ(data_files("a.json, b.jsonl,c.json"), (std::vector<std::string>{"a.json", "b.jsonl", "c.json"}));
  const fs::path odd = fs::temp_directory_path() / "zt_data,with_comma.json";
  std::ofstream(odd) << "[]";
  EXPECT_EQ(data_files(odd.string()), std::vector<std::string>{odd.string()});  // a file that exists is one file
  fs::remove(odd);
}

TEST(DatasetSelection, LlamaFactoryNamesResolveThroughDatasetInfo) {
  EXPECT_EQ(llama_factory_files("identity, alpaca_en_demo", kData.string()),
            (std::vector<std::string>{(kData / "identity.json").string(), (kData / "alpaca_en_demo.json").string()}));
  EXPECT_EQ(llama_factory_files("chat_openai", kData.string()),
            std::vector<std::string>{(kData / "chat_openai.jsonl").string()});
  // Not a name in dataset_info.json: a path, as given or inside dataset_dir.
  EXPECT_EQ(llama_factory_files("identity.json", kData.string()),
            std::vector<std::string>{(kData / "identity.json").string()});
  const std::string path = (kData / "alpaca_en_demo.json").string();
  EXPECT_EQ(llama_factory_files(path, "elsewhere"), std::vector<std::string>{path});
}

// LLaMA-Factory's data/README.md alpaca record with a system prompt and history: its parser reads
// no column the entry leaves out (system and history by default, input once columns are given),
// and neither does zerotune; an entry without the prompt or response column reads nothing.
TEST(DatasetSelection, ColumnsAnEntryLeavesOutAreNotRead) {
  auto first = [&](const std::string& name) {
    return select_data(arguments({"--dataset", name, "--dataset_dir", kData.string()})).train.samples.at(0).messages;
  };
  const auto listed = first("alpaca_history");
  ASSERT_EQ(listed.size(), 7u);  // system, two rounds of history, the instruction and its output
  EXPECT_EQ(listed[0].content, "system prompt (optional)");
  const auto unlisted = first("alpaca_history_no_columns");
  ASSERT_EQ(unlisted.size(), 2u);
  EXPECT_EQ(unlisted[0].content, "user instruction (required)\nuser input (optional)");
  EXPECT_EQ(unlisted[1].content, "model response (required)");
  const auto no_query = first("alpaca_without_query");
  ASSERT_EQ(no_query.size(), 2u);
  EXPECT_EQ(no_query[0].content, "user instruction (required)");
  testing::expect_mentions(error_for("alpaca_without_response"),
                           {"dataset \"alpaca_without_response\"", "columns do not list response", "add it"});
}

std::vector<std::string> roles(const std::vector<models::ChatMessage>& messages) {
  std::vector<std::string> out;
  for (const models::ChatMessage& message : messages) out.push_back(message.role);
  return out;
}

std::vector<std::string> contents(const std::vector<models::ChatMessage>& messages) {
  std::vector<std::string> out;
  for (const models::ChatMessage& message : messages) out.push_back(message.content);
  return out;
}

// Entries whose columns and tags rename the records' keys and roles, as LLaMA-Factory's
// parser and converters read them: each column from its own key, unlisted ones not read.
TEST(DatasetSelection, RenamedColumnsAreRead) {
  const Dataset alpaca = select_data(arguments({"--dataset", "alpaca_renamed", "--dataset_dir", kData.string()})).train;
  ASSERT_EQ(alpaca.samples.size(), 2u);
  const auto& first = alpaca.samples[0].messages;
  EXPECT_EQ(roles(first), (std::vector<std::string>{"system", "user", "assistant", "user", "assistant"}));
  EXPECT_EQ(contents(first),
            (std::vector<std::string>{"You are terse.", "Hi.", "Hello.", "Name a primary colour.\nOne word.", "Red."}));
  EXPECT_EQ(contents(alpaca.samples[1].messages), (std::vector<std::string>{"What is 2+2?", "4."}));
}

TEST(DatasetSelection, RenamedTagsAreRead) {
  const Dataset sharegpt =
      select_data(arguments({"--dataset", "sharegpt_renamed", "--dataset_dir", kData.string()})).train;
  ASSERT_EQ(sharegpt.samples.size(), 3u);
  const auto& first = sharegpt.samples[0].messages;
  EXPECT_EQ(roles(first), (std::vector<std::string>{"system", "user", "assistant"}));
  EXPECT_EQ(contents(first), (std::vector<std::string>{"Be brief.", "Who are you?", "A tiny assistant."}));
  // A system turn first is the system prompt, before the column; the tools column is read.
  const Conversation& second = sharegpt.samples[1];
  EXPECT_EQ(contents(second.messages),
            (std::vector<std::string>{"Answer in one word.", "Weather in Paris?", "Sunny."}));
  ASSERT_EQ(second.tools.size(), 1u);
  EXPECT_NE(second.tools[0].find("weather"), std::string::npos) << second.tools[0];
  // The function and observation tags: a tool call and its result.
  const auto& third = sharegpt.samples[2].messages;
  EXPECT_EQ(roles(third), (std::vector<std::string>{"user", "assistant", "tool", "assistant"}));
  ASSERT_EQ(third[1].tool_calls.size(), 1u);
  EXPECT_EQ(third[1].tool_calls[0].name, "weather");
  EXPECT_EQ(third[2].content, "Rain.");
}

// Columns reading one key twice, tags giving two roles one value, and records without a renamed
// column are refused, each naming the entry or the record.
TEST(DatasetSelection, AmbiguousRenamesAreRefused) {
  testing::expect_mentions(error_for("tags_two_roles_one_value"), {"dataset \"tags_two_roles_one_value\"",
                                                                   "tags user_tag and assistant_tag both name "
                                                                   "\"client\""});
  testing::expect_mentions(error_for("columns_one_key_twice"),
                           {"dataset \"columns_one_key_twice\"", "columns prompt and query both name \"question\""});
  const std::string msg = testing::error_of([] {
    select_data(arguments({"--dataset", "renamed_columns", "--dataset_dir", kData.string()}));
  });
  testing::expect_mentions(msg, {"alpaca_en_demo.json: sample 0", "has no \"question\", the entry's prompt column"});
}

// --stage pt: an entry's prompt column is the text (LLaMA-Factory's c4_demo), and pt packs
// unless told not to; under sft the same entry is refused, its text being no instruction.
TEST(DatasetSelection, PretrainingReadsThePromptColumnAsText) {
  EXPECT_EQ(llama_factory_files("c4_demo", kData.string(), true),
            std::vector<std::string>{(kData / "c4_demo.jsonl").string()});
  const std::string refused = error_for("c4_demo");
  EXPECT_NE(refused.find("dataset \"c4_demo\" is plain text (its prompt column is \"text\"), which --stage pt "
                         "trains on; this run's --stage is sft"),
            std::string::npos)
      << refused;
  const TrainingArguments pt = arguments({"--stage", "pt", "--dataset", "c4_demo", "--dataset_dir", kData.string()});
  EXPECT_TRUE(pt.packing);
  EXPECT_FALSE(arguments({"--stage", "pt", "--dataset", "c4_demo", "--packing", "false"}).packing);
  EXPECT_FALSE(arguments({"--stage", "sft", "--dataset", "c4_demo"}).packing);
  const SelectedData selected = select_data(pt);
  EXPECT_EQ(selected.train.format, DataFormat::kText);
  EXPECT_EQ(selected.train.texts.size(), 3u);
  // wiki_demo.txt, a text per line (its first two lines).
  const SelectedData wiki =
      select_data(arguments({"--stage", "pt", "--dataset", "wiki_demo", "--dataset_dir", kData.string()}));
  EXPECT_EQ(wiki.train.format, DataFormat::kText);
  EXPECT_EQ(wiki.train.texts.size(), 2u);
}

// LLaMA-Factory's entries for data of kinds zerotune does not train on (its kto_en_demo and
// mllm_demo, as its dataset_info.json has them), and layouts it reads otherwise, each named.
TEST(DatasetSelection, EntriesOfOtherKindsSayWhatTheyAre) {
  std::string msg = error_for("kto_en_demo");
  EXPECT_NE(msg.find("dataset \"kto_en_demo\" is KTO data (its kto_tag column marks each answer desirable or not)"),
            std::string::npos)
      << msg;
  msg = error_for("mllm_demo");
  EXPECT_NE(msg.find("dataset \"mllm_demo\" is multimodal data (its images column); zerotune trains on text only"),
            std::string::npos)
      << msg;
  // Tags are honoured, and the records must hold what they name: identity.json is alpaca.
  msg = testing::error_of([] {
    select_data(arguments({"--dataset", "custom_tags", "--dataset_dir", kData.string()}));
  });
  testing::expect_mentions(msg, {"identity.json: sample 0", "\"conversations\" must be a non-empty list"});
  msg = error_for("folder");
  EXPECT_NE(msg.find("is a folder, whose files LLaMA-Factory reads as one dataset; zerotune reads one file per entry"),
            std::string::npos)
      << msg;
}

TEST(DatasetSelection, WhatLlamaFactoryWouldReadDifferentlyIsRefused) {
  std::string msg = error_for("nowhere");
  EXPECT_NE(msg.find("dataset \"nowhere\" is neither in"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(which has alpaca_en_demo, "), std::string::npos) << msg;  // what it has
  EXPECT_NE(msg.find(", c4_demo, chat_openai, "), std::string::npos) << msg;
  msg = error_for("from_the_hub");
  EXPECT_NE(msg.find("dataset \"from_the_hub\" is loaded from hf_hub_url; zerotune reads local files"),
            std::string::npos)
      << msg;
  // LLaMA-Factory loads an entry with a hub URL from the hub, its file_name passed over.
  testing::expect_mentions(error_for("hub_over_file"),
                           {"dataset \"hub_over_file\" is loaded from hf_hub_url, which LLaMA-Factory takes over its "
                            "file_name \"identity.json\"",
                            "drop hf_hub_url from the entry to read the local file"});
  EXPECT_EQ(llama_factory_files("renamed_columns", kData.string()),  // renames are honoured
            std::vector<std::string>{(kData / "alpaca_en_demo.json").string()});
  EXPECT_NE(error_for("preference_pairs").find("preference (ranking) data"), std::string::npos);
  EXPECT_NE(error_for("sampled").find("num_samples"), std::string::npos);
}

// LLaMA-Factory loads a local file as the datasets library's one "train" split, then takes the
// entry's split of it: "train" is the file, a slice ("train[:2]") part of it, another split fails.
TEST(DatasetSelection, AnEntrysSplitOtherThanTrainIsRefused) {
  EXPECT_EQ(llama_factory_files("split_train", kData.string()),
            std::vector<std::string>{(kData / "identity.json").string()});
  std::string msg = error_for("split_slice");
  testing::expect_mentions(msg, {"dataset \"split_slice\" takes split \"train[:2]\"", "--max_samples"});
  msg = error_for("split_test");
  testing::expect_mentions(msg, {"dataset \"split_test\" takes split \"test\"", "\"train\" split"});
}

// "ranking": "true" would be preference data to LLaMA-Factory (Python's truthy string), as would
// "false": a ranking that is not a JSON boolean is refused by name rather than read as false.
TEST(DatasetSelection, ARankingThatIsNotABooleanIsRefused) {
  testing::expect_mentions(error_for("ranking_as_text"), {"dataset \"ranking_as_text\" has \"ranking\": \"true\"",
                                                          "not a JSON boolean", "\"ranking\": true"});
}

TEST(DatasetSelection, FilesConcatenateEachCutToMaxSamples) {
  const SelectedData selected = select_data(
      arguments({"--dataset", "identity,alpaca_en_demo", "--dataset_dir", kData.string(), "--max_samples", "2"}));
  EXPECT_EQ(selected.train.size(), 4u);  // the first two of each file
  EXPECT_EQ(outputs(selected.train),
            (std::vector<std::string>{"Hello! I am a tiny assistant trained by zerotune.",
                                      "I am a tiny assistant trained by zerotune.", "5", "5"}));
  EXPECT_FALSE(selected.eval);
  const SelectedData files = select_data(
      arguments({"--train_file", (kData / "identity.json").string() + "," + (kData / "chat_openai.jsonl").string(),
                 "--validation_file", (kData / "alpaca_en_demo.json").string()}));
  EXPECT_EQ(files.train.size(), 5u);  // alpaca and OpenAI messages, both conversations
  ASSERT_TRUE(files.eval);
  EXPECT_EQ(files.eval->size(), 6u);
}

TEST(DatasetSelection, ValSizeSplitsOffASeededShare) {
  const TrainingArguments args = arguments({"--dataset", "alpaca_en_demo", "--dataset_dir", kData.string(),
                                            "--val_size", "0.3", "--eval_strategy", "steps"});
  const SelectedData selected = select_data(args);
  ASSERT_TRUE(selected.eval);
  EXPECT_EQ(selected.eval->size(), 2u);  // ceil(0.3 * 6)
  EXPECT_EQ(selected.train.size(), 4u);
  std::vector<std::string> all = outputs(selected.train);
  for (const std::string& reply : outputs(*selected.eval)) all.push_back(reply);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"5", "5", "cba", "enut", "seven", "three"}));  // nothing lost or doubled
  EXPECT_EQ(outputs(*select_data(args).eval), outputs(*selected.eval));                   // the same every run
  Dataset six = select_data(arguments({"--train_file", (kData / "alpaca_en_demo.json").string()})).train;
  EXPECT_EQ(split_validation(six, 3, 42).second.size(), 3u);  // >= 1: a number of samples
  bool differs = false;
  for (std::uint64_t seed = 1; seed < 20 && !differs; ++seed)
    differs = outputs(split_validation(six, 0.5, seed).second) != outputs(split_validation(six, 0.5, 42).second);
  EXPECT_TRUE(differs);
  const std::string msg = testing::error_of([&] { split_validation(six, 6, 42); });
  EXPECT_NE(msg.find("--val_size 6 leaves 0 of 6 samples to train on"), std::string::npos) << msg;
}

TEST(DatasetSelection, EvalDatasetNamesTheEvaluationData) {
  const SelectedData selected = select_data(arguments(
      {"--dataset", "identity", "--eval_dataset", "chat_openai", "--dataset_dir", kData.string(), "--do_eval"}));
  EXPECT_EQ(selected.train.size(), 3u);
  ASSERT_TRUE(selected.eval);
  EXPECT_EQ(selected.eval->size(), 2u);
  EXPECT_EQ(selected.eval_source, (kData / "chat_openai.jsonl").string());
}

// --stage dpo: ranking entries with their columns honoured, files in any preference layout;
// entries of other data refused by name, as ranking entries are under sft.
TrainingArguments dpo(std::vector<std::string> extra) {
  TrainingArguments args = arguments(std::move(extra));
  args.stage = "dpo";
  return args;
}

std::vector<std::string> chosen(const PreferenceDataset& data) {
  std::vector<std::string> answers;
  for (const PreferenceConversation& pair : data.pairs) answers.push_back(pair.chosen.content);
  return answers;
}

TEST(DatasetSelection, RankingEntriesAreForStageDpo) {
  const std::vector<PreferenceFile> files = preference_files("dpo_en_demo, dpo_renamed, dpo_detected", kData.string());
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].path, (kData / "dpo_en_demo.json").string());
  ASSERT_TRUE(files[0].columns);
  EXPECT_TRUE(files[0].columns->sharegpt);
  ASSERT_TRUE(files[1].columns);
  EXPECT_EQ(files[1].columns->chosen, "good");
  EXPECT_EQ(files[1].columns->query, "");  // not listed: not read, as LLaMA-Factory reads columns
  EXPECT_FALSE(files[2].columns);          // no columns: the layout is detected

  std::string msg = testing::error_of([] { preference_files("identity", kData.string()); });
  EXPECT_NE(msg.find("dataset \"identity\" is not preference data (its entry has no \"ranking\": true); --stage dpo "
                     "trains on pairs of a chosen and a rejected answer"),
            std::string::npos)
      << msg;
  msg = error_for("dpo_en_demo");
  EXPECT_NE(msg.find("dataset \"dpo_en_demo\" is preference (ranking) data, which --stage dpo trains on; this run's "
                     "--stage is sft"),
            std::string::npos)
      << msg;
  msg = testing::error_of([] { preference_files("dpo_with_images", kData.string()); });
  EXPECT_NE(msg.find("maps the column images; zerotune trains on text only"), std::string::npos) << msg;
}

TEST(DatasetSelection, StageDpoSelectsPreferencePairs) {
  SelectedData selected =
      select_data(dpo({"--dataset", "dpo_en_demo,dpo_renamed", "--dataset_dir", kData.string(), "--max_samples", "3"}));
  EXPECT_TRUE(selected.train.samples.empty());
  EXPECT_EQ(chosen(selected.train_pairs),
            (std::vector<std::string>{"Red is a primary colour.", "6.", "Bonjour.", "Paris.", "Jupiter."}));
  EXPECT_EQ(selected.train_pairs.pairs[3].prompt.messages.back().content, "Capital of France?");  // no input read
  EXPECT_EQ(selected.train_source,
            (kData / "dpo_en_demo.json").string() + ", " + (kData / "dpo_renamed.jsonl").string());
  EXPECT_FALSE(selected.eval_pairs);

  // A file named directly, its layout detected; --val_size splits pairs as it splits samples.
  selected = select_data(dpo({"--train_file", (kData / "dpo_en_demo.json").string(), "--val_size", "0.25"}));
  ASSERT_TRUE(selected.eval_pairs);
  EXPECT_EQ(selected.eval_pairs->pairs.size(), 1u);
  EXPECT_EQ(selected.train_pairs.pairs.size(), 3u);
  std::vector<std::string> all = chosen(selected.train_pairs);
  all.push_back(selected.eval_pairs->pairs[0].chosen.content);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"6.", "Bonjour.", "Red is a primary colour.", "tac"}));

  // Pairs with two equal answers are kept, with a warning naming the file.
  const fs::path same = fs::temp_directory_path() / "zt_identical_pairs.jsonl";
  std::ofstream(same) << R"({"prompt": "q", "chosen": "a", "rejected": "a"})"
                      << "\n"
                      << R"({"prompt": "q", "chosen": "a", "rejected": "b"})"
                      << "\n";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(select_data(dpo({"--train_file", same.string()})).train_pairs.pairs.size(), 2u);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(same.string() + ": 1 of 2 pairs have the same chosen and rejected answer"), std::string::npos)
      << log;
  fs::remove(same);

  selected = select_data(dpo(
      {"--dataset", "dpo_detected", "--eval_dataset", "dpo_renamed", "--dataset_dir", kData.string(), "--do_eval"}));
  EXPECT_EQ(selected.train_pairs.pairs.size(), 4u);
  ASSERT_TRUE(selected.eval_pairs);
  EXPECT_EQ(chosen(*selected.eval_pairs), (std::vector<std::string>{"Paris.", "Jupiter."}));
  EXPECT_EQ(selected.eval_source, (kData / "dpo_renamed.jsonl").string());
}

}  // namespace
}  // namespace zt::train
