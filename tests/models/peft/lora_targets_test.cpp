// Which modules a LoRA adapter adapts, by PEFT's rules: target_modules as a regular
// expression over whole module paths (adapter_config.json files published with one), as names
// limited by layers_to_transform / layers_pattern, and exclude_modules; patterns zerotune
// cannot compile and targets it cannot adapt are errors that name them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/config/config.h"
#include "models/peft/adapter_config.h"
#include "models/peft/lora.h"
#include "models/peft/lora_targets.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/op_test_util.h"

namespace zt::models {
namespace {

using testing::error_of;
using testing::expect_mentions;
using testing::fixture_dir;

nlohmann::ordered_json json_of(const std::string& text) { return parse_json_text(text, "adapter_config.json"); }

LoraConfig lora_of(const std::string& text) { return parse_lora_config(json_of(text), "adapter_config.json"); }

std::string hub_adapter_path(const std::string& name) {
  return (std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/hub_metadata/adapters" / name).string();
}

// The modules that got LoRA, as "<layer>.<module>" (0.q_proj, 2.down_proj, ...).
std::vector<std::string> adapted(const ModelConfig& model, const LoraConfig& config) {
  const ParameterLayout layout = parameter_layout(model);
  const auto slots = lora_target_slots(model, config);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < slots.size(); ++i)
    for (int slot = 0; slot < kLayerSlotCount; ++slot)
      if (slots[i][slot]) {
        const std::string& weight = layout.layers[i][slot]->name;  // ...q_proj.weight
        const std::string module = weight.substr(0, weight.rfind('.'));
        names.push_back(std::to_string(i) + "." + module.substr(module.rfind('.') + 1));
      }
  return names;
}

std::vector<std::string> in_every_layer(const std::vector<std::string>& modules, int layers = 3) {
  std::vector<std::string> names;
  for (int i = 0; i < layers; ++i)
    for (const std::string& module : modules) names.push_back(std::to_string(i) + "." + module);
  return names;
}

// Published adapter_config.json files whose target_modules is a regular expression: Unsloth's
// get_peft_regex for a Gemma 4 model (PEFT 0.21.2: (?:...), lazy .*?, \b, [\d]{1,} and a
// look-ahead), and one written for a Nemotron model. On the qwen2 fixture (model.layers.N....)
// they pick what PEFT's re.fullmatch picks.
TEST(LoraTargets, PublishedRegexAdaptersPickWhatPeftPicks) {
  const ModelConfig qwen = load_config(fixture_dir("qwen2"));
  const std::string unsloth_path = hub_adapter_path("gemma-4-31b-it-unsloth-peft-0.21-regex.json");
  const LoraConfig unsloth = parse_lora_config(read_json_file(unsloth_path), unsloth_path);
  EXPECT_TRUE(unsloth.target_modules.empty());
  EXPECT_TRUE(unsloth.target_pattern.starts_with("(?:.*?(?:language|text)"));
  EXPECT_EQ(unsloth.rank, 8);
  EXPECT_EQ(adapted(qwen, unsloth), in_every_layer({"q_proj", "v_proj", "o_proj"}));
  // Its look-ahead keeps experts out, as in PEFT.
  EXPECT_FALSE(lora_targets_module(unsloth, "model.layers.3.mlp.experts.7.self_attn.q_proj"));
  EXPECT_TRUE(lora_targets_module(unsloth, "model.language_model.layers.3.self_attn.q_proj"));

  const std::string nemotron_path = hub_adapter_path("nemotron-3-nano-30b-a3b-regex.json");
  const LoraConfig nemotron = parse_lora_config(read_json_file(nemotron_path), nemotron_path);
  EXPECT_EQ(nemotron.target_pattern, ".*\\.(in_proj|out_proj|up_proj|down_proj)$");
  EXPECT_EQ(adapted(qwen, nemotron), in_every_layer({"up_proj", "down_proj"}));
}

TEST(LoraTargets, PatternsMatchWholePathsAsFullmatchDoes) {
  const ModelConfig qwen = load_config(fixture_dir("qwen2"));
  // PEFT's documentation example; "." is any character there too.
  EXPECT_EQ(adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules":
                                      "model.layers.[0-9]+.self_attn.(q|k|v)_proj"})j")),
            in_every_layer({"q_proj", "k_proj", "v_proj"}));
  // A README's target_modules for a Qwen2-VL adapter: everything but the vision tower.
  EXPECT_EQ(adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules":
                     "^(?!.*visual).*(?:o_proj|up_proj|v_proj|down_proj|k_proj|q_proj|gate_proj).*"})j")),
            in_every_layer({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
  // Some layers only.
  EXPECT_EQ(
      adapted(qwen,
              lora_of(R"j({"peft_type": "LORA", "target_modules": "model\\.layers\\.(0|2)\\.mlp\\.down_proj"})j")),
      (std::vector<std::string>{"0.down_proj", "2.down_proj"}));
  // A whole match: "q_proj" alone is not a path, nor is a pattern that matches a part of one.
  const LoraConfig partial = lora_of(R"j({"peft_type": "LORA", "target_modules": "self_attn\\.q_proj"})j");
  expect_mentions(error_of([&] { adapted(qwen, partial); }),
                  {"'self_attn\\.q_proj'", "regular expression", "match no linear module", "q_proj, k_proj",
                   "model.layers.0.self_attn.q_proj"});
  // ChatGLM's paths.
  EXPECT_EQ(adapted(load_config(fixture_dir("chatglm")),
                    lora_of(R"j({"peft_type": "LORA", "target_modules": ".*\\.(query_key_value|dense_4h_to_h)"})j")),
            in_every_layer({"query_key_value", "dense_4h_to_h"}, 2));
}

TEST(LoraTargets, PatternsReachingModulesWithoutLoraAreRefused) {
  const ModelConfig qwen = load_config(fixture_dir("qwen2"));
  // The tied LM head is a module of its own in transformers: PEFT would adapt it.
  expect_mentions(
      error_of([&] { adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ".*(q_proj|lm_head)"})j")); }),
      {"'.*(q_proj|lm_head)'", "lm_head", "puts no LoRA on"});
  expect_mentions(
      error_of([&] { adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ".*\\.self_attn"})j")); }),
      {"model.layers.0.self_attn", "model.layers.2.self_attn", "whole blocks"});
  expect_mentions(error_of([&] { adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ".*"})j")); }),
                  {"model.embed_tokens", "more", "puts no LoRA on"});
  // A list naming the LM head is refused the same way instead of failing on the weights.
  expect_mentions(
      error_of([&] { adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ["q_proj", "lm_head"]})j")); }),
      {"q_proj, lm_head", "lm_head", "puts no LoRA on"});
}

TEST(LoraTargets, PatternsZerotuneCannotCompileAreNamed) {
  for (const char* pattern : {"(?P<name>q_proj)", "(?<=self_attn\\\\.)q_proj", "(?i)Q_PROJ", "model.layers.(0|1"}) {
    const std::string text = std::string(R"({"peft_type": "LORA", "target_modules": ")") + pattern + "\"}";
    expect_mentions(
        error_of([&] { lora_of(text); }),
        {"adapter_config.json", "target_modules is the regular expression", "cannot compile", "ECMAScript"});
  }
  expect_mentions(error_of([] { lora_of(R"j({"peft_type": "LORA", "target_modules": ""})j"); }),
                  {"target_modules is an empty string"});
  expect_mentions(error_of([] {
                    lora_of(R"j({"peft_type": "LORA", "target_modules": ["q_proj"], "exclude_modules": "(?P<x>o)"})j");
                  }),
                  {"exclude_modules is the regular expression '(?P<x>o)'", "cannot compile"});
  // Repeat counts and lengths std::regex would overflow or recurse on are refused before it sees
  // them (a fuzzer's find); small counts and classes holding braces still compile.
  // The parser reads a count's digits before it finds that the brace holds more than counts.
  for (const char* pattern : {"model.layers.[0-9]{1,99999}.q_proj", "q{88888888888888800000000}_proj",
                              "q{00000000008888888888888888888,8888 001}_proj", "q{1,88888888888888888888"})
    expect_mentions(
        error_of([&] { lora_of(std::string(R"({"peft_type": "LORA", "target_modules": ")") + pattern + "\"}"); }),
        {"cannot compile", "repeat count", "over 1000"});
  // A back-reference's number is read the same way (a fuzzer's find: \180555...).
  for (const char* pattern : {"(q)\\\\18055555555555555555555_proj", "[\\\\99999]_proj"})
    expect_mentions(
        error_of([&] { lora_of(std::string(R"({"peft_type": "LORA", "target_modules": ")") + pattern + "\"}"); }),
        {"cannot compile", "back-reference", "over 1000"});
  expect_mentions(
      error_of([] { lora_of(R"({"peft_type": "LORA", "target_modules": ")" + std::string(5000, 'a') + "\"}"); }),
      {"cannot compile", "longer than 4096"});
  EXPECT_FALSE(module_pattern_error("(q|v)_proj\\.\\d+\\1?").has_value());  // a small back-reference compiles
  EXPECT_FALSE(module_pattern_error("model\\.layers\\.[0-9]{1,2}\\.self_attn\\.(q|v)_proj").has_value());
  EXPECT_FALSE(module_pattern_error("q_proj[{]99999}?").has_value());  // a brace in a class is a character
  // "all-linear" in any case is PEFT's shorthand, not a pattern.
  EXPECT_EQ(lora_of(R"j({"peft_type": "LORA", "target_modules": "ALL-LINEAR"})j").target_modules,
            std::vector<std::string>{"all-linear"});
}

// layers_to_transform and layers_pattern, as PEFT's own tests and published configs write them.
TEST(LoraTargets, LayersToTransformKeepsSomeLayers) {
  const ModelConfig qwen = load_config(fixture_dir("qwen2"));
  const LoraConfig some = lora_of(R"j({"peft_type": "LORA", "target_modules": ["q_proj", "v_proj"],
                                      "layers_to_transform": [0, 2], "layers_pattern": "layers"})j");
  EXPECT_EQ(some.layers_to_transform, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(adapted(qwen, some), (std::vector<std::string>{"0.q_proj", "0.v_proj", "2.q_proj", "2.v_proj"}));
  // An index alone, and no layers_pattern: any "<name>.<index>." counts.
  EXPECT_EQ(adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ["down_proj"], "layers_to_transform": 1,
                                      "layers_pattern": null})j")),
            (std::vector<std::string>{"1.down_proj"}));
  EXPECT_EQ(adapted(load_config(fixture_dir("chatglm")),
                    lora_of(R"j({"peft_type": "LORA", "target_modules": ["query_key_value"],
                                "layers_to_transform": [1], "layers_pattern": ["layers"]})j")),
            (std::vector<std::string>{"1.query_key_value"}));
  // GPT-2's "h" is no path of Qwen's: nothing matches, and the error says what was asked.
  expect_mentions(error_of([&] {
                    adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ["q_proj"],
                                              "layers_to_transform": [0], "layers_pattern": "h"})j"));
                  }),
                  {"q_proj in layers 0 (layers_pattern h)", "match no linear module"});
  // A whole path in the list is adapted whatever the layers, as in PEFT.
  EXPECT_EQ(
      adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ["model.layers.1.self_attn.q_proj", "o_proj"],
                                      "layers_to_transform": [0]})j")),
      (std::vector<std::string>{"0.o_proj", "1.q_proj"}));
  // PEFT refuses layer settings beside a string target_modules, "all-linear" included.
  for (const char* targets : {"\".*q_proj\"", "\"all-linear\""}) {
    const std::string text =
        std::string(R"({"peft_type": "LORA", "target_modules": )") + targets + R"j(, "layers_to_transform": [0]})j";
    expect_mentions(error_of([&] { lora_of(text); }), {"layers_to_transform is set beside target_modules", "a string"});
  }
  expect_mentions(error_of([] {
                    lora_of(R"j({"peft_type": "LORA", "target_modules": ".*q_proj", "layers_pattern": ["layers"]})j");
                  }),
                  {"layers_pattern is set beside target_modules"});
  expect_mentions(error_of([] {
                    lora_of(R"j({"peft_type": "LORA", "target_modules": ["q_proj"], "layers_to_transform": ["0"]})j");
                  }),
                  {"layers_to_transform must be a layer index or a list of them"});
}

TEST(LoraTargets, ExcludeModulesKeepsModulesOut) {
  const ModelConfig qwen = load_config(fixture_dir("qwen2"));
  EXPECT_EQ(adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ["q_proj", "down_proj"],
                                      "exclude_modules": ["model.layers.1.mlp.down_proj", "nothing"]})j")),
            (std::vector<std::string>{"0.q_proj", "0.down_proj", "1.q_proj", "2.q_proj", "2.down_proj"}));
  EXPECT_EQ(adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ".*_proj",
                                      "exclude_modules": ".*\\.(0|1)\\..*|.*mlp.*"})j")),
            (std::vector<std::string>{"2.q_proj", "2.k_proj", "2.v_proj", "2.o_proj"}));
  // Excluding the LM head makes ".*" no better: the other modules without LoRA remain.
  expect_mentions(
      error_of([&] {
        adapted(qwen, lora_of(R"j({"peft_type": "LORA", "target_modules": ".*", "exclude_modules": ["lm_head"]})j"));
      }),
      {"excluding lm_head", "model.embed_tokens"});
  // Excluding everything it targets leaves nothing.
  expect_mentions(
      error_of([&] {
        adapted(qwen,
                lora_of(R"j({"peft_type": "LORA", "target_modules": ["q_proj"], "exclude_modules": ["q_proj"]})j"));
      }),
      {"q_proj, excluding q_proj", "match no linear module"});
}

}  // namespace
}  // namespace zt::models
