// `zerotune evaluate` run as a user runs it on the shipped tiny model (CPU): on the data file a
// training run evaluated, the saved model gives the eval_loss the trainer logged; the label
// rules, --template, --max_length and --overlong_samples are training's; plain-text files are
// scored as run_clm scores them; bad flags are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/common/process_test_util.h"
#include "tests/common/train_log_test_util.h"

namespace {

namespace fs = std::filesystem;
using zt::testing::CliRun;

using zt::testing::kAlpacaDemo;
using zt::testing::kTinyQwen;

class EvaluateCli : public zt::testing::CliTest {
 protected:
  // The JSON report of `zerotune evaluate <arguments>` (its last lines; log lines come first).
  nlohmann::json evaluate(const std::string& arguments) {
    const CliRun run = zerotune("evaluate --device cpu " + arguments);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const std::size_t start = run.output.find('{');
    if (run.exit_code != 0 || start == std::string::npos) return nlohmann::json::object();
    return nlohmann::json::parse(run.output.substr(start));
  }

  // `zerotune train` on the demo data, evaluating on `validation`: the eval_loss values it logged.
  std::vector<double> logged_eval_losses(const fs::path& out, const std::string& validation, const std::string& flags) {
    const CliRun train =
        zerotune("train --model_name_or_path " + kTinyQwen + " --train_file " + kAlpacaDemo + " --validation_file " +
                 validation + " --device cpu --per_device_eval_batch_size 4 --max_length 128 --save_strategy no " +
                 flags + " --output_dir " + out.string());
    EXPECT_EQ(train.exit_code, 0) << train.output;
    return zt::testing::logged_values(out, "eval_loss");
  }

  // A validation file of conversations in OpenAI's messages format, some long.
  std::string conversations() {
    const fs::path path = dir_ / "validation.jsonl";
    std::ofstream out(path);
    for (int i = 0; i < 6; ++i) {
      std::string question = "Spell out the digits. " + std::to_string(i) + " " + std::to_string(9 - i);
      if (i % 3 == 0)
        for (int k = 0; k < 30; ++k) question += " and " + std::to_string(k);
      out << nlohmann::json{{"messages",
                             {{{"role", "user"}, {"content", question}},
                              {{"role", "assistant"}, {"content", "zero " + std::to_string(i)}}}}}
                 .dump()
          << "\n";
    }
    return path.string();
  }
};

TEST_F(EvaluateCli, GivesTheEvalLossTheTrainerLoggedForTheSameFileAndModel) {
  const std::string validation = conversations();
  const fs::path trained = dir_ / "trained";
  const std::vector<double> logged = logged_eval_losses(
      trained, validation,
      "--finetuning_type full --max_steps 4 --per_device_train_batch_size 4 --learning_rate 5e-3 --eval_strategy steps "
      "--eval_steps 4");
  ASSERT_EQ(logged.size(), 1u);

  const nlohmann::json report = evaluate("--model_name_or_path " + trained.string() + " --validation_file " +
                                         validation + " --max_length 128 --per_device_eval_batch_size 4");
  ASSERT_TRUE(report.contains("eval_loss")) << report.dump();
  // The log rounds to 4 decimals.
  EXPECT_NEAR(report["eval_loss"].get<double>(), logged[0], 6e-5);
  EXPECT_NEAR(report["perplexity"].get<double>(), std::exp(report["eval_loss"].get<double>()), 1e-9);
  EXPECT_EQ(report["eval_samples"], 6);

  const nlohmann::json untrained =
      evaluate("--model_name_or_path " + kTinyQwen + " --validation_file " + validation + " --max_length 128");
  EXPECT_GT(std::abs(untrained["eval_loss"].get<double>() - logged[0]), 1e-3) << "training changed nothing";
}

// A 4-bit base (--quantization_bit 4, as a QLoRA run trains on): the loss a QLoRA run logs on
// start, before any update (its LoRA B is zero), is the quantized base's; near the dense one.
TEST_F(EvaluateCli, AFourBitBaseGivesTheLossAQloraRunLogsOnStart) {
  const std::string validation = conversations();
  const std::vector<double> logged = logged_eval_losses(
      dir_ / "qlora", validation, "--finetuning_type lora --quantization_bit 4 --max_steps 1 --eval_on_start");
  ASSERT_FALSE(logged.empty());
  const std::string common = "--model_name_or_path " + kTinyQwen + " --validation_file " + validation +
                             " --max_length 128 --per_device_eval_batch_size 4";
  const CliRun run = zerotune("evaluate --device cpu " + common + " --quantization_bit 4");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("4-bit"), std::string::npos) << "the log says the base is held in 4 bits\n" << run.output;
  const nlohmann::json four_bit = nlohmann::json::parse(run.output.substr(run.output.find('{')));
  EXPECT_NEAR(four_bit["eval_loss"].get<double>(), logged[0], 6e-5);
  const double dense = evaluate(common)["eval_loss"].get<double>();
  EXPECT_NE(four_bit["eval_loss"].get<double>(), dense);
  EXPECT_NEAR(four_bit["eval_loss"].get<double>(), dense, 0.05 * dense);
}

TEST_F(EvaluateCli, ScoresWhatTrainingLabels) {
  const std::string base = "--model_name_or_path " + kTinyQwen + " --validation_file " + conversations();
  const nlohmann::json replies = evaluate(base);
  const nlohmann::json everything = evaluate(base + " --train_on_prompt");
  ASSERT_TRUE(replies.contains("eval_tokens") && everything.contains("eval_tokens"));
  // Each reply is "zero N" and <|im_end|> (3 tokens or more); the prompts are far longer.
  EXPECT_GE(replies["eval_tokens"].get<int>(), 6 * 3);
  EXPECT_GT(everything["eval_tokens"].get<int>(), 3 * replies["eval_tokens"].get<int>());

  // Two of the six conversations are long (242 tokens, the others 72): cut to 128 tokens they
  // keep their reply, or are left out.
  const nlohmann::json cut = evaluate(base + " --max_length 128");
  const nlohmann::json skipped = evaluate(base + " --max_length 128 --overlong_samples skip");
  EXPECT_EQ(cut["eval_samples"], 6);
  EXPECT_EQ(cut["eval_tokens"], replies["eval_tokens"]) << "truncation keeps every reply";
  EXPECT_EQ(skipped["eval_samples"], 4);
  EXPECT_EQ(skipped["eval_tokens"].get<int>() * 6, replies["eval_tokens"].get<int>() * 4) << "replies of one length";

  // Through another template the same conversations are other tokens.
  const nlohmann::json plain = evaluate(base + " --template none --train_on_prompt");
  EXPECT_NE(plain["eval_tokens"], everything["eval_tokens"]);
}

TEST_F(EvaluateCli, ScoresPlainTextAsRunClmDoesWithoutAnAppendedEos) {
  const std::vector<std::string> texts = {"Spell out the digits. 0 4", "zero four"};
  std::ofstream lines(dir_ / "lines.txt"), jsonl(dir_ / "texts.jsonl");
  for (const std::string& text : texts) {
    lines << text << "\n";
    jsonl << nlohmann::json{{"text", text}}.dump() << "\n";
  }
  lines.close();
  jsonl.close();
  const CliRun tokenized =
      zerotune("tokenize --model_name_or_path " + kTinyQwen + " < " + (dir_ / "lines.txt").string());
  ASSERT_EQ(tokenized.exit_code, 0) << tokenized.output;
  std::istringstream arrays(tokenized.output);
  int predicted = 0;
  for (std::string line; std::getline(arrays, line);)
    if (!line.empty() && line.front() == '[') predicted += static_cast<int>(nlohmann::json::parse(line).size()) - 1;
  const nlohmann::json report =
      evaluate("--model_name_or_path " + kTinyQwen + " --validation_file " + (dir_ / "texts.jsonl").string());
  // Every token after the first is predicted, and nothing after the last (training appends eos).
  EXPECT_EQ(report["eval_tokens"], predicted);
  EXPECT_EQ(report["eval_samples"], 2);
}

TEST_F(EvaluateCli, RefusesBadFlagsByName) {
  const std::string base =
      "evaluate --device cpu --model_name_or_path " + kTinyQwen + " --validation_file " + kAlpacaDemo;
  const CliRun overlong = zerotune(base + " --overlong_samples drop");
  EXPECT_EQ(overlong.exit_code, 2) << overlong.output;
  EXPECT_NE(overlong.output.find("--overlong_samples takes truncate or skip, got 'drop'"), std::string::npos)
      << overlong.output;
  const CliRun length = zerotune(base + " --max_length 0");
  EXPECT_EQ(length.exit_code, 2) << length.output;
  EXPECT_NE(length.output.find("--max_length must be a positive whole number, got '0'"), std::string::npos)
      << length.output;
  const CliRun missing = zerotune("evaluate --device cpu --model_name_or_path " + kTinyQwen + " --validation_file " +
                                  (dir_ / "absent.json").string());
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("absent.json"), std::string::npos) << missing.output;
}

}  // namespace
