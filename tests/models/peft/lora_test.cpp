// LoRA on the committed fixture models: target names per architecture, the adapted forward
// against its definition, gradients, merging, and what training changes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "autograd/functions.h"
#include "models/peft/adapters.h"
#include "models/peft/lora.h"
#include "models/weights/weights.h"
#include "runtime/generator.h"
#include "tests/common/gradcheck.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/op_test_util.h"
#include "train/finetuning.h"
#include "train/optim/optimizer.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

using namespace testing;  // the helpers of tests/common/
using Batch = testing::FixtureBatch;

LoraConfig config_for(std::vector<std::string> targets, std::int64_t rank = 4, double alpha = 8.0) {
  LoraConfig config;
  config.rank = rank;
  config.alpha = alpha;
  config.target_modules = std::move(targets);
  return config;
}

TEST(LoraTarget, NamesFollowEachArchitecturesModules) {
  const ModelConfig qwen = load_config(fixture_dir("qwen2"));
  EXPECT_EQ(parse_lora_target("q_proj, v_proj", qwen), (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(parse_lora_target("all", qwen),
            (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
  EXPECT_EQ(parse_lora_target("all", load_config(fixture_dir("glm"))),
            (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "gate_up_proj", "down_proj"}));
  const ModelConfig chatglm = load_config(fixture_dir("chatglm"));
  EXPECT_EQ(parse_lora_target("query_key_value", chatglm), (std::vector<std::string>{"query_key_value"}));
  EXPECT_EQ(parse_lora_target("all", chatglm),
            (std::vector<std::string>{"query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"}));
  EXPECT_EQ(parse_lora_target("self_attn.o_proj", qwen), (std::vector<std::string>{"self_attn.o_proj"}));
}

TEST(LoraTarget, UnknownNamesListTheModelsModules) {
  testing::expect_mentions(
      testing::error_of([] { parse_lora_target("q_proj,qkv", load_config(fixture_dir("qwen2"))); }),
      {"'qkv'", "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj"});
  testing::expect_mentions(testing::error_of([] { parse_lora_target("q_proj", load_config(fixture_dir("chatglm"))); }),
                           {"'q_proj'", "query_key_value, dense"});
  testing::expect_mentions(testing::error_of([] { parse_lora_target("lm_head", load_config(fixture_dir("qwen2"))); }),
                           {"'lm_head'"});
}

TEST(Lora, AttachesPeftNamedMatricesWithPeftsInit) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  attach_lora(model, config_for({"q_proj", "down_proj"}, 4, 8.0), 7);
  const auto params = lora_parameters(model);
  ASSERT_EQ(params.size(), 3u * 2u * 2u);  // 3 layers, 2 modules, A and B
  EXPECT_EQ(params[0].name, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
  EXPECT_EQ(params[1].name, "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight");
  EXPECT_EQ(params[3].name, "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight");
  EXPECT_EQ(params[0].variable.data().shape(), (Shape{4, 96}));
  EXPECT_EQ(params[1].variable.data().shape(), (Shape{96, 4}));
  EXPECT_EQ(params[2].variable.data().shape(), (Shape{4, 120}));  // down_proj reads the ffn width
  const double bound = 1.0 / std::sqrt(96.0);
  double largest = 0.0;
  for (double v : params[0].variable.data().to_vector()) largest = std::max(largest, std::abs(v));
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, 0.8 * bound);  // spread over the whole kaiming-uniform range
  for (double v : params[1].variable.data().to_vector()) ASSERT_EQ(v, 0.0);
  EXPECT_DOUBLE_EQ(model.lora()[0][kQ]->scale, 2.0);
  EXPECT_FALSE(model.lora()[0][kK].has_value());
}

// The fixture model `arch` with LoRA (seeded `seed`) on every linear, its batch, and its
// logits before the adapter was attached.
struct Adapted {
  CausalLM model;
  Batch batch;
  Tensor base;
};
Adapted with_lora_everywhere(const char* arch, std::uint64_t seed) {
  Adapted adapted{load_model(fixture_dir(arch)), fixture_batch(arch), {}};
  adapted.base = logits_of(adapted.model, adapted.batch);
  attach_lora(adapted.model, config_for(parse_lora_target("all", adapted.model.config())), seed);
  return adapted;
}

TEST(Lora, AtStepZeroTheModelIsTheBaseModel) {
  for (const char* arch : {"qwen2", "chatglm", "glm4"}) {
    auto [model, batch, base] = with_lora_everywhere(arch, 3);
    EXPECT_EQ(max_abs_diff(logits_of(model, batch), base), 0.0) << arch;
  }
}

TEST(Lora, DeltaIsScaleTimesBAx) {
  const Tensor x = testing::random_tensor({5, 7}, 1, DType::kF32);
  LoraUpdate update{Variable(testing::random_tensor({3, 7}, 2, DType::kF32)),
                    Variable(testing::random_tensor({6, 3}, 3, DType::kF32)), 2.5, 0.0};
  const std::vector<double> xs = x.to_vector(), a = update.a.data().to_vector(), b = update.b.data().to_vector();
  const std::vector<double> delta = lora_delta(Variable(x), update, false).data().to_vector();
  for (int t = 0; t < 5; ++t)
    for (int o = 0; o < 6; ++o) {
      double expected = 0.0;
      for (int r = 0; r < 3; ++r) {
        double ax = 0.0;
        for (int i = 0; i < 7; ++i) ax += a[r * 7 + i] * xs[t * 7 + i];
        expected += b[o * 3 + r] * ax;
      }
      EXPECT_NEAR(delta[t * 6 + o], 2.5 * expected, 1e-5) << t << "," << o;
    }
}

TEST(Lora, GradientsOfAAndBMatchFiniteDifferences) {
  auto forward = [](const std::vector<Tensor>& in) {
    LoraUpdate update{Variable(in[1]), Variable(in[2]), 1.5, 0.0};
    return lora_delta(Variable(in[0]), update, false).data();
  };
  auto backward = [](const std::vector<Tensor>& in, const Tensor& probe) {
    Variable x(in[0], true), a(in[1], true), b(in[2], true);
    lora_delta(x, LoraUpdate{a, b, 1.5, 0.0}, true).backward(probe);
    return std::vector<Tensor>{x.grad(), a.grad(), b.grad()};
  };
  testing::expect_gradients_match(
      "lora_delta", forward, backward,
      {testing::random_tensor({4, 5}, 4), testing::random_tensor({2, 5}, 5), testing::random_tensor({3, 2}, 6)},
      {true, true, true});
}

TEST(Lora, MergedModelComputesTheAdaptedOne) {
  for (const char* arch : {"qwen2", "chatglm", "glm"}) {
    auto [model, batch, base] = with_lora_everywhere(arch, 5);
    randomize_lora_b(model, 9);
    const Tensor adapted = logits_of(model, batch);
    EXPECT_GT(max_abs_diff(adapted, base), 1e-2) << arch << ": B should change the logits";
    merge_lora(model);
    EXPECT_TRUE(model.lora().empty());
    EXPECT_LE(relative_error(logits_of(model, batch), adapted), 1e-5) << arch;
  }
}

TEST(Lora, DropoutOnlyWhileTraining) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  LoraConfig config = config_for(parse_lora_target("all", model.config()));
  attach_lora(model, config, 5);
  randomize_lora_b(model, 9);
  const Batch batch = fixture_batch("qwen2");
  const Tensor without = logits_of(model, batch);
  config.dropout = 0.5;
  attach_lora(model, config, 5);
  randomize_lora_b(model, 9);
  EXPECT_EQ(max_abs_diff(logits_of(model, batch), without), 0.0) << "dropout in evaluation";
  const Tensor trained = model.forward(batch.ids, batch.positions, batch.cu_seqlens).data();
  EXPECT_GT(max_abs_diff(trained, without), 1e-3) << "no dropout in training";
}

// The loss's gradient for every LoRA matrix, with dropout on, from one backward.
std::vector<std::vector<double>> lora_gradients(bool checkpointing) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  model.set_gradient_checkpointing(checkpointing);
  for (const auto& p : model.named_parameters()) p.variable.set_requires_grad(false);
  LoraConfig config = config_for(parse_lora_target("all", model.config()));
  config.dropout = 0.1;
  attach_lora(model, config, 5);
  randomize_lora_b(model, 9);
  const Batch batch = fixture_batch("qwen2");
  default_generator().manual_seed(77);
  model.loss(model.forward(batch.ids, batch.positions, batch.cu_seqlens), batch.labels).backward();
  std::vector<std::vector<double>> grads;
  for (const auto& p : lora_parameters(model)) grads.push_back(p.variable.grad().to_vector());
  return grads;
}

TEST(Lora, GradientCheckpointingGivesTheSameGradients) {
  const auto plain = lora_gradients(false), recomputed = lora_gradients(true);
  ASSERT_EQ(plain.size(), recomputed.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(plain[i].size(), recomputed[i].size());
    double norm = 0.0;
    for (std::size_t j = 0; j < plain[i].size(); ++j) {
      EXPECT_NEAR(plain[i][j], recomputed[i][j], 1e-6) << "matrix " << i << " element " << j;
      norm += std::abs(plain[i][j]);
    }
    EXPECT_GT(norm, 0.0) << "matrix " << i << " got no gradient";
  }
}

train::TrainingArguments lora_arguments(std::vector<std::string> extra) {
  std::vector<std::string> all = {"--model_name_or_path", fixture_dir("qwen2"),
                                  "--output_dir",         "o",
                                  "--train_file",         "t",
                                  "--finetuning_type",    "lora"};
  all.insert(all.end(), extra.begin(), extra.end());
  return train::parse_training_arguments(all);
}

TEST(LoraTraining, SelectsOnlyTheLoraMatricesAndReportsTheirShare) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  auto trainable =
      train::select_trainable(model, lora_arguments({"--lora_rank", "2", "--lora_target", "q_proj,v_proj"}));
  ASSERT_EQ(trainable.size(), 3u * 2u * 2u);
  std::int64_t count = 0;
  for (const auto& p : trainable) {
    EXPECT_NE(p.name.find(".lora_"), std::string::npos) << p.name;
    EXPECT_TRUE(p.variable.requires_grad());
    EXPECT_TRUE(p.weight_decay) << p.name;
    count += p.variable.data().numel();
  }
  EXPECT_EQ(count, 3 * (2 * 96 + 96 * 2 + 2 * 96 + 32 * 2));  // q is 96 wide, v 2 heads of 16
  for (const auto& p : model.named_parameters()) EXPECT_FALSE(p.variable.requires_grad()) << p.name;
  EXPECT_DOUBLE_EQ(model.lora()[0][kQ]->scale, 2.0);  // alpha defaults to 2 * rank
  // The fixture's 226,848 parameters plus the 1,920 of the adapter.
  EXPECT_EQ(train::trainable_summary(model, trainable),
            "trainable params: 1,920 || all params: 228,768 || trainable%: 0.8393");
}

TEST(LoraTraining, StepsChangeOnlyTheLoraMatrices) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  std::vector<Tensor> before;
  for (const auto& p : model.named_parameters()) before.push_back(p.variable.data().clone());
  auto trainable = train::select_trainable(model, lora_arguments({"--lora_dropout", "0.1"}));
  std::vector<Tensor> lora_before;
  for (const auto& p : trainable) lora_before.push_back(p.variable.data().clone());
  train::OptimizerConfig config;
  config.weight_decay = 0.01;  // the rate is each step's: 1e-2 below
  train::Optimizer optimizer(trainable, config);
  const Batch batch = fixture_batch("qwen2");
  for (std::int64_t step = 1; step <= 3; ++step) {
    model.loss(model.forward(batch.ids, batch.positions, batch.cu_seqlens), batch.labels).backward();
    optimizer.step(1e-2, 1.0, 1.0, step);
    optimizer.zero_grad();
  }
  for (std::size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(max_abs_diff(model.named_parameters()[i].variable.data(), before[i]), 0.0)
        << model.named_parameters()[i].name << " changed";
  for (std::size_t i = 0; i < trainable.size(); ++i)
    EXPECT_GT(max_abs_diff(trainable[i].variable.data(), lora_before[i]), 0.0) << trainable[i].name << " stayed";
}

}  // namespace
}  // namespace zt::models
