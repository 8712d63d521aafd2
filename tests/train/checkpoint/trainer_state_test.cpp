// trainer_state.json as a resume reads it: HF's files, fields that are null, and damaged files
// refused by name rather than with an exception of the JSON library or an undefined conversion
// (found by fuzz/trainer_state_fuzz).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace zt::train
