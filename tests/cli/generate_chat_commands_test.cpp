// zerotune generate and chat as a user runs them on the shipped tiny model (CPU): prompt files
// in every shape, results in input order, ids equal across output formats and batch sizes,
// and the clear errors of bad requests.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tensor/safetensors/safetensors.h"
#include "tests/common/process_test_util.h"

namespace {

namespace fs = std::filesystem;
using zt::testing::CliRun;

const std::string kModel = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

class GenerateCli : public ::testing::Test {
 protected:
  void SetUp() override { folder_ = zt::testing::test_folder("infer_cli_test", /*fresh=*/true); }

  CliRun zerotune(const std::string& arguments) { return zt::testing::run_zerotune(arguments, folder_); }
  std::string generate(const std::string& arguments) {
    return "generate --model_name_or_path " + kModel + " --device cpu --max_new_tokens 6 " + arguments;
  }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(folder_ / name) << text;
    return folder_ / name;
  }

  // Two turns asking the same question with the history forgotten between them (`forget`) and the
  // chat left (`leave`) before a last line: the history was cleared, the same state gave the same
  // answer, and the line after leaving was never answered.
  void expect_forgotten_between_the_same_questions(const std::string& forget, const std::string& leave) {
    const fs::path turns = write("turns.txt", "hello\n" + forget + "\nhello\n" + leave + "\nnever read\n");
    const CliRun chat =
        zerotune("chat --model_name_or_path " + kModel + " --device cpu --max_new_tokens 4 < " + turns.string());
    ASSERT_EQ(chat.exit_code, 0) << chat.output;
    EXPECT_NE(chat.output.find("(history cleared)"), std::string::npos) << chat.output;
    const std::vector<std::string> answers = zt::testing::chat_answers(chat.output);
    ASSERT_EQ(answers.size(), 2u) << forget << " / " << leave << ": " << chat.output;
    EXPECT_EQ(answers[0], answers[1]) << "after " << forget << " the same question gets the same answer";
  }

  // A PEFT adapter made for a model of hidden size 64: every A matrix has 64 columns where
  // the tiny model's projections take 96 inputs.
  std::string adapter_of_a_narrower_model() {
    const fs::path source = fs::path(ZT_SOURCE_DIR) / "tests/data/models/qwen2_lora", target = folder_ / "other_lora";
    fs::create_directories(target);
    fs::copy_file(source / "adapter_config.json", target / "adapter_config.json");
    const zt::SafetensorsFile file = zt::SafetensorsFile::open((source / "adapter_model.safetensors").string());
    zt::NamedTensors narrowed;
    for (const std::string& name : file.names()) {
      zt::Tensor t = file.get(name);
      if (name.find("lora_A") != std::string::npos && t.size(1) == 96) t = t.narrow(1, 0, 64);
      narrowed.emplace_back(name, t);
    }
    zt::save_safetensors((target / "adapter_model.safetensors").string(), narrowed);
    return target.string();
  }

  fs::path folder_;
};

// The lines of `output` that are JSON arrays (the log lines around them are not).
std::vector<nlohmann::json> id_lines(const std::string& output) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() != '[') continue;
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_array()) lines.push_back(parsed);
  }
  return lines;
}

constexpr const char* kPrompts =
    "\"plain text\"\n"
    "{\"prompt\": \"a b c\"}\n"
    "\n"
    "{\"instruction\": \"Spell out the digits.\", \"input\": \"0 4\"}\n"
    "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"ref\"}]}\n"
    "{\"conversations\": [{\"from\": \"human\", \"value\": \"one\"}]}\n";

TEST_F(GenerateCli, PromptFileResultsInInputOrderEqualTheIdsFormatAndOneByOne) {
  const fs::path prompts = write("prompts.jsonl", kPrompts);
  const fs::path out = folder_ / "out.jsonl";
  const CliRun to_file = zerotune(generate("--input_file " + prompts.string() + " --output_file " + out.string()));
  ASSERT_EQ(to_file.exit_code, 0) << to_file.output;
  std::vector<nlohmann::json> results;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) results.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(results[0]["prompt"], "plain text");
  EXPECT_EQ(results[1]["prompt"], "a b c");
  EXPECT_NE(results[2]["prompt"].get<std::string>().find("Spell out the digits.\n0 4"), std::string::npos);
  EXPECT_EQ(results[3]["prompt"].get<std::string>().find("ref"), std::string::npos)
      << "the reference answer is dropped";
  for (const auto& r : results) {
    EXPECT_EQ(r["output_ids"].size(), 6u);
    EXPECT_EQ(r["finish_reason"], "length");
  }

  const CliRun ids = zerotune(generate("--input_file " + prompts.string() + " --output_format ids --max_batch 2"));
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  const std::vector<nlohmann::json> lines = id_lines(ids.output);
  ASSERT_EQ(lines.size(), 5u) << ids.output;
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], results[i]["output_ids"]) << "prompt " << i;

  const CliRun alone = zerotune(generate("--prompt \"a b c\" --output_format ids"));
  ASSERT_EQ(id_lines(alone.output).size(), 1u) << alone.output;
  EXPECT_EQ(id_lines(alone.output)[0], results[1]["output_ids"]);
}

// Several answers as text: each after a line naming its prompt, in input order, the same
// text as the jsonl format's "output".
TEST_F(GenerateCli, TextAnswersOfSeveralPromptsAreSeparatedByTheirIndex) {
  const fs::path prompts = write("prompts.jsonl", "\"one\"\n\"two two\"\n\"three\"\n");
  const CliRun jsonl = zerotune(generate("--input_file " + prompts.string() + " --output_format jsonl"));
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.output;
  std::vector<std::string> outputs;
  std::istringstream lines(jsonl.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') outputs.push_back(nlohmann::json::parse(line)["output"]);
  ASSERT_EQ(outputs.size(), 3u) << jsonl.output;

  const CliRun text = zerotune(generate("--input_file " + prompts.string() + " --output_format text"));
  ASSERT_EQ(text.exit_code, 0) << text.output;
  std::size_t previous = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::string separator = "=== prompt " + std::to_string(i + 1) + " of 3 ===\n";
    const std::size_t at = text.output.find(separator, previous);
    ASSERT_NE(at, std::string::npos) << separator << text.output;
    EXPECT_EQ(text.output.substr(at + separator.size(), outputs[i].size() + 1), outputs[i] + "\n") << text.output;
    previous = at + separator.size();
  }
  const CliRun alone = zerotune(generate("--prompt one --output_format text"));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_EQ(alone.output.find("=== prompt"), std::string::npos) << "one answer needs no separator";
}

TEST_F(GenerateCli, BadRequestsAreClearErrors) {
  const CliRun long_prompt = zerotune(generate("--prompt \"$(printf 'word %.0s' $(seq 300))\" --max_new_tokens 10"));
  EXPECT_NE(long_prompt.exit_code, 0);
  EXPECT_NE(long_prompt.output.find("context of 256"), std::string::npos) << long_prompt.output;

  const CliRun missing = zerotune(generate("--prompt hi --adapter_name_or_path " + (folder_ / "nope").string()));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("nope"), std::string::npos) << missing.output;

  const CliRun mismatched = zerotune(generate("--prompt hi --adapter_name_or_path " + adapter_of_a_narrower_model()));
  EXPECT_NE(mismatched.exit_code, 0);
  EXPECT_NE(mismatched.output.find("lora_A"), std::string::npos) << mismatched.output;
  EXPECT_NE(mismatched.output.find("64"), std::string::npos) << mismatched.output;

  const fs::path bad = write("bad.jsonl", "{\"prompt\": \"ok\"}\n{\"question\": 1}\n");
  const CliRun bad_file = zerotune(generate("--input_file " + bad.string()));
  EXPECT_NE(bad_file.exit_code, 0);
  EXPECT_NE(bad_file.output.find("line 2"), std::string::npos) << bad_file.output;
  // A number beyond double's range is nlohmann's out_of_range, not a parse_error.
  const fs::path huge = write("huge.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": 1e400}\n");
  const CliRun huge_number = zerotune(generate("--input_file " + huge.string()));
  EXPECT_NE(huge_number.exit_code, 0);
  EXPECT_NE(huge_number.output.find("huge.jsonl:2: not valid JSON: number overflow parsing '1e400'"), std::string::npos)
      << huge_number.output;

  const CliRun both = zerotune(generate("--prompt hi --input_file " + bad.string()));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.output.find("give exactly one of --prompt or --input_file"), std::string::npos) << both.output;

  const CliRun format = zerotune(generate("--prompt hi --output_format xml"));
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.output.find("--output_format takes text, ids or jsonl, got 'xml'"), std::string::npos)
      << format.output;
}

TEST_F(GenerateCli, MergedLoraGivesTheTokensOfTheUnmergedOne) {
  const std::string adapter =
      " --adapter_name_or_path " + (fs::path(ZT_SOURCE_DIR) / "tests/data/models/qwen2_lora").string();
  const CliRun unmerged = zerotune(generate("--prompt \"a b c\" --output_format ids" + adapter));
  const CliRun merged = zerotune(generate("--prompt \"a b c\" --output_format ids --merge_lora" + adapter));
  const CliRun plain = zerotune(generate("--prompt \"a b c\" --output_format ids"));
  ASSERT_EQ(id_lines(unmerged.output).size(), 1u) << unmerged.output;
  ASSERT_EQ(id_lines(merged.output).size(), 1u) << merged.output;
  EXPECT_EQ(id_lines(merged.output)[0], id_lines(unmerged.output)[0]);
  EXPECT_NE(id_lines(plain.output)[0], id_lines(unmerged.output)[0]) << "the adapter changed nothing";
  const CliRun nothing = zerotune(generate("--prompt hi --merge_lora"));
  EXPECT_NE(nothing.exit_code, 0);
  EXPECT_NE(nothing.output.find("--adapter_name_or_path"), std::string::npos) << nothing.output;
}

TEST_F(GenerateCli, ChatKeepsHistoryAndResets) { expect_forgotten_between_the_same_questions("/reset", "/exit"); }

// llamafactory-cli chat's words, surrounding spaces ignored, do the same.
TEST_F(GenerateCli, ChatTakesLlamaFactoryClearAndExit) {
  expect_forgotten_between_the_same_questions(" clear ", "exit");
}

// Lines between two lines of """ are one turn, joined by newlines: the chat's answer is the
// one generate gives for that text as a user's turn (sampled, so that the prompt shows in it),
// and the block's lines are never turns of their own.
TEST_F(GenerateCli, ChatTakesATurnOfSeveralLinesBetweenTripleQuotes) {
  const std::string sampling = " --template qwen --do_sample --seed 3";
  const fs::path turns = write("turns.txt", "\"\"\"\nline one\nline two\n\"\"\"\n/exit\n");
  const CliRun chat = zerotune("chat --model_name_or_path " + kModel + " --device cpu --max_new_tokens 6" + sampling +
                               " < " + turns.string());
  ASSERT_EQ(chat.exit_code, 0) << chat.output;
  EXPECT_NE(chat.output.find("a line of \"\"\" starts a turn of several lines"), std::string::npos) << chat.output;
  const std::size_t at = chat.output.find("assistant> ");
  ASSERT_NE(at, std::string::npos) << chat.output;
  EXPECT_EQ(chat.output.find("assistant> ", at + 1), std::string::npos) << "one turn only: " << chat.output;
  // The answer runs up to the next prompt, or to the line saying it was cut at --max_new_tokens.
  const std::size_t end = std::min(chat.output.find("\nuser>", at), chat.output.find("\n[answer cut", at));
  const std::string answer = chat.output.substr(at + 11, end - at - 11);

  const fs::path prompt = write("prompt.jsonl", "\"line one\\nline two\"\n");
  const CliRun joined = zerotune(generate("--input_file " + prompt.string() + sampling + " --output_format jsonl"));
  ASSERT_EQ(joined.exit_code, 0) << joined.output;
  const std::size_t line = joined.output.find("{\"prompt\"");
  ASSERT_NE(line, std::string::npos) << joined.output;
  const nlohmann::json result =
      nlohmann::json::parse(joined.output.substr(line, joined.output.find('\n', line) - line));
  EXPECT_EQ(answer, result["output"].get<std::string>());
  const CliRun first_line = zerotune(generate("--prompt \"line one\" --output_format jsonl" + sampling));
  EXPECT_EQ(first_line.output.find(result["output"].dump()), std::string::npos)
      << "the sampled answer depends on the whole prompt, so the comparison above means something";
}

// The shipped model's generation_config.json sets no length: an answer is not cut at
// transformers' legacy 20 tokens but runs to its eos or the end of the 256-token context,
// and the cut is said (generate on stderr, chat on a line of its own), with what raises it.
TEST_F(GenerateCli, WithoutALimitAnAnswerRunsToTheContextAndACutIsSaid) {
  const std::string plain = "generate --model_name_or_path " + kModel + " --device cpu ";
  const CliRun run = zerotune(plain + "--prompt \"a b c\" --output_format jsonl");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::size_t line = run.output.find("{\"prompt\"");
  ASSERT_NE(line, std::string::npos) << run.output;
  const nlohmann::json result = nlohmann::json::parse(run.output.substr(line, run.output.find('\n', line) - line));
  const CliRun tokens =
      zerotune("tokenize --model_name_or_path " + kModel + " < " + write("abc.txt", "a b c\n").string());
  ASSERT_EQ(id_lines(tokens.output).size(), 1u) << tokens.output;
  const std::size_t prompt_tokens = id_lines(tokens.output)[0].size();
  ASSERT_EQ(result["finish_reason"], "length") << "the tiny model runs to the end of its context: " << run.output;
  EXPECT_GT(result["output_ids"].size(), 20u);
  EXPECT_EQ(result["output_ids"].size(), 256 - prompt_tokens) << run.output;
  EXPECT_NE(run.output.find("generate: the answer was cut at the length limit"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("fill the model's context of 256 tokens"), std::string::npos) << run.output;

  // generation_config.json's max_length counts the prompt too, as in transformers.
  const fs::path model = folder_ / "limited_model";
  fs::create_directories(model);
  for (const auto& entry : fs::directory_iterator(kModel)) fs::copy_file(entry.path(), model / entry.path().filename());
  std::ofstream(model / "generation_config.json") << R"({"eos_token_id": [502, 500], "max_length": 40})";
  const CliRun limited = zerotune("generate --model_name_or_path " + model.string() +
                                  " --device cpu --prompt \"a b c\" --output_format ids");
  ASSERT_EQ(limited.exit_code, 0) << limited.output;
  ASSERT_EQ(id_lines(limited.output).size(), 1u) << limited.output;
  EXPECT_EQ(id_lines(limited.output)[0].size(), 40 - prompt_tokens);
  EXPECT_NE(limited.output.find("generation_config.json's max_length of 40 tokens, which counts the prompt too"),
            std::string::npos)
      << limited.output;

  const fs::path turns = write("turns.txt", "hello again\n/exit\n");
  const CliRun chat =
      zerotune("chat --model_name_or_path " + kModel + " --device cpu --max_new_tokens 5 < " + turns.string());
  ASSERT_EQ(chat.exit_code, 0) << chat.output;
  EXPECT_NE(chat.output.find("\n[answer cut at 5 new tokens: --max_new_tokens 5; a larger --max_new_tokens allows "
                             "more]\n"),
            std::string::npos)
      << chat.output;
  // Without a limit the same turn runs on to the context, and the next one finds no room.
  const fs::path two = write("two.txt", "hello again\nand again\n/exit\n");
  const CliRun long_chat = zerotune("chat --model_name_or_path " + kModel + " --device cpu < " + two.string());
  ASSERT_EQ(long_chat.exit_code, 0) << long_chat.output;
  EXPECT_NE(long_chat.output.find("fill the model's context of 256 tokens"), std::string::npos) << long_chat.output;
  EXPECT_NE(long_chat.output.find("; /reset starts a new conversation]"), std::string::npos) << long_chat.output;
  EXPECT_NE(long_chat.output.find("[no room for an answer: the conversation ("), std::string::npos) << long_chat.output;
}

}  // namespace
