// Training on a 4-bit base without gradient checkpointing: each layer is gathered (dequantized)
// once, for its forward, keeps its activations, and backward dequantizes each weight it needs
// again instead of recomputing the layer (QuantizedLinears as the layer's WeightSource). On the
// CPU both ways run the same ops on the same values, so the loss and every LoRA gradient equal
// the recomputing run's bit for bit.
#include <gtest/gtest.h>

#include <vector>

#include "models/peft/lora.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "tests/common/process_test_util.h"
#include "tests/common/test_util.h"
#include "tests/models/quant/held_decode_util.h"

namespace zt::models::quant {
namespace {

const std::string kTiny = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";

class KeptActivations : public testing::FolderTest {};

struct Step {
  double loss = 0;
  std::vector<Tensor> lora_grads;
  int layer_gathers = 0, weights_produced = 0;
};

// One forward + backward of two sequences of 24 tokens, next-token labels.
Step train_step(CausalLM& model, GatherCounter& counter) {
  std::vector<double> ids, positions, labels;
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < 24; ++i) {
      ids.push_back(static_cast<double>((41 * (24 * s + i) + 3) % 300));
      positions.push_back(i);
    }
  for (std::size_t i = 0; i < ids.size(); ++i) labels.push_back(i % 24 == 23 ? -100.0 : ids[i + 1]);
  counter.layer_gathers = 0;
  counter.weights_produced = 0;
  const Variable loss = model.loss(
      model.forward(Tensor::from_values(ids, {48}, DType::kI64), Tensor::from_values(positions, {48}, DType::kI64),
                    Tensor::from_values({0, 24, 48}, {3}, DType::kI32)),
      Tensor::from_values(labels, {48}, DType::kI64));
  loss.backward();
  Step step{loss.data().to_vector()[0], {}, counter.layer_gathers, counter.weights_produced};
  for (const NamedParameter& p : lora_parameters(model)) {
    step.lora_grads.push_back(p.variable.grad().clone());
    p.variable.zero_grad();
  }
  return step;
}

TEST_F(KeptActivations, EqualTheRecomputedLayersWithOneGatherEach) {
  save_bnb_4bit_model(load_model(kTiny), dir_.string(), {});
  CausalLM model = load_model(dir_.string(), {.keep_4bit_weights = true});
  for (const NamedParameter& p : model.named_parameters()) p.variable.set_requires_grad(false);
  attach_random_lora(model);
  const auto& linears = dynamic_cast<const QuantizedLinears&>(*model.owned_parameter_gatherer());
  const auto weights = static_cast<int>(linears.entries().size());
  GatherCounter& counter = GatherCounter::install(model);
  const int layers = static_cast<int>(model.config().num_layers);

  model.set_gradient_checkpointing(true);
  const Step recomputed = train_step(model, counter);
  EXPECT_EQ(recomputed.layer_gathers, 2 * layers) << "each layer again for its recompute";
  EXPECT_EQ(recomputed.weights_produced, 0);

  model.set_gradient_checkpointing(false);
  const Step kept = train_step(model, counter);
  EXPECT_EQ(kept.layer_gathers, layers) << "the forward's gather only";
  // Every weight but layer 0's q, k and v, whose input (the frozen embedding, normed) needs no
  // gradient.
  EXPECT_EQ(kept.weights_produced, weights - 3);
  for (const QuantizedLinears::Entry& e : linears.entries())
    EXPECT_EQ(e.variable.data().numel(), 0) << e.name << " is held whole after the step";

  EXPECT_EQ(kept.loss, recomputed.loss);
  ASSERT_EQ(kept.lora_grads.size(), recomputed.lora_grads.size());
  for (std::size_t i = 0; i < kept.lora_grads.size(); ++i)
    EXPECT_EQ(kept.lora_grads[i].to_vector(), recomputed.lora_grads[i].to_vector()) << "LoRA gradient " << i;
}

}  // namespace
}  // namespace zt::models::quant
