// The single-device optimizer's gradients held per step in segments: one per module by name,
// allocated zeroed when a span is first asked for, a module's spans adjacent as in the flat
// partition, every segment released by the optimizer's zero_grad, and an update that reads a
// span no gradient reached as zero.
#include "train/optim/gradient_segments.h"

#include <gtest/gtest.h>

#include "autograd/functions.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "train/optim/optimizer.h"

namespace zt::train {
namespace {

using testing::error_of;
using testing::expect_mentions;
using testing::random_tensor;

TEST(GradientSegments, ModulesAreTheNamesUpToTheirFirstNumber) {
  EXPECT_EQ(gradient_module_of("model.layers.12.mlp.up_proj.weight"), "model.layers.12.");
  EXPECT_EQ(gradient_module_of("transformer.encoder.layers.3.self_attention.query_key_value.bias"),
            "transformer.encoder.layers.3.");
  EXPECT_EQ(gradient_module_of("model.embed_tokens.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(gradient_module_of("lm_head.weight"), "lm_head.weight");
  EXPECT_EQ(gradient_module_of("h2.weight"), "h2.weight") << "a number inside a component is no layer index";
  EXPECT_EQ(gradient_module_of("7.weight"), "7.");
}

std::vector<GradientSpan> model_spans() {
  return {{"model.embed_tokens.weight", 0, 12}, {"model.layers.0.gate.weight", 12, 6},
          {"model.layers.0.up.weight", 18, 6},  {"model.layers.1.gate.weight", 26, 6},
          {"model.layers.1.up.weight", 32, 6},  {"model.norm.weight", 38, 3}};
}

TEST(GradientSegments, AllocatedZeroedWhenFirstAskedForAndReleasedTogether) {
  GradientSegments segments(model_spans(), 44, DType::kF32, Device::cpu());
  EXPECT_EQ(segments.segment_count(), 4u);
  EXPECT_EQ(segments.held_count(), 0u);
  Tensor up = segments.span(4);
  EXPECT_EQ(segments.held_count(), 1u) << "layer 1's segment alone";
  EXPECT_EQ(up.numel(), 6);
  for (double v : up.to_vector()) EXPECT_EQ(v, 0.0);
  up.fill_(2.0);
  Tensor gate = segments.span(3);
  EXPECT_EQ(segments.held_count(), 1u) << "gate and up share their layer's segment";
  EXPECT_EQ(static_cast<const float*>(gate.data_ptr()) + 6, static_cast<const float*>(up.data_ptr()))
      << "a layer's spans lie as in the flat partition";
  EXPECT_EQ(segments.span(4).to_vector(), up.to_vector()) << "held until released";
  // Layer 1's segment runs from the end of layer 0's (with the 2 elements of padding before
  // it) to the norm's: 2 + 12 elements; the norm's takes the partition's tail.
  EXPECT_EQ(segments.held_bytes(), 14 * 4);
  segments.span(5);
  EXPECT_EQ(segments.held_bytes(), (14 + 6) * 4);
  segments.release();
  EXPECT_EQ(segments.held_count(), 0u);
  for (double v : segments.span(4).to_vector()) EXPECT_EQ(v, 0.0) << "a released segment starts from zero";
}

TEST(GradientSegments, SpansOutOfOrderAreRefused) {
  std::vector<GradientSpan> spans = model_spans();
  std::swap(spans[1], spans[2]);
  expect_mentions(error_of([&] { GradientSegments(spans, 44, DType::kF32, Device::cpu()); }),
                  {"model.layers.0.gate.weight", "out of order"});
  expect_mentions(error_of([&] { GradientSegments(model_spans(), 40, DType::kF32, Device::cpu()); }),
                  {"model.norm.weight", "beyond the partition"});
}

// Through the optimizer: hooks and sinks fill the segments backward reaches, the norm and the
// update read a parameter no gradient reached as zero (Adam's moments of a zero gradient leave
// it as decoupled weight decay alone moves it), and zero_grad releases everything.
TEST(GradientSegments, TheOptimizerUpdatesAParameterNoGradientReachedAsZero) {
  using autograd::Variable;
  Variable used(random_tensor({3, 4}, 1, DType::kF32), true, "model.layers.0.used.weight");
  Variable unused(random_tensor({2, 4}, 2, DType::kF32), true, "model.layers.1.unused.weight");
  const Tensor unused_before = unused.data().clone();
  OptimizerConfig config;
  config.weight_decay = 0.5;
  Optimizer optimizer({{"model.layers.0.used.weight", used, true}, {"model.layers.1.unused.weight", unused, true}},
                      config);
  Variable x(random_tensor({5, 4}, 3, DType::kF32), false, "x");
  autograd::sum(autograd::linear(x, used)).backward();
  EXPECT_FALSE(used.grad().defined()) << "the gradient went into the segment";
  StepResult result = optimizer.step(0.1, 1.0, 0.0, 1);
  ASSERT_FALSE(result.skipped);
  EXPECT_GT(result.grad_norm, 0.0);
  const std::vector<double> before = unused_before.to_vector(), after = unused.data().to_vector();
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(after[i], before[i] * (1.0 - 0.1 * 0.5), 1e-6);
  optimizer.zero_grad();
  for (double v : optimizer.gradient(0).to_vector()) EXPECT_EQ(v, 0.0);
}

}  // namespace
}  // namespace zt::train
