// The configuration `zerotune estimate` recommends (train/memory_recommendation.h), for a
// Qwen2.5-7B-shaped model on 24 GiB GPUs (RTX 3090/4090, A10), as people train it on 2, 4 and 8
// of them, and on 80 GiB cards: the recommendation fits its own estimate within 90% of the card,
// the trainer runs it, and nothing faster fits.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/config/config.h"
#include "train/memory_recommendation.h"

namespace zt::train {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

models::ModelConfig qwen25_7b() {
  return models::load_config((std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/models/qwen2.5-7b").string());
}

MemorySettings on_gpus(int gpus, std::int64_t micro_batch = 1) {
  return {.gpus_per_node = gpus, .micro_batch = micro_batch, .max_length = 1024};
}

std::vector<std::int64_t> lora_all_rank8(const models::ModelConfig& config) {
  return lora_trainable_numels(config, 8, "all");
}

std::optional<Recommendation> recommend(const MemorySettings& asked, MemoryBudget budget) {
  const models::ModelConfig config = qwen25_7b();
  return recommend_configuration(config, asked, budget, lora_all_rank8(config));
}

// The settings with the least GPU memory a ZeRO row allows: checkpointing and micro-batch 1.
MemorySettings smallest(MemorySettings s, ZeroRow row) {
  s.stage = row.stage;
  s.offload = row.offload;
  s.offload_param = row.offload_param;
  s.gradient_checkpointing = true;
  s.micro_batch = 1;
  return s;
}

void expect_real(const Recommendation& r, const MemoryBudget& budget) {
  const MemoryEstimate again = estimate_memory(qwen25_7b(), r.settings);
  EXPECT_EQ(again.gpu_total(), r.estimate.gpu_total());
  EXPECT_LE(again.gpu_total(), budget.gpu_bytes * 9 / 10) << "a recommendation leaves a tenth of the card free";
  if (budget.host_bytes) {
    EXPECT_LE(again.host_per_node(), *budget.host_bytes);
  }
  EXPECT_TRUE(trainer_runs(r.settings.stage, r.settings.offload));
  EXPECT_TRUE(!r.settings.offload_param || r.settings.stage == 3) << "parameter offload is stage 3's";
}

std::string row_name(ZeroRow row) {
  return "stage " + std::to_string(row.stage) + (row.offload ? " with optimizer offload" : "") +
         (row.offload_param ? " with parameter offload" : "");
}

// Every row without parameter offload, each at its smallest, needs more than `gpu_bytes`.
void expect_nothing_without_parameter_offload_fits(const MemorySettings& asked, std::int64_t gpu_bytes) {
  for (const ZeroRow row : kFastestFirst)
    if (!row.offload_param) {
      EXPECT_GT(estimate_memory(qwen25_7b(), smallest(asked, row)).gpu_total(), gpu_bytes) << row_name(row);
    }
}

// Two to eight 24 GiB cards: with the optimizer offloaded its fp32 gradient partition goes to
// the host too, as DeepSpeed's does, so stage 2 holds the bf16 weights (2Ψ, 14.2 GiB), its
// buckets and the activations: it fits with gradient checkpointing, and nothing faster does.
TEST(MemoryRecommendation, SevenBillionOnTwoToEightCardsOf24GiBOffloadsTheOptimizerAtStageTwo) {
  const models::ModelConfig config = qwen25_7b();
  EXPECT_NEAR(static_cast<double>(estimate_memory(config, on_gpus(8)).model_parameters), 7.6156e9, 1e6);
  const MemoryBudget budget{.gpu_bytes = 24 * kGiB};
  for (int gpus : {2, 4, 8}) {
    SCOPED_TRACE(std::to_string(gpus) + " GPUs");
    const std::optional<Recommendation> r = recommend(on_gpus(gpus), budget);
    ASSERT_TRUE(r.has_value());
    expect_real(*r, budget);
    EXPECT_FALSE(r->switched_to_lora);
    EXPECT_TRUE(r->settings.full_finetuning());
    EXPECT_EQ(r->settings.stage, 2);
    EXPECT_TRUE(r->settings.offload);
    EXPECT_FALSE(r->settings.offload_param);
    EXPECT_TRUE(r->settings.gradient_checkpointing);
    EXPECT_EQ(r->estimate.gpu.gradients, 0) << "the fp32 gradient partition is in host memory";
    for (const ZeroRow row : {ZeroRow{0, false}, ZeroRow{1, false}, ZeroRow{2, false}, ZeroRow{1, true}})
      EXPECT_GT(estimate_memory(config, smallest(on_gpus(gpus), row)).gpu_total(), budget.usable_gpu_bytes())
          << row_name(row);
    for (const ZeroRow row : kFastestFirst) {
      MemorySettings unchecked = smallest(on_gpus(gpus), row);
      unchecked.gradient_checkpointing = false;
      EXPECT_TRUE(recomputes_layers(unchecked) ||
                  estimate_memory(config, unchecked).gpu_total() > budget.usable_gpu_bytes())
          << row_name(row) << " fits without checkpointing, which is faster";
    }
    MemorySettings unchecked = r->settings;
    unchecked.gradient_checkpointing = false;
    EXPECT_GT(estimate_memory(config, unchecked).gpu_total(), budget.usable_gpu_bytes()) << "checkpointing was needed";
  }
}

// Where the optimizer offload fits with room to spare, the GPU keeps as much of the update as
// fits (partial offload, offload_optimizer.ratio): the smallest CPU share in tenths, with the
// gradients on the GPU; one tenth less does not fit.
// (40 GiB: where stage 1 with its whole bf16 gradients and every update on the CPU does not fit.)
TEST(MemoryRecommendation, OffloadKeepsTheLargestGpuShareThatFits) {
  const MemoryBudget budget{.gpu_bytes = 40 * kGiB};
  const std::optional<Recommendation> r = recommend(on_gpus(4), budget);
  ASSERT_TRUE(r.has_value());
  expect_real(*r, budget);
  EXPECT_TRUE(r->settings.offload);
  ASSERT_LT(r->settings.offload_ratio, 1.0) << "a 40 GiB card holds part of the update";
  EXPECT_GT(r->settings.offload_ratio, 0.0);
  EXPECT_GT(r->estimate.gpu.gradients, 0) << "a partial offload keeps the gradients on the GPU";
  EXPECT_GT(r->estimate.gpu.optimizer_state, 0);
  MemorySettings more_on_gpu = r->settings;
  more_on_gpu.offload_ratio -= 0.1;
  EXPECT_GT(estimate_memory(qwen25_7b(), more_on_gpu).gpu_total(), budget.usable_gpu_bytes());
}

// A recommendation within `budget` that trains every parameter under stage 3 with parameter and
// optimizer offload.
void expect_full_offload_recommended(const std::optional<Recommendation>& r, const MemoryBudget& budget) {
  ASSERT_TRUE(r.has_value());
  expect_real(*r, budget);
  EXPECT_FALSE(r->switched_to_lora);
  EXPECT_EQ(r->settings.stage, 3);
  EXPECT_TRUE(r->settings.offload);
  EXPECT_TRUE(r->settings.offload_param);
}

MemorySettings one_gpu_2048_checkpointed() {
  MemorySettings s = on_gpus(1);
  s.max_length = 2048;
  s.gradient_checkpointing = true;
  return s;
}

// One GPU: the weights must leave it. Stage 3 with parameter and optimizer offload keeps only
// the modules gathered, their gradient bucket and the activations on the GPU (the fp32
// gradient partition is in host memory with the optimizer): a 24 GiB card trains every
// parameter of a 7B model at 2,048 tokens, which nothing else fits.
TEST(MemoryRecommendation, SevenBillionOnOneCardOf24GiBOffloadsParametersAndOptimizer) {
  const MemorySettings asked = one_gpu_2048_checkpointed();
  const MemoryBudget budget{.gpu_bytes = 24 * kGiB};
  const std::optional<Recommendation> r = recommend(asked, budget);
  ASSERT_NO_FATAL_FAILURE(expect_full_offload_recommended(r, budget));
  expect_nothing_without_parameter_offload_fits(asked, budget.usable_gpu_bytes());
  EXPECT_GT(estimate_memory(qwen25_7b(), smallest(asked, {3, false, true})).gpu_total(), budget.usable_gpu_bytes())
      << "parameter offload alone keeps the optimizer and the gradient (16Ψ) on the GPU";
  EXPECT_LT(r->estimate.gpu.parameters, kGiB) << "only the parameters kept whole stay on the GPU";
  EXPECT_EQ(r->estimate.gpu.gradients, 0);
  EXPECT_GT(r->estimate.host_per_node(), 20 * r->estimate.model_parameters * 95 / 100)
      << "the host holds 2Ψ of weights and 18Ψ of optimizer and gradient";
}

// Cards too small for the gathered modules and activations (8 GiB at 2,048 tokens), or less
// host memory than the offload needs (20Ψ, 142 GiB): one card trains LoRA.
TEST(MemoryRecommendation, SevenBillionOnOneCardFallsBackToLoraWhenParameterOffloadDoesNotFit) {
  const MemorySettings asked = one_gpu_2048_checkpointed();
  const MemoryBudget small{.gpu_bytes = 8 * kGiB};
  EXPECT_GT(estimate_memory(qwen25_7b(), smallest(asked, {3, true, true})).gpu_total(), small.usable_gpu_bytes());
  const std::optional<Recommendation> on_8 = recommend(asked, small);
  ASSERT_TRUE(on_8.has_value());
  expect_real(*on_8, small);
  EXPECT_TRUE(on_8->switched_to_lora);
  const MemoryBudget little_host{.gpu_bytes = 40 * kGiB, .host_bytes = 64 * kGiB};
  const std::optional<Recommendation> on_40 = recommend(asked, little_host);
  ASSERT_TRUE(on_40.has_value());
  expect_real(*on_40, little_host);
  EXPECT_TRUE(on_40->switched_to_lora);
  EXPECT_FALSE(on_40->settings.offload_param);
}

// Two 10 GiB cards (RTX 3080): full fine-tuning fits only with the weights in host memory too (20Ψ per
// node), which is recommended over LoRA; without that much host memory, LoRA it is.
TEST(MemoryRecommendation, SevenBillionOnTwoCardsOf10GiBOffloadsParametersOrFallsBackToLora) {
  const models::ModelConfig config = qwen25_7b();
  const MemoryBudget budget{.gpu_bytes = 10 * kGiB};
  expect_nothing_without_parameter_offload_fits(on_gpus(2), budget.usable_gpu_bytes());
  const std::optional<Recommendation> r = recommend(on_gpus(2), budget);
  ASSERT_NO_FATAL_FAILURE(expect_full_offload_recommended(r, budget));
  const MemoryBudget little_host{.gpu_bytes = 24 * kGiB, .host_bytes = 64 * kGiB};
  const std::optional<Recommendation> lora = recommend(on_gpus(2), little_host);
  ASSERT_TRUE(lora.has_value());
  expect_real(*lora, little_host);
  EXPECT_TRUE(lora->switched_to_lora);
  EXPECT_EQ(lora->settings.trainable_numels, lora_all_rank8(config));
  EXPECT_EQ(lora->settings.stage, 0) << "LoRA's few trainable parameters need no partitioning";
}

TEST(MemoryRecommendation, ASmallerMicroBatchComesBeforeCheckpointingAndAHigherStage) {
  const MemoryBudget budget{.gpu_bytes = 24 * kGiB};
  MemorySettings asked = on_gpus(2, 4);
  asked.trainable_numels = lora_all_rank8(qwen25_7b());
  const std::optional<Recommendation> r = recommend(asked, budget);
  ASSERT_TRUE(r.has_value());
  expect_real(*r, budget);
  EXPECT_EQ(r->settings.stage, 0);
  EXPECT_FALSE(r->settings.gradient_checkpointing);
  EXPECT_EQ(r->settings.micro_batch, 1);
  MemorySettings twice = r->settings;
  twice.micro_batch = 2;
  EXPECT_GT(estimate_memory(qwen25_7b(), twice).gpu_total(), budget.usable_gpu_bytes())
      << "micro-batch 2 would have fit";
}

TEST(MemoryRecommendation, OffloadNeedingMoreHostMemoryThanTheNodeHasIsNotRecommended) {
  const MemoryBudget budget{.gpu_bytes = 24 * kGiB, .host_bytes = 64 * kGiB};
  const std::optional<Recommendation> r = recommend(on_gpus(4), budget);
  ASSERT_TRUE(r.has_value());
  expect_real(*r, budget);
  EXPECT_TRUE(r->switched_to_lora) << "full fine-tuning on 4 cards needs 127 GiB of host memory for offload";
}

// Four 80 GiB cards at 2,048 tokens without checkpointing asked, with fp32 gradients
// (data_types.grad_accum_dtype "fp32"): stage 1 fits the card only with checkpointing and with
// under a tenth of it to spare, stage 2 fits without. Stage 2 runs no recomputation (a third
// less compute per step): it is the recommendation.
TEST(MemoryRecommendation, AHigherStageWithoutCheckpointingComesBeforeCheckpointing) {
  const models::ModelConfig config = qwen25_7b();
  MemorySettings asked = on_gpus(4);
  asked.max_length = 2048;
  asked.grad_accum_dtype = DType::kF32;
  const MemoryBudget budget{.gpu_bytes = 80 * kGiB};
  MemorySettings stage1_checkpointed = smallest(asked, {1, false});
  const std::int64_t stage1 = estimate_memory(config, stage1_checkpointed).gpu_total();
  EXPECT_LE(stage1, budget.gpu_bytes) << "stage 1 with checkpointing fits the card";
  EXPECT_GT(stage1, budget.usable_gpu_bytes()) << "but leaves less than a tenth of it free";
  const std::optional<Recommendation> r = recommend(asked, budget);
  ASSERT_TRUE(r.has_value());
  expect_real(*r, budget);
  EXPECT_EQ(r->settings.stage, 2);
  EXPECT_FALSE(r->settings.offload);
  EXPECT_FALSE(r->settings.gradient_checkpointing);
  EXPECT_FALSE(recomputes_layers(r->settings));
  // With room for stage 1 as well, the lower stage comes first, still without checkpointing.
  const MemoryBudget larger{.gpu_bytes = 100 * kGiB};
  const std::optional<Recommendation> roomy = recommend(asked, larger);
  ASSERT_TRUE(roomy.has_value());
  EXPECT_EQ(roomy->settings.stage, 1);
  EXPECT_FALSE(roomy->settings.gradient_checkpointing);
}

// One GPU of 141 GiB (H200): the plain run needs 135.7 GiB, inside the card but not inside its
// nine tenths, so the recommendation moves part of the update to the CPU instead.
TEST(MemoryRecommendation, ARunThatFillsTheCardIsNotRecommended) {
  const models::ModelConfig config = qwen25_7b();
  const MemoryBudget budget{.gpu_bytes = 141 * kGiB};
  MemorySettings plain = on_gpus(1);
  const std::int64_t needed = estimate_memory(config, plain).gpu_total();
  ASSERT_LE(needed, budget.gpu_bytes);
  ASSERT_GT(needed, budget.usable_gpu_bytes());
  const std::optional<Recommendation> r = recommend(plain, budget);
  ASSERT_TRUE(r.has_value());
  expect_real(*r, budget);
  EXPECT_TRUE(r->settings.offload);
  EXPECT_LT(r->settings.offload_ratio, 1.0) << "the GPU keeps the share of the update that fits";
  EXPECT_FALSE(r->settings.gradient_checkpointing) << "optimizer offload fits without recomputation";
}

// Stage 3's engine recomputes every layer whatever the flag says, so it comes with the
// checkpointed rows, after every row that fits without recomputation, and its recommendation
// does not claim a flag the user did not ask for.
TEST(MemoryRecommendation, StageThreeRecomputesAndComesWithTheCheckpointedRows) {
  MemorySettings plain = on_gpus(4);
  MemorySettings stage3 = plain;
  stage3.stage = 3;
  EXPECT_TRUE(recomputes_layers(stage3));
  EXPECT_FALSE(recomputes_layers(plain));
  const std::optional<Recommendation> one_gpu = recommend(one_gpu_2048_checkpointed(), {.gpu_bytes = 24 * kGiB});
  ASSERT_TRUE(one_gpu.has_value());
  EXPECT_TRUE(one_gpu->settings.offload_param);
  MemorySettings unchecked = one_gpu_2048_checkpointed();
  unchecked.gradient_checkpointing = false;
  const std::optional<Recommendation> same = recommend(unchecked, {.gpu_bytes = 24 * kGiB});
  ASSERT_TRUE(same.has_value());
  EXPECT_TRUE(same->settings.offload_param);
  EXPECT_FALSE(same->settings.gradient_checkpointing) << "parameter offload runs stage 3's engine, which recomputes";
}

TEST(MemoryRecommendation, WhatFitsAsAskedIsKeptAndNothingFitsIsSaid) {
  const std::optional<Recommendation> roomy = recommend(on_gpus(8), {.gpu_bytes = 80 * kGiB});
  ASSERT_TRUE(roomy.has_value());
  EXPECT_EQ(roomy->settings.stage, 1);
  EXPECT_FALSE(roomy->settings.offload);
  EXPECT_FALSE(roomy->settings.gradient_checkpointing);
  EXPECT_EQ(roomy->settings.micro_batch, 1);
  EXPECT_FALSE(roomy->switched_to_lora);
  // 6 GiB cards hold a LoRA run only with the frozen weights in host memory; 2 GiB nothing.
  const std::optional<Recommendation> small = recommend(on_gpus(2), {.gpu_bytes = 6 * kGiB});
  ASSERT_TRUE(small.has_value());
  EXPECT_TRUE(small->switched_to_lora);
  EXPECT_TRUE(small->settings.offload_param);
  EXPECT_FALSE(recommend(on_gpus(2), {.gpu_bytes = 2 * kGiB}).has_value());
}

}  // namespace
}  // namespace zt::train
