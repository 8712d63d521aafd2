// LoRA adapters in PEFT's layout: round trips, the errors of a mismatched or unsupported
// adapter, and PEFT itself as the oracle. tests/data/models/qwen2_lora holds an adapter that
// PEFT saved for the qwen2 fixture with the logits PEFT computed (scripts/check_peft.py
// writes it); the other direction, PEFT loading what zerotune saves, is checked by the same
// script from the adapters and logits this test writes under the build folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "models/peft/lora_files.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/op_test_util.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

using namespace testing;  // the helpers of tests/common/
using Batch = testing::FixtureBatch;

std::string fresh_dir(const std::string& name) {
  fs::path dir = fs::path(ZT_BINARY_DIR) / "lora_files_test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// An adapter on every linear module whose B is random, so it changes the logits.
LoraConfig attach_trained_looking_lora(CausalLM& model, std::vector<std::string> targets, std::uint64_t seed) {
  LoraConfig config;
  config.rank = 4;
  config.alpha = 8;
  config.target_modules = std::move(targets);
  config.base_model_name_or_path = model.source_dir();
  attach_lora(model, config, seed);
  testing::randomize_lora_b(model, seed);
  return config;
}

void write_json(const std::string& path, const nlohmann::ordered_json& json) { std::ofstream(path) << json.dump(2); }

TEST(LoraFiles, SaveWritesPeftsLayout) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  const LoraConfig config = attach_trained_looking_lora(model, {"q_proj", "v_proj"}, 1);
  const std::string dir = fresh_dir("layout");
  save_lora_adapter(model, config, dir);
  const auto json = read_json_file(dir + "/adapter_config.json");
  EXPECT_EQ(json["peft_type"], "LORA");
  EXPECT_EQ(json["task_type"], "CAUSAL_LM");
  EXPECT_EQ(json["r"], 4);
  EXPECT_EQ(json["lora_alpha"], 8);
  EXPECT_EQ(json["bias"], "none");
  EXPECT_EQ(json["fan_in_fan_out"], false);
  EXPECT_EQ(json["target_modules"], (nlohmann::ordered_json{"q_proj", "v_proj"}));
  EXPECT_EQ(json["base_model_name_or_path"], fixture_dir("qwen2"));
  // PEFT before 0.14 builds LoraConfig(**file) and fails on a key its version lacks
  // (LLaMA-Factory 0.8 to 0.9.1 require peft 0.11-0.12): without exclusions every key written
  // is one PeftConfig and LoraConfig have had since PEFT 0.10 (use_dora).
  const std::set<std::string> peft_0_10_keys = {"base_model_name_or_path",
                                                "revision",
                                                "peft_type",
                                                "task_type",
                                                "inference_mode",
                                                "auto_mapping",
                                                "r",
                                                "target_modules",
                                                "lora_alpha",
                                                "lora_dropout",
                                                "fan_in_fan_out",
                                                "bias",
                                                "use_rslora",
                                                "modules_to_save",
                                                "init_lora_weights",
                                                "layers_to_transform",
                                                "layers_pattern",
                                                "rank_pattern",
                                                "alpha_pattern",
                                                "megatron_config",
                                                "megatron_core",
                                                "loftq_config",
                                                "use_dora",
                                                "layer_replication"};
  for (const auto& [key, value] : json.items()) EXPECT_TRUE(peft_0_10_keys.count(key)) << key;
  const SafetensorsFile file = SafetensorsFile::open(dir + "/adapter_model.safetensors");
  EXPECT_EQ(file.names().size(), 12u);
  EXPECT_TRUE(file.contains("base_model.model.model.layers.2.self_attn.v_proj.lora_B.weight"));
  EXPECT_EQ(file.info("base_model.model.model.layers.2.self_attn.v_proj.lora_B.weight").shape, (Shape{32, 4}));
  EXPECT_EQ(file.info("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight").dtype, DType::kF32);
  EXPECT_EQ(file.metadata().at("format"), "pt");
}

TEST(LoraFiles, SaveThenLoadGivesTheSameLogits) {
  for (const char* arch : {"qwen2", "chatglm"}) {
    CausalLM model = load_model(fixture_dir(arch));
    const LoraConfig config = attach_trained_looking_lora(model, lora_module_names(model.config()), 2);
    const Batch batch = fixture_batch(arch);
    const Tensor adapted = logits_of(model, batch);
    const std::string dir = fresh_dir(std::string("round_trip_") + arch);
    save_lora_adapter(model, config, dir);

    CausalLM reloaded = load_model(fixture_dir(arch));
    const LoraConfig read = load_lora_adapter(reloaded, dir);
    EXPECT_EQ(read.target_modules, config.target_modules);
    EXPECT_DOUBLE_EQ(read.scale(), config.scale());
    EXPECT_EQ(max_abs_diff(logits_of(reloaded, batch), adapted), 0.0) << arch;
  }
}

TEST(LoraFiles, MismatchedAdapterIsReportedWhole) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  const LoraConfig config = attach_trained_looking_lora(model, {"q_proj", "v_proj"}, 3);
  const std::string dir = fresh_dir("mismatch");
  save_lora_adapter(model, config, dir);
  CausalLM other = load_model(fixture_dir("qwen2"));
  LoraConfig wider = config;
  wider.target_modules = {"q_proj", "k_proj"};
  wider.rank = 2;
  attach_lora(other, wider, 0);
  const std::string message = testing::error_of([&] { load_lora_weights(other, dir); });
  testing::expect_mentions(
      message, {"adapter_model.safetensors", "missing: base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight",
                "unexpected: base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight",
                "wrong shape: base_model.model.model.layers.2.self_attn.q_proj.lora_A.weight is [4, 96]"});
}

TEST(LoraFiles, UnsupportedPeftSettingsAreNamed) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  const LoraConfig config = attach_trained_looking_lora(model, {"q_proj"}, 4);
  const std::string dir = fresh_dir("unsupported");
  save_lora_adapter(model, config, dir);
  const auto original = read_json_file(dir + "/adapter_config.json");
  auto expect_refused = [&](const char* key, nlohmann::ordered_json value, std::initializer_list<const char*> words) {
    auto json = original;
    json[key] = std::move(value);
    write_json(dir + "/adapter_config.json", json);
    testing::expect_mentions(testing::error_of([&] { read_lora_config(dir); }), words);
  };
  expect_refused("target_modules", "(?P<m>q)_proj", {"adapter_config.json", "target_modules", "cannot compile"});
  expect_refused("rank_pattern", {{"q_proj", 16}}, {"rank_pattern"});
  expect_refused("use_dora", true, {"use_dora"});
  expect_refused("bias", "lora_only", {"bias"});
  expect_refused("peft_type", "PREFIX_TUNING", {"peft_type", "PREFIX_TUNING"});
  // What PEFT itself accepts: "all-linear", and the rank-stabilised scale.
  auto json = original;
  json["target_modules"] = "all-linear";
  json["use_rslora"] = true;
  json["lora_alpha"] = 6;
  write_json(dir + "/adapter_config.json", json);
  const LoraConfig read = read_lora_config(dir);
  EXPECT_DOUBLE_EQ(read.scale(), 3.0);  // 6 / sqrt(4)
  EXPECT_EQ(read.target_modules, std::vector<std::string>{"all-linear"});
}

// A PEFT adapter saved with a regular-expression target_modules (and exclude_modules) loads
// onto the modules the pattern picks, and computes what the adapter saved from names did.
TEST(LoraFiles, RegexTargetsLoadTheModulesTheyMatch) {
  CausalLM model = load_model(fixture_dir("qwen2"));
  LoraConfig config = attach_trained_looking_lora(model, {"q_proj", "v_proj"}, 6);
  const Batch batch = fixture_batch("qwen2");
  const Tensor adapted = logits_of(model, batch);
  const std::string dir = fresh_dir("regex");
  save_lora_adapter(model, config, dir);
  auto json = read_json_file(dir + "/adapter_config.json");
  json["target_modules"] = ".*\\.(q_proj|v_proj|o_proj)";
  json["exclude_modules"] = ".*o_proj";
  write_json(dir + "/adapter_config.json", json);

  CausalLM reloaded = load_model(fixture_dir("qwen2"));
  const LoraConfig read = load_lora_adapter(reloaded, dir);
  EXPECT_EQ(read.target_pattern, ".*\\.(q_proj|v_proj|o_proj)");
  EXPECT_EQ(read.exclude_pattern, ".*o_proj");
  EXPECT_EQ(lora_parameters(reloaded).size(), 12u);
  EXPECT_EQ(max_abs_diff(logits_of(reloaded, batch), adapted), 0.0);
  // Saving it again keeps the pattern, as PEFT would.
  const std::string again = fresh_dir("regex_again");
  save_lora_adapter(reloaded, read, again);
  const auto saved = read_json_file(again + "/adapter_config.json");
  EXPECT_EQ(saved["target_modules"], ".*\\.(q_proj|v_proj|o_proj)");
  EXPECT_EQ(saved["exclude_modules"], ".*o_proj");

  // A pattern matching nothing of this model names the file and the pattern.
  json["target_modules"] = ".*\\.qkv_proj";
  write_json(dir + "/adapter_config.json", json);
  CausalLM other = load_model(fixture_dir("qwen2"));
  testing::expect_mentions(testing::error_of([&] { load_lora_adapter(other, dir); }),
                           {"adapter_config.json", "'.*\\.qkv_proj'", "match no linear module"});
}

// Adapters and logits for scripts/check_peft.py: PEFT must load each adapter onto the base
// fixture and compute these logits.
TEST(LoraFiles, WritesAdaptersForPeftToCheck) {
  for (const char* arch : {"qwen2", "qwen3", "glm", "glm4"}) {
    CausalLM model = load_model(fixture_dir(arch));
    const LoraConfig config = attach_trained_looking_lora(model, lora_module_names(model.config()), 5);
    const Batch batch = fixture_batch(arch);
    const std::string dir = (fs::path(ZT_BINARY_DIR) / "lora_peft_check" / arch).string();
    fs::remove_all(dir);
    save_lora_adapter(model, config, dir);
    save_safetensors(dir + "/logits.safetensors",
                     {{"input_ids", batch.ids},
                      {"cu_seqlens", batch.cu_seqlens.to(DType::kI64)},
                      {"logits", logits_of(model, batch)}},
                     {{"format", "pt"}});
    EXPECT_TRUE(fs::is_regular_file(dir + "/adapter_config.json"));
  }
}

// PEFT's own adapter for the qwen2 fixture, with the logits PEFT computed on its batch.
TEST(LoraFiles, LoadsPeftsAdapterAndMatchesPeftsLogits) {
  const std::string dir = fixture_dir("qwen2_lora");
  ASSERT_TRUE(fs::is_regular_file(dir + "/adapter_model.safetensors") &&
              fs::is_regular_file(dir + "/expected.safetensors"))
      << "no PEFT adapter fixture in " << dir << ": run `python3 scripts/check_peft.py fixture` (needs torch, "
      << "transformers and peft) to write it";
  CausalLM model = load_model(fixture_dir("qwen2"));
  load_lora_adapter(model, dir);
  const Tensor expected = SafetensorsFile::open(dir + "/expected.safetensors").get("logits");
  const Tensor logits = logits_of(model, fixture_batch("qwen2"));
  ASSERT_EQ(logits.shape(), expected.shape());
  EXPECT_LE(relative_error(logits, expected), 1e-5);
  CausalLM base = load_model(fixture_dir("qwen2"));
  EXPECT_GT(max_abs_diff(logits_of(base, fixture_batch("qwen2")), expected), 1e-3) << "the adapter changes nothing";
}

}  // namespace
}  // namespace zt::models
