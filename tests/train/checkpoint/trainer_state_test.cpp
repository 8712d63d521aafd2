// trainer_state.json as a resume reads it: HF's files, fields that are null, and damaged files
// refused by name rather than with an exception of the JSON library or an undefined conversion
// (found by fuzz/trainer_state_fuzz).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tests/common/op_test_util.h"
#include "train/checkpoint/trainer_state.h"

namespace zt::train {
namespace {

using testing::error_of;
using testing::expect_mentions;

TEST(TrainerState, ReadsHfFileWithNullsAndWholeFloats) {
  const TrainerState s = parse_trainer_state(
      R"({"best_global_step": null, "best_metric": 0.25, "best_model_checkpoint": "out/checkpoint-40", "epoch": 0.32,
          "eval_steps": 50, "global_step": 40, "log_history": [{"loss": 1.5, "step": 10}], "logging_steps": 10.0,
          "max_steps": 500, "num_input_tokens_seen": 81920, "num_train_epochs": 4, "save_steps": 40,
          "total_flos": 1.2e16, "train_batch_size": null, "trial_name": null})",
      "trainer_state.json");
  EXPECT_EQ(s.global_step, 40);
  EXPECT_EQ(s.logging_steps, 10);
  EXPECT_EQ(s.train_batch_size, 0);  // null: the default
  EXPECT_EQ(s.num_input_tokens_seen, 81920);
  EXPECT_EQ(s.best_metric, 0.25);
  EXPECT_FALSE(s.best_global_step.has_value());
  EXPECT_EQ(s.best_model_checkpoint, "out/checkpoint-40");
  EXPECT_EQ(s.log_history.size(), 1u);
}

// transformers before 4.52 has no best_global_step field and fails on a file that names it:
// written only with a value.
TEST(TrainerState, BestGlobalStepIsWrittenOnlyWithAValue) {
  TrainerState s;
  EXPECT_FALSE(to_json(s).contains("best_global_step"));
  s.best_global_step = 40;
  EXPECT_EQ(to_json(s).at("best_global_step"), 40);
  EXPECT_EQ(parse_trainer_state(to_json(s).dump(), "trainer_state.json").best_global_step,
            std::optional<std::int64_t>(40));
}

// transformers builds TrainerState(**fields): every key written must be a field of the oldest
// version read (4.40's, before stateful_callbacks and best_global_step), so the file loads there.
TEST(TrainerState, EveryKeyWrittenIsAFieldOfTransformers440) {
  const std::set<std::string> fields_4_40 = {"epoch",
                                             "global_step",
                                             "max_steps",
                                             "logging_steps",
                                             "eval_steps",
                                             "save_steps",
                                             "train_batch_size",
                                             "num_train_epochs",
                                             "num_input_tokens_seen",
                                             "total_flos",
                                             "log_history",
                                             "best_metric",
                                             "best_model_checkpoint",
                                             "is_local_process_zero",
                                             "is_world_process_zero",
                                             "is_hyper_param_search",
                                             "trial_name",
                                             "trial_params"};
  const nlohmann::json written = to_json(TrainerState{});
  for (const auto& [key, value] : written.items()) EXPECT_EQ(fields_4_40.count(key), 1u) << key;
}

TEST(TrainerState, WhatTheTrainerWritesReadsBackTheSame) {
  TrainerState s;
  s.global_step = 7;
  s.epoch = 1.5;
  s.best_metric = 0.5;
  s.log_history.push_back({{"loss", 2.0}, {"step", 7}});
  const TrainerState again = parse_trainer_state(to_json(s).dump(), "trainer_state.json");
  EXPECT_EQ(again.global_step, 7);
  EXPECT_EQ(again.epoch, 1.5);
  EXPECT_EQ(again.best_metric, 0.5);
  EXPECT_EQ(again.log_history, s.log_history);
}

TEST(TrainerState, DamagedFilesNameTheFileAndField) {
  const char* file = "out/checkpoint-40/trainer_state.json";
  expect_mentions(error_of([&] { parse_trainer_state(R"([{"global_step": 1}])", file); }), {file, "JSON object"});
  expect_mentions(error_of([&] { parse_trainer_state(R"({"global_step": "40"})", file); }),
                  {file, "'global_step'", "integer", "\"40\""});
  expect_mentions(error_of([&] { parse_trainer_state(R"({"global_step": 1e300})", file); }), {"'global_step'"});
  expect_mentions(error_of([&] { parse_trainer_state(R"({"num_input_tokens_seen": 18446744073709551615})", file); }),
                  {"'num_input_tokens_seen'"});
  expect_mentions(error_of([&] { parse_trainer_state(R"({"epoch": [1]})", file); }), {"'epoch'", "number"});
  expect_mentions(error_of([&] { parse_trainer_state(R"({"best_model_checkpoint": 3})", file); }),
                  {"'best_model_checkpoint'", "string"});
  expect_mentions(error_of([&] { parse_trainer_state(R"({"log_history": {"loss": 1}})", file); }), {"'log_history'"});
  expect_mentions(error_of([&] { parse_trainer_state(R"({"log_history": [{"loss": 1, "step": "ten"}]})", file); }),
                  {"log_history", "step", "ten"});
  expect_mentions(error_of([&] { parse_trainer_state("{not json", file); }), {file, "not valid JSON"});
}

std::string published_state(const std::string& name) {
  const std::filesystem::path path =
      std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/hub_metadata/trainer_states" / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// trainer_state.json files that HF's Trainer (and TRL's trainers on it) wrote, from the first
// versions without logging_steps to those with stateful_callbacks and best_global_step
// (tests/data/hub_metadata/README.md): each reads, with the values a resume takes from it.
TEST(TrainerState, PublishedFilesOfSeveralTransformersVersions) {
  struct Expected {
    const char* file;
    std::int64_t global_step;
    double epoch;
    std::int64_t max_steps;
    std::int64_t logging_steps;
    std::int64_t train_batch_size;
    std::int64_t num_input_tokens_seen;
    double total_flos;
    std::size_t entries;
  };
  const Expected states[] = {
      {"bart-large-cnn-samsum.json", 693, 3.0, 693, 500, 0, 0, 3.5424926764630016e+16, 2},
      {"linebot-summary-only.json", 300, 100.0, 300, 500, 0, 0, 156775219200000.0, 1},
      {"chatglm2-6b-int4-prefix-checkpoint-1000.json", 1000, 0.09235955575053684, 3000, 500, 0, 0, 5.7864771305472e+16,
       100},
      {"whisper-large-v2-japanese.json", 5000, 38.16793893129771, 5000, 500, 0, 0, 5.27162132754432e+20, 206},
      {"chatglm-cpt-predict.json", 5490, 10.0, 5490, 500, 6, 0, 3.718809382109184e+16, 31},
      {"mistral-7b-translator-checkpoint-1000.json", 1000, 0.4618937644341801, 8660, 10, 1, 0, 2.714316759199908e+17,
       100},
      {"finance-advice-empty-log.json", 87, 3.0, 87, 500, 16, 0, 181612803557376.0, 0},
      {"falcon-rw-1b-lora-imdb.json", 125, 1.0, 125, 10, 2, 0, 929414774784000.0, 12},
      {"tau-bench-grpo.json", 12, 3.0, 12, 10, 2, 117284, 0.0, 1},
      {"smolvlm-endoscopy-qa.json", 900, 2.8768000000000002, 939, 10, 1, 0, 2.790347781310294e+17, 108},
  };
  for (const Expected& expected : states) {
    const TrainerState s = parse_trainer_state(published_state(expected.file), expected.file);
    EXPECT_EQ(s.global_step, expected.global_step) << expected.file;
    EXPECT_DOUBLE_EQ(s.epoch, expected.epoch) << expected.file;
    EXPECT_EQ(s.max_steps, expected.max_steps) << expected.file;
    EXPECT_EQ(s.logging_steps, expected.logging_steps) << expected.file;
    EXPECT_EQ(s.train_batch_size, expected.train_batch_size) << expected.file;
    EXPECT_EQ(s.num_input_tokens_seen, expected.num_input_tokens_seen) << expected.file;
    EXPECT_DOUBLE_EQ(s.total_flos, expected.total_flos) << expected.file;
    EXPECT_EQ(s.log_history.size(), expected.entries) << expected.file;
    // What zerotune writes back of it reads the same.
    const TrainerState again = parse_trainer_state(to_json(s).dump(2), expected.file);
    EXPECT_EQ(again.global_step, s.global_step) << expected.file;
    EXPECT_EQ(again.log_history, s.log_history) << expected.file;
  }
  const TrainerState whisper = parse_trainer_state(published_state("whisper-large-v2-japanese.json"), "whisper");
  EXPECT_EQ(whisper.best_metric, 0.7431560204762965);
  EXPECT_EQ(whisper.best_model_checkpoint, "/storage/elsayedissa/whisper-large-v2-japanese-24h/checkpoint-3000");
  EXPECT_FALSE(whisper.best_global_step.has_value());  // before transformers 4.52
  const TrainerState smolvlm = parse_trainer_state(published_state("smolvlm-endoscopy-qa.json"), "smolvlm");
  EXPECT_EQ(smolvlm.best_global_step, std::optional<std::int64_t>(900));
  EXPECT_EQ(smolvlm.best_metric, 0.0021693608723580837);
  EXPECT_EQ(smolvlm.eval_steps, 50);
  EXPECT_EQ(smolvlm.save_steps, 50);
  const TrainerState old = parse_trainer_state(published_state("bart-large-cnn-samsum.json"), "bart");
  EXPECT_EQ(old.save_steps, 500);  // absent: HF's default
  EXPECT_EQ(old.num_train_epochs, 3.0);
}

// Python's json writes a diverged loss or an fp16 overflow's gradient norm as NaN or Infinity,
// which JSON lacks; HF's Trainer logs them so (grad_norm is Infinity on a step the loss scaler
// skips). They read as null, as zerotune writes a value that is not finite.
TEST(TrainerState, PythonNonFiniteNumbersReadAsNull) {
  const TrainerState s = parse_trainer_state(
      R"({"best_metric": NaN, "global_step": 20, "log_history": [
            {"epoch": 0.02, "grad_norm": Infinity, "learning_rate": 0.0002, "loss": 14577.9766, "step": 10},
            {"epoch": 0.04, "grad_norm": NaN, "learning_rate": 0.0002, "loss": 0.0, "step": 20},
            {"eval_loss": -Infinity, "note": "NaN Infinity", "step": 20}],
          "total_flos": 1.5e16})",
      "trainer_state.json");
  EXPECT_EQ(s.global_step, 20);
  EXPECT_FALSE(s.best_metric.has_value());
  ASSERT_EQ(s.log_history.size(), 3u);
  EXPECT_TRUE(s.log_history[0]["grad_norm"].is_null());
  EXPECT_TRUE(s.log_history[1]["grad_norm"].is_null());
  EXPECT_EQ(s.log_history[1]["loss"], 0.0);
  EXPECT_TRUE(s.log_history[2]["eval_loss"].is_null());
  EXPECT_EQ(s.log_history[2]["note"], "NaN Infinity");  // inside a string: text
  expect_mentions(error_of([] { parse_trainer_state(R"({"global_step": NaNa})", "t.json"); }), {"t.json", "JSON"});
}

}  // namespace
}  // namespace zt::train
