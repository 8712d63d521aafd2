// The messages of a resume that changes the run: one per changed setting, each saying what
// the new global batch or length means for the data, the step count and the schedule, with
// numbers worked out here by hand.
#include <gtest/gtest.h>

#include "train/checkpoint/resume_changes.h"

namespace zt::train {
namespace {

// Saved: 2 per device x 4 accumulation x 2 ranks = 16 samples a step, 10 steps.
constexpr RunGeometry kSaved{
    .micro_batch = 2, .accumulation = 4, .world_size = 2, .max_steps = 10, .num_train_epochs = 2.0};
const ResumePoint kPoint{.checkpoint = "out/checkpoint-6", .global_step = 6, .epoch = 1, .samples_in_epoch = 16};

ResumedRun resumed(RunGeometry geometry, std::int64_t steps_per_epoch = 5) {
  return {.geometry = geometry, .steps_per_epoch = steps_per_epoch, .warmup_steps = 0, .next_lr = 2e-5};
}

TEST(ResumeChanges, NothingChangedSaysNothing) {
  EXPECT_TRUE(resume_change_notes(kSaved, kPoint, resumed(kSaved)).empty());
}

TEST(ResumeChanges, ALargerPerDeviceBatchSaysWhereTheDataGoesOn) {
  RunGeometry now = kSaved;
  now.micro_batch = 4;  // 32 samples a step; the epoch of 80 samples (10 steps of 16 over 2 epochs) has 3 steps
  now.max_steps = 10;
  const std::vector<std::string> notes = resume_change_notes(kSaved, kPoint, resumed(now, 3));
  ASSERT_EQ(notes.size(), 1u);
  // HF: epoch 6 / 3 = 2, 6 % 3 = 0 steps into it.
  EXPECT_EQ(notes[0],
            "resuming out/checkpoint-6 with per_device_train_batch_size 4 where it trained with 2: a step now takes 32 "
            "samples instead of 16 (4 per device x 4 accumulation x 2 rank(s)). Training goes on after the 16 samples "
            "of epoch 1 the checkpoint had trained on (HF Trainer counts steps instead and would go on after 0 samples "
            "of epoch 2), and step numbers go on from 6, so steps before and after the resume are not the same amount "
            "of data; --gradient_accumulation_steps 2 keeps the global batch of 16");
}

TEST(ResumeChanges, MoreRanksWithLessAccumulationKeepTheGlobalBatch) {
  RunGeometry now = kSaved;
  now.world_size = 4;
  now.accumulation = 2;
  const std::vector<std::string> notes = resume_change_notes(kSaved, kPoint, resumed(now));
  ASSERT_EQ(notes.size(), 2u) << "one for each changed setting";
  const std::string same =
      "the global batch stays 16 samples a step (2 per device x 2 accumulation x 4 rank(s)), so "
      "training goes on with the next global batch, as the uninterrupted run would";
  EXPECT_EQ(notes[0], "resuming out/checkpoint-6 with gradient_accumulation_steps 2 where it trained with 4: " + same);
  EXPECT_EQ(notes[1],
            "resuming out/checkpoint-6 on 4 rank(s) where it trained on 2 (the optimizer state is read by parameter "
            "name into the new partitions): with the change above, the global batch stays 16 samples a step");
}

TEST(ResumeChanges, ALongerRunReDerivesTheSchedule) {
  RunGeometry now = kSaved;
  now.max_steps = 20;
  ResumedRun run = resumed(now);
  run.max_steps_given = true;
  run.warmup_steps = 2;
  const std::vector<std::string> notes = resume_change_notes(kSaved, kPoint, run);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "resuming out/checkpoint-6 with max_steps 20 where the checkpoint's run had 10: 14 steps are left, and the "
            "learning-rate schedule is that of a run of 20 steps (2 warm-up steps) from step 7 on, as HF Trainer "
            "re-derives it on resume: the next step trains at learning rate 2e-05");

  now.num_train_epochs = 4.0;  // max_steps follows from the epochs
  const std::vector<std::string> epochs = resume_change_notes(kSaved, kPoint, resumed(now));
  ASSERT_EQ(epochs.size(), 1u);
  EXPECT_EQ(epochs[0].find("resuming out/checkpoint-6 with num_train_epochs 4 where the checkpoint's run had 2: "
                           "max_steps 20 instead of 10: 14 steps are left"),
            0u)
      << epochs[0];
}

TEST(ResumeChanges, AShorterRunThanTheCheckpointHasNothingLeft) {
  RunGeometry now = kSaved;
  now.max_steps = 5;
  ResumedRun run = resumed(now);
  run.max_steps_given = true;
  const std::vector<std::string> notes = resume_change_notes(kSaved, kPoint, run);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "resuming out/checkpoint-6 with max_steps 5 where the checkpoint's run had 10: the checkpoint is at step 6 "
            "already, so no step is left to train; the final model is saved as the checkpoint holds it");
}

// An older checkpoint records the per-device batch only (trainer_state.json's
// train_batch_size): accumulation and world size are then not compared.
TEST(ResumeChanges, AnOlderCheckpointIsComparedOnWhatItRecords) {
  TrainerState state;
  state.train_batch_size = 2;
  state.max_steps = 10;
  state.num_train_epochs = 2.0;
  const RunGeometry old = saved_geometry(state, {{"global_step", 6}, {"world_size", "two"}});
  EXPECT_EQ(old.micro_batch, 2);
  EXPECT_EQ(old.accumulation, 0);
  EXPECT_EQ(old.world_size, 0) << "a field of the wrong type is not known";
  RunGeometry now = kSaved;
  now.accumulation = 8;
  now.world_size = 1;
  EXPECT_TRUE(resume_change_notes(old, kPoint, resumed(now)).empty());
  const RunGeometry recorded =
      saved_geometry(state, {{"micro_batch", 2}, {"gradient_accumulation_steps", 4}, {"world_size", 2}});
  EXPECT_EQ(recorded.global_batch(), 16);
  EXPECT_EQ(resume_change_notes(recorded, kPoint, resumed(now)).size(), 2u);
}

}  // namespace
}  // namespace zt::train
