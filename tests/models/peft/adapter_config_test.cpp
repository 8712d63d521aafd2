// adapter_config.json read without a model: the kind its peft_type names, each kind's
// settings, and sizes no adapter can have refused before anything is allocated for them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/config/config.h"
#include "models/peft/adapter_config.h"
#include "tests/common/op_test_util.h"

namespace zt::models {
namespace {

using testing::error_of;
using testing::expect_mentions;

nlohmann::ordered_json json_of(const std::string& text) { return parse_json_text(text, "adapter_config.json"); }

TEST(AdapterConfig, KindAndSettingsOfEachPeftType) {
  const auto lora = json_of(R"({"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["q_proj"],
                                "use_rslora": true, "task_type": null})");
  EXPECT_EQ(parse_peft_adapter_kind(lora, "adapter_config.json"), PeftAdapterKind::kLora);
  const LoraConfig config = parse_lora_config(lora, "adapter_config.json");
  EXPECT_EQ(config.rank, 16);
  EXPECT_DOUBLE_EQ(config.scale(), 32.0 / 4.0);  // rsLoRA: alpha / sqrt(r)
  const auto prefix = json_of(R"({"peft_type": "PREFIX_TUNING", "num_virtual_tokens": 20, "num_layers": 24,
                                  "token_dim": 128, "num_attention_heads": 2})");
  EXPECT_EQ(parse_peft_adapter_kind(prefix, "adapter_config.json"), PeftAdapterKind::kPrefix);
  EXPECT_EQ(parse_peft_prefix_config(prefix, "adapter_config.json").num_virtual_tokens, 20);
  expect_mentions(error_of([&] { parse_lora_config(prefix, "a/adapter_config.json"); }),
                  {"a/adapter_config.json", "PREFIX_TUNING", "LORA"});
}

TEST(AdapterConfig, AdaptersOfAnotherTaskThanACausalLanguageModelAreRefused) {
  for (const char* task : {"CAUSAL_LM", "FEATURE_EXTRACTION"}) {
    const auto json = json_of(
        std::string(R"({"peft_type": "LORA", "r": 8, "target_modules": ["q_proj"], "task_type": ")") + task + "\"}");
    EXPECT_EQ(parse_lora_config(json, "adapter_config.json").rank, 8) << task;
  }
  for (const char* task : {"SEQ_2_SEQ_LM", "SEQ_CLS", "TOKEN_CLS", "QUESTION_ANS"}) {
    const auto lora = json_of(
        std::string(R"({"peft_type": "LORA", "r": 8, "target_modules": ["q_proj"], "task_type": ")") + task + "\"}");
    expect_mentions(error_of([&] { parse_lora_config(lora, "a/adapter_config.json"); }),
                    {"a/adapter_config.json", "task_type", task, "CAUSAL_LM"});
    const auto prefix =
        json_of(std::string(R"({"peft_type": "PREFIX_TUNING", "num_virtual_tokens": 20, "num_layers": 24,
                                                "token_dim": 128, "num_attention_heads": 2, "task_type": ")") +
                task + "\"}");
    expect_mentions(error_of([&] { parse_peft_prefix_config(prefix, "a/adapter_config.json"); }),
                    {"a/adapter_config.json", "task_type", task});
  }
}

TEST(AdapterConfig, SizesNoAdapterCanHaveAreRefused) {
  expect_mentions(error_of([] {
                    parse_lora_config(json_of(R"({"peft_type": "LORA", "r": 9000000000000, "target_modules": ["q"]})"),
                                      "adapter_config.json");
                  }),
                  {"adapter_config.json", "'r'", "9000000000000"});
  expect_mentions(error_of([] {
                    parse_peft_prefix_config(
                        json_of(R"({"peft_type": "PREFIX_TUNING", "num_virtual_tokens": 4294967296, "num_layers": 2,
                                    "token_dim": 8, "num_attention_heads": 1})"),
                        "adapter_config.json");
                  }),
                  {"num_virtual_tokens", "4294967296"});
}

std::string hub_adapter_path(const std::string& name) {
  return (std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/hub_metadata/adapters" / name).string();
}

// Published adapters of PEFT 0.2 to 0.18 (tests/data/hub_metadata/README.md): the keys each
// version adds at their defaults change nothing.
TEST(AdapterConfig, PublishedAdaptersOfSeveralPeftVersions) {
  struct Expected {
    const char* file;
    std::int64_t rank;
    double scale;
    std::size_t targets;
  };
  const Expected adapters[] = {{"qwen2.5-7b-instruct-peft-0.18.json", 16, 2.0, 7},
                               {"qwen2.5-7b-instruct-unsloth.json", 32, 1.0, 7},
                               {"qwen3-14b-llama-factory.json", 8, 2.0, 7},
                               {"glm-4-9b-chat.json", 8, 2.0, 4},
                               {"llama-2-7b-peft-0.2.json", 8, 2.0, 4},
                               {"tinyllama-chat-peft-0.7.json", 8, 2.0, 2},
                               {"mistral-7b-instruct-v0.2-translator.json", 16, 2.0, 7},
                               {"llama-3.1-8b-unsloth.json", 8, 2.0, 2},
                               {"tinyllama-peft-0.15.json", 8, 4.0, 2},
                               {"falcon-rw-1b-query-key-value.json", 8, 2.0, 1},
                               {"mistral-7b-instruct-v0.2-unsloth-peft-0.17.json", 16, 2.0, 7},
                               {"cosmos-reason2-2b-peft-0.18.1.json", 32, 2.0, 7}};
  for (const Expected& expected : adapters) {
    const std::string path = hub_adapter_path(expected.file);
    const auto json = read_json_file(path);
    EXPECT_EQ(parse_peft_adapter_kind(json, path), PeftAdapterKind::kLora) << expected.file;
    const LoraConfig config = parse_lora_config(json, path);
    EXPECT_EQ(config.rank, expected.rank) << expected.file;
    EXPECT_DOUBLE_EQ(config.scale(), expected.scale) << expected.file;
    EXPECT_EQ(config.target_modules.size(), expected.targets) << expected.file;
  }
}

// What the published adapters of PEFT 0.7 to 0.18 hold beside r and alpha: the dropout, the
// module names as written, and a base model recorded as null.
TEST(AdapterConfig, PublishedAdaptersKeepDropoutAndModuleNames) {
  const std::string falcon = hub_adapter_path("falcon-rw-1b-query-key-value.json");
  const LoraConfig config = parse_lora_config(read_json_file(falcon), falcon);
  EXPECT_DOUBLE_EQ(config.dropout, 0.1);
  EXPECT_EQ(config.target_modules, std::vector<std::string>{"query_key_value"});
  EXPECT_EQ(config.base_model_name_or_path, "tiiuae/falcon-rw-1b");
  EXPECT_FALSE(config.use_rslora);
  EXPECT_TRUE(config.target_pattern.empty());
  EXPECT_TRUE(config.layers_to_transform.empty());
  const std::string tinyllama = hub_adapter_path("tinyllama-peft-0.15.json");
  const LoraConfig nameless = parse_lora_config(read_json_file(tinyllama), tinyllama);
  EXPECT_DOUBLE_EQ(nameless.dropout, 0.05);
  EXPECT_EQ(nameless.base_model_name_or_path, "");  // null in the file
  EXPECT_EQ(nameless.target_modules, (std::vector<std::string>{"v_proj", "q_proj"}));
  // Unsloth's auto_mapping (an object) and PEFT 0.17's qalora_group_size change nothing.
  const std::string unsloth = hub_adapter_path("mistral-7b-instruct-v0.2-unsloth-peft-0.17.json");
  EXPECT_DOUBLE_EQ(parse_lora_config(read_json_file(unsloth), unsloth).dropout, 0.0);
}

// A sequence-classification adapter trains its head in full (modules_to_save): refused by name
// rather than loaded without the head.
TEST(AdapterConfig, PublishedAdapterWithModulesToSaveIsRefused) {
  const std::string path = hub_adapter_path("bert-base-seq-cls-modules-to-save.json");
  const auto json = read_json_file(path);
  EXPECT_EQ(parse_peft_adapter_kind(json, path), PeftAdapterKind::kLora);
  expect_mentions(error_of([&] { parse_lora_config(json, path); }), {path.c_str(), "modules_to_save is set"});
}

// The keys a later PEFT writes at their defaults in every file, set: each changes the math, and
// each is refused by name.
TEST(AdapterConfig, PublishedAdapterWithSettingsThatChangeTheMathIsRefused) {
  const std::string path = hub_adapter_path("mistral-7b-instruct-v0.2-translator.json");
  const std::pair<const char*, nlohmann::ordered_json> settings[] = {
      {"use_dora", true},
      {"rank_pattern", {{"q_proj", 8}}},
      {"alpha_pattern", {{"q_proj", 8}}},
      {"layer_replication", nlohmann::ordered_json::array({nlohmann::ordered_json::array({0, 4})})},
      {"lora_bias", true},
      {"bias", "all"}};
  for (const auto& [key, value] : settings) {
    auto json = read_json_file(path);
    json[key] = value;
    expect_mentions(error_of([&] { parse_lora_config(json, path); }), {path.c_str(), key});
  }
}

// PiSSA, CorDA, OLoRA, LoftQ and LoRA-GA (PEFT 0.19) rewrite the base weights as PEFT builds the adapter, so their
// A and B hold only against that base; the initialisations that leave it alone load.
TEST(AdapterConfig, InitialisationsThatChangeTheBaseAreRefused) {
  const std::string path = hub_adapter_path("qwen2.5-7b-instruct-peft-0.18.json");
  auto json = read_json_file(path);
  for (const char* init : {"pissa", "pissa_niter_16", "corda", "olora", "loftq", "lora_ga"}) {
    json["init_lora_weights"] = init;
    const std::string named = "init_lora_weights is '" + std::string(init) + "'";
    expect_mentions(
        error_of([&] { parse_lora_config(json, path); }),
        {path.c_str(), named.c_str(), "changes the base model's weights", "path_initial_model_for_weight_conversion"});
  }
  json["init_lora_weights"] = "kaiming";
  expect_mentions(error_of([&] { parse_lora_config(json, path); }), {"'kaiming'", "zerotune does not know"});
  for (const nlohmann::ordered_json& init : {nlohmann::ordered_json(false), nlohmann::ordered_json("gaussian"),
                                             nlohmann::ordered_json("eva"), nlohmann::ordered_json("orthogonal")}) {
    json["init_lora_weights"] = init;
    EXPECT_EQ(parse_lora_config(json, path).rank, 16) << init.dump();
  }
  json["init_lora_weights"] = true;
  json["use_qalora"] = true;
  expect_mentions(error_of([&] { parse_lora_config(json, path); }), {"use_qalora is true", "QA-LoRA"});
}

// The LoRA variants of PEFT 0.18 and later, each switched on by its own config object (null
// when off, as in every file of those versions): Arrow's routing, BD-LoRA's block-diagonal
// factors, MonteCLoRA's sampling and KaSA's singular values change what the adapter computes,
// so each is refused by name rather than loaded as a plain LoRA.
TEST(AdapterConfig, LoraVariantsOfLaterPeftVersionsAreRefused) {
  const std::string path = hub_adapter_path("qwen2.5-7b-instruct-peft-0.18.json");
  EXPECT_EQ(parse_lora_config(read_json_file(path), path).rank, 16);  // arrow_config null
  const std::pair<const char*, nlohmann::ordered_json> variants[] = {
      {"arrow_config", {{"top_k", 3}, {"router_temperature", 1.0}, {"use_gks", false}}},
      {"use_bdlora", {{"target_modules_bd_a", {"q_proj"}}, {"target_modules_bd_b", {"o_proj"}}, {"nblocks", 2}}},
      {"monteclora_config", {{"num_samples", 4}}},
      {"kasa_config", nlohmann::ordered_json::object()}};
  for (const auto& [key, value] : variants) {
    auto json = read_json_file(path);
    json[key] = value;
    const std::string named = std::string(key) + " is set";
    expect_mentions(error_of([&] { parse_lora_config(json, path); }), {path.c_str(), named.c_str(), "not supported"});
  }
}

}  // namespace
}  // namespace zt::models
