// QLoRA in `zerotune estimate` (train/memory_estimate.h, train/memory_recommendation.h): a 4-bit
// base counts half a byte per linear weight plus its block scales (the formula worked out here
// from Qwen2.5-7B's shapes, independently of the code), keeps the rest in the working dtype,
// recomputes every layer, and is recommended where LoRA on the bf16 base does not fit.
#include <gtest/gtest.h>

#include <filesystem>

#include "models/config/config.h"
#include "models/quant/quantized_weight.h"
#include "ops/quant4/blockwise.h"
#include "runtime/error.h"
#include "train/memory_recommendation.h"

namespace zt::train {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

models::ModelConfig qwen25_7b() {
  return models::load_config((std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/models/qwen2.5-7b").string());
}

// Bytes of one weight of n values: (n + 1) / 2 of codes; an fp32 scale per block of 64, or
// double-quantized a byte per block, an fp32 scale per 256 blocks and a 256-entry fp32 map.
std::int64_t four_bit_bytes(std::int64_t n, bool double_quant) {
  const std::int64_t blocks = (n + 63) / 64;
  return (n + 1) / 2 + (double_quant ? blocks + 4 * ((blocks + 255) / 256) + 1024 : 4 * blocks);
}

TEST(MemoryQuantizedBase, TheFormulaIsWhatAQuantizedWeightHolds) {
  for (bool nested : {true, false})
    for (const Shape& shape : {Shape{896, 896}, Shape{151, 129}, Shape{1, 1}}) {
      const auto w = models::quant::quantize_weight(Tensor::normal(shape, 3, 0, 0.0, 0.02, DType::kF32),
                                                    {.double_quant = nested}, "w");
      EXPECT_EQ(w.nbytes(), four_bit_bytes(shape_numel(shape), nested)) << shape_str(shape);
      EXPECT_EQ(ops::quant4::quantized_bytes(shape_numel(shape), 64, nested),
                four_bit_bytes(shape_numel(shape), nested));
    }
}

TEST(MemoryQuantizedBase, SevenBillionLinearsInFourBits) {
  const models::ModelConfig config = qwen25_7b();
  MemorySettings lora{
      .max_length = 2048, .gradient_checkpointing = true, .trainable_numels = lora_trainable_numels(config, 16, "all")};
  MemorySettings qlora = lora;
  qlora.quantized_base = true;
  const MemoryEstimate dense = estimate_memory(config, lora), four = estimate_memory(config, qlora);
  // Qwen2.5-7B's layer: q and o 3584 x 3584, k and v 512 x 3584, gate, up and down 18944 x 3584.
  const std::int64_t h = 3584, kv = 512, ffn = 18944;
  const std::int64_t shapes[] = {h * h, kv * h, kv * h, h * h, ffn * h, ffn * h, ffn * h};
  std::int64_t numel = 0, bytes = 0;
  for (std::int64_t n : shapes) {
    numel += 28 * n;
    bytes += 28 * four_bit_bytes(n, true);
  }
  EXPECT_EQ(numel, 6'525'288'448);
  EXPECT_EQ(dense.gpu.parameters - four.gpu.parameters, 2 * numel - bytes);
  EXPECT_NEAR(static_cast<double>(bytes) / kGiB, 3.13, 0.01);  // 0.516 byte per weight
  // One layer's linears dequantized at a time.
  EXPECT_EQ(four.transient - dense.transient, 2 * (shapes[0] + shapes[1] + shapes[2] + shapes[3] + 3 * shapes[4]));
  EXPECT_EQ(four.activations, dense.activations);  // both recompute every layer
  // Without checkpointing a 4-bit layer keeps its activations as a bf16 one does.
  MemorySettings kept = qlora, dense_kept = lora;
  kept.gradient_checkpointing = dense_kept.gradient_checkpointing = false;
  EXPECT_FALSE(recomputes_layers(kept));
  EXPECT_EQ(estimate_memory(config, kept).activations, estimate_memory(config, dense_kept).activations);
  EXPECT_GT(estimate_memory(config, kept).activations, 8 * four.activations);
  // Without double quantization the scales take 4 bytes a block: 3 more bytes per 64 weights.
  MemorySettings single = qlora;
  single.double_quant = false;
  EXPECT_NEAR(static_cast<double>(estimate_memory(config, single).gpu.parameters - four.gpu.parameters),
              3.0 * static_cast<double>(numel) / 64, 0.001 * static_cast<double>(numel));
  // Of 8.31 GiB in all: 5.16 of weights (3.13 of them 4-bit) and 1 of reserve; the loss's bf16
  // chunk of logits (0.58) is freed before backward recomputes a layer, whose working set is
  // larger, so it adds nothing. An H100 run of this shape held 8.20 GiB (nvidia-smi).
  EXPECT_NEAR(static_cast<double>(four.gpu_total()) / kGiB, 8.31, 0.01);
  MemorySettings stage3 = qlora;
  stage3.stage = 3;
  stage3.gpus_per_node = 2;
  EXPECT_THROW(estimate_memory(config, stage3), Error);
}

TEST(MemoryQuantizedBase, RecommendedWhereTheBf16BaseDoesNotFit) {
  const models::ModelConfig config = qwen25_7b();
  const std::vector<std::int64_t> lora = lora_trainable_numels(config, 8, "all");
  const MemorySettings full{.max_length = 1024};
  // 14.2 GiB of bf16 weights alone: LoRA does not fit 12 GiB; QLoRA does. (Full fine-tuning with
  // everything offloaded needs some 130 GiB of host memory: not in 64.)
  const MemoryBudget card{.gpu_bytes = 12 * kGiB, .host_bytes = 64 * kGiB};
  const std::optional<Recommendation> r = recommend_configuration(config, full, card, lora);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->switched_to_lora);
  EXPECT_TRUE(r->switched_to_qlora);
  EXPECT_TRUE(r->settings.quantized_base);
  EXPECT_LT(r->settings.stage, 3);
  EXPECT_LE(r->estimate.gpu_total(), card.usable_gpu_bytes());
  // Where bf16 LoRA fits, it stays the recommendation.
  const std::optional<Recommendation> big = recommend_configuration(config, full, {.gpu_bytes = 40 * kGiB}, lora);
  ASSERT_TRUE(big.has_value());
  EXPECT_FALSE(big->switched_to_qlora);
  // Asked for LoRA on a card too small for its bf16 base: QLoRA, keeping the LoRA asked for.
  MemorySettings asked_lora = full;
  asked_lora.trainable_numels = lora;
  const std::optional<Recommendation> q = recommend_configuration(config, asked_lora, {.gpu_bytes = 12 * kGiB}, lora);
  ASSERT_TRUE(q.has_value());
  EXPECT_FALSE(q->switched_to_lora);
  EXPECT_TRUE(q->switched_to_qlora);
  // Before parameter offload, which would fit too with host memory to spare.
  EXPECT_FALSE(q->settings.offload_param);
}

}  // namespace
}  // namespace zt::train
