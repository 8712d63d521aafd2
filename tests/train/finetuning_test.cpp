// full and freeze fine-tuning select parameters by layer and module name.
#include <gtest/gtest.h>

#include "models/config/config.h"
#include "models/init.h"
#include "tests/common/op_test_util.h"
#include "train/finetuning.h"

namespace zt::train {
namespace {

models::CausalLM tiny_model() {
  return models::init_model(models::parse_config(nlohmann::ordered_json::parse(R"({
    "model_type": "qwen2", "vocab_size": 16, "hidden_size": 8, "intermediate_size": 16,
    "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1})"),
                                                 "tiny"),
                            1);
}

TrainingArguments args_for(std::vector<std::string> extra) {
  std::vector<std::string> all = {"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t"};
  all.insert(all.end(), extra.begin(), extra.end());
  return parse_training_arguments(all);
}

TEST(Finetuning, FullTrainsEverything) {
  models::CausalLM model = tiny_model();
  auto trainable = select_trainable(model, args_for({"--finetuning_type", "full"}));
  EXPECT_EQ(trainable.size(), model.named_parameters().size());
}

TEST(Finetuning, FreezeTrainsTheLastLayersAndFreezesTheRest) {
  models::CausalLM model = tiny_model();
  auto trainable = select_trainable(model, args_for({"--finetuning_type", "freeze", "--freeze_trainable_layers", "1"}));
  ASSERT_FALSE(trainable.empty());
  for (const auto& p : trainable) EXPECT_NE(p.name.find("layers.3."), std::string::npos) << p.name;
  EXPECT_FALSE(model.parameter("model.embed_tokens.weight").requires_grad());
  EXPECT_TRUE(model.parameter("model.layers.3.mlp.down_proj.weight").requires_grad());
}

TEST(Finetuning, FreezeWithModulesAndFromTheFront) {
  models::CausalLM model = tiny_model();
  auto trainable = select_trainable(model, args_for({"--finetuning_type", "freeze", "--freeze_trainable_layers", "-2",
                                                     "--freeze_trainable_modules", "mlp"}));
  EXPECT_EQ(trainable.size(), 6u);  // gate, up, down in layers 0 and 1
  for (const auto& p : trainable) {
    EXPECT_NE(p.name.find(".mlp."), std::string::npos) << p.name;
    EXPECT_TRUE(p.name.find("layers.0.") != std::string::npos || p.name.find("layers.1.") != std::string::npos);
  }
}

TEST(Finetuning, BadSelectionsAreExplained) {
  models::CausalLM model = tiny_model();
  testing::expect_mentions(
      testing::error_of([&] {
        select_trainable(model, args_for({"--finetuning_type", "freeze", "--freeze_trainable_layers", "9"}));
      }),
      {"has 4 layers"});
  testing::expect_mentions(
      testing::error_of([&] {
        select_trainable(model, args_for({"--finetuning_type", "freeze", "--freeze_trainable_modules", "attn_x"}));
      }),
      {"matches no parameter", "self_attn"});
}

}  // namespace
}  // namespace zt::train
