// PEFT's prefix tuning (models/peft/peft_prefix_files.h): the qwen2_ptuning fixture's prefix, laid
// out as PEFT saves it (adapter_config.json + prompt_embeddings), must give the fixture's
// logits with positions from 0 (ChatGLM's way) and, with PEFT's positions after the prefix,
// the logits of the model run by hand on a cache holding the prefix; models::generate, the
// engine and the CLI must agree; bad folders must be clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "autograd/grad_mode.h"
#include "infer/engine.h"
#include "models/peft/peft_adapter.h"
#include "models/peft/peft_prefix_files.h"
#include "models/reference/generate.h"
#include "models/reference/sequence_kv_cache.h"
#include "models/weights/weights.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;
using Tokens = std::vector<std::int64_t>;

const fs::path kModels = fs::path(ZT_SOURCE_DIR) / "tests/data/models";

Tensor int_tensor(const nlohmann::ordered_json& list, DType dtype) {
  std::vector<double> values;
  for (const auto& v : list) values.push_back(v.get<double>());
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype);
}

// The fixture's per-layer prefix as PEFT's table: row t is [layer][key, value][kv_head][head_dim].
Tensor fixture_table(const ModelConfig& c, std::int64_t* tokens) {
  const SafetensorsFile expected = SafetensorsFile::open((kModels / "qwen2_ptuning/expected.safetensors").string());
  *tokens = expected.get("prefix/0/keys").size(1);
  const std::int64_t width = c.num_kv_heads * c.head_dim;
  std::vector<double> table(static_cast<std::size_t>(*tokens * c.num_layers * 2 * width));
  for (std::int64_t layer = 0; layer < c.num_layers; ++layer)
    for (int kv = 0; kv < 2; ++kv) {
      const std::string name = "prefix/" + std::to_string(layer) + (kv == 0 ? "/keys" : "/values");
      const std::vector<double> part = expected.get(name).to_vector();  // [1, tokens, kv_heads, head_dim]
      for (std::int64_t t = 0; t < *tokens; ++t)
        for (std::int64_t i = 0; i < width; ++i)
          table[static_cast<std::size_t>(((t * c.num_layers + layer) * 2 + kv) * width + i)] =
              part[static_cast<std::size_t>(t * width + i)];
    }
  return Tensor::from_values(table, {*tokens, c.num_layers * 2 * width}, DType::kF32);
}

nlohmann::ordered_json peft_config(const ModelConfig& c, std::int64_t tokens) {
  return {{"peft_type", "PREFIX_TUNING"},
          {"task_type", "CAUSAL_LM"},
          {"num_virtual_tokens", tokens},
          {"num_layers", c.num_layers},
          {"token_dim", c.num_kv_heads * c.head_dim},
          {"num_attention_heads", c.num_kv_heads},
          {"num_transformer_submodules", 1},
          {"prefix_projection", true},
          {"inference_mode", true},
          {"base_model_name_or_path", "tests/data/models/qwen2"}};
}

void write_folder(const fs::path& dir, const nlohmann::ordered_json& config, const NamedTensors& tensors) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "adapter_config.json") << config.dump(2);
  save_safetensors((dir / "adapter_model.safetensors").string(), tensors, {{"format", "pt"}});
}

class PeftPrefix : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = zt::testing::test_folder("ptuning_peft_test", /*fresh=*/true);
    table_ = fixture_table(model_.config(), &tokens_);
    write_folder(adapter(), peft_config(model_.config(), tokens_), {{kPeftPrefixTensor, table_}});
  }
  fs::path adapter() const { return folder_ / "peft_prefix"; }

  Tensor packed_logits(const CausalLM& model) const {
    autograd::NoGradGuard no_recording;
    return model
        .forward(int_tensor(fixture_["input_ids"], DType::kI64), int_tensor(fixture_["position_ids"], DType::kI64),
                 int_tensor(fixture_["cu_seqlens"], DType::kI32))
        .data();
  }

  CausalLM model_ = load_model((kModels / "qwen2").string(), {Device::cpu(), DType::kF32});
  nlohmann::ordered_json fixture_ = read_json_file((kModels / "qwen2_ptuning/fixture.json").string());
  fs::path folder_;
  Tensor table_;
  std::int64_t tokens_ = 0;
};

TEST_F(PeftPrefix, WithPositionsFromZeroGivesTheChatGlmFixtureLogits) {
  const std::vector<PrefixKv> prefix = read_peft_prefix(model_, adapter().string());
  const SafetensorsFile expected = SafetensorsFile::open((kModels / "qwen2_ptuning/expected.safetensors").string());
  for (std::size_t layer = 0; layer < prefix.size(); ++layer) {
    const std::string key = "prefix/" + std::to_string(layer);
    EXPECT_EQ(relative_error(prefix[layer].keys.data(), expected.get(key + "/keys")), 0.0) << key;
    EXPECT_EQ(relative_error(prefix[layer].values.data(), expected.get(key + "/values")), 0.0) << key;
  }
  model_.set_prefix_source(fixed_prefix_source(prefix), PrefixPositions::kFromZero);
  EXPECT_LE(relative_error(packed_logits(model_), expected.get("logits")), 1e-5);
}

// Sequence by sequence, the prefix in a cache and the positions shifted by hand.
Tensor logits_after_prefix_by_hand(const CausalLM& base, const std::vector<PrefixKv>& prefix,
                                   const nlohmann::ordered_json& fixture) {
  autograd::NoGradGuard no_recording;
  const std::vector<double> ids = int_tensor(fixture["input_ids"], DType::kI64).to_vector();
  const std::vector<double> cu = int_tensor(fixture["cu_seqlens"], DType::kI64).to_vector();
  const std::int64_t length = prefix.front().keys.data().size(1);
  std::vector<double> logits;
  for (std::size_t s = 0; s + 1 < cu.size(); ++s) {
    const auto n = static_cast<std::int64_t>(cu[s + 1] - cu[s]);
    SequenceKvCache cache(base.config(), length + n, DType::kF32, Device::cpu());
    std::vector<Tensor> keys, values;
    for (const PrefixKv& layer : prefix) {
      keys.push_back(layer.keys.data().squeeze(0));
      values.push_back(layer.values.data().squeeze(0));
    }
    cache.prepend(keys, values);
    std::vector<double> seq(ids.begin() + static_cast<std::ptrdiff_t>(cu[s]),
                            ids.begin() + static_cast<std::ptrdiff_t>(cu[s + 1]));
    std::vector<double> positions;
    for (std::int64_t i = 0; i < n; ++i) positions.push_back(static_cast<double>(length + i));
    const Tensor hidden =
        base.forward_hidden(Tensor::from_values(seq, {n}, DType::kI64),
                            Tensor::from_values(positions, {n}, DType::kI64),
                            Tensor::from_values({0, static_cast<double>(n)}, {2}, DType::kI32), &cache)
            .data();
    const std::vector<double> part = base.lm_head(autograd::Variable(hidden)).data().to_vector();
    logits.insert(logits.end(), part.begin(), part.end());
  }
  const auto tokens = static_cast<std::int64_t>(ids.size());
  return Tensor::from_values(logits, {tokens, static_cast<std::int64_t>(logits.size()) / tokens}, DType::kF32);
}

TEST_F(PeftPrefix, WithPeftPositionsGivesTheLogitsOfTheCacheRunByHand) {
  const std::vector<PrefixKv> prefix = read_peft_prefix(model_, adapter().string());
  const Tensor by_hand = logits_after_prefix_by_hand(model_, prefix, fixture_);
  EXPECT_EQ(load_peft_adapter(model_, adapter().string()), PeftAdapterKind::kPrefix);
  EXPECT_EQ(model_.prefix_positions(), PrefixPositions::kAfterPrefix);
  const Tensor logits = packed_logits(model_);
  EXPECT_LE(relative_error(logits, by_hand), 1e-5);
  const SafetensorsFile expected = SafetensorsFile::open((kModels / "qwen2_ptuning/expected.safetensors").string());
  EXPECT_GT(relative_error(logits, expected.get("logits")), 1e-3) << "the positions must matter";
}

// Greedy decoding by hand: the prefix in a cache, each token at its position after the prefix.
Tokens greedy_by_hand(const CausalLM& base, const std::vector<PrefixKv>& prefix, Tokens prompt, std::int64_t steps) {
  autograd::NoGradGuard no_recording;
  const std::int64_t length = prefix.front().keys.data().size(1);
  SequenceKvCache cache(base.config(), length + static_cast<std::int64_t>(prompt.size()) + steps, DType::kF32,
                        Device::cpu());
  std::vector<Tensor> keys, values;
  for (const PrefixKv& layer : prefix) {
    keys.push_back(layer.keys.data().squeeze(0));
    values.push_back(layer.values.data().squeeze(0));
  }
  cache.prepend(keys, values);
  Tokens out, input = prompt;
  for (std::int64_t step = 0; step < steps; ++step) {
    std::vector<double> ids(input.begin(), input.end()), positions;
    for (std::size_t i = 0; i < input.size(); ++i) positions.push_back(static_cast<double>(cache.length() + i));
    const auto n = static_cast<std::int64_t>(input.size());
    const Tensor hidden =
        base.forward_hidden(Tensor::from_values(ids, {n}, DType::kI64),
                            Tensor::from_values(positions, {n}, DType::kI64),
                            Tensor::from_values({0, static_cast<double>(n)}, {2}, DType::kI32), &cache)
            .data();
    const std::vector<double> row = base.lm_head(autograd::Variable(hidden.narrow(0, n - 1, 1))).data().to_vector();
    out.push_back(std::max_element(row.begin(), row.end()) - row.begin());
    input = {out.back()};
  }
  return out;
}

TEST_F(PeftPrefix, GenerateAndTheEngineGiveTheTokensOfTheCacheRunByHand) {
  const std::vector<PrefixKv> prefix = read_peft_prefix(model_, adapter().string());
  const std::vector<Tokens> prompts{{350, 111, 27}, {178}, {164, 391, 393, 136, 147, 156, 156, 460, 149}};
  std::vector<Tokens> by_hand;
  for (const Tokens& p : prompts) by_hand.push_back(greedy_by_hand(model_, prefix, p, 7));
  load_peft_prefix(model_, adapter().string());
  std::vector<infer::GenerationRequest> requests;
  GenerationOptions options;
  options.max_new_tokens = 7;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(generate(model_, prompts[i], options), by_hand[i]) << "prompt " << i;
    requests.push_back({prompts[i], options});
  }
  for (infer::EngineOptions engine : {infer::EngineOptions{.max_batch = 2, .block_size = 3},
                                      infer::EngineOptions{.max_batch = 1}, infer::EngineOptions{.block_size = 16}})
    EXPECT_EQ(infer::Engine(model_, engine).run(requests), by_hand) << "max_batch " << engine.max_batch;
}

TEST_F(PeftPrefix, BadFoldersAreClearErrors) {
  const ModelConfig& c = model_.config();
  const std::string dir = (folder_ / "bad").string();
  auto error_loading = [&](const nlohmann::ordered_json& config, const NamedTensors& tensors) {
    write_folder(dir, config, tensors);
    return testing::error_of([&] { load_peft_adapter(model_, dir); });
  };
  const Tensor narrow = table_.narrow(1, 0, table_.size(1) / 2).contiguous();
  testing::expect_mentions(error_loading(peft_config(c, tokens_), {{kPeftPrefixTensor, narrow}}),
                           {"prompt_embeddings", "[4, 96]", "[4, 192]", "different base model"});
  nlohmann::ordered_json deeper = peft_config(c, tokens_);
  deeper["num_layers"] = 4;
  testing::expect_mentions(error_loading(deeper, {{kPeftPrefixTensor, table_}}),
                           {"num_layers is 4", "has 3", "different base model"});
  testing::expect_mentions(error_loading(peft_config(c, tokens_), {{"embedding.weight", table_}}),
                           {"no tensor 'prompt_embeddings'"});
  for (const char* type : {"P_TUNING", "PROMPT_TUNING"}) {
    nlohmann::ordered_json other = peft_config(c, tokens_);
    other["peft_type"] = type;
    testing::expect_mentions(error_loading(other, {{kPeftPrefixTensor, table_}}), {type, "virtual token embeddings"});
  }
  nlohmann::ordered_json unsized = peft_config(c, tokens_);
  unsized.erase("token_dim");
  testing::expect_mentions(error_loading(unsized, {{kPeftPrefixTensor, table_}}), {"token_dim is missing"});
  EXPECT_FALSE(model_.prefix_source()) << "a failed load must leave the model as it was";
}

// The JSON arrays of `output` (the new token ids), without the log lines around them.
std::string id_lines(const std::string& output) {
  std::istringstream in(output);
  std::string ids;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.front() == '[') ids += line + "\n";
  return ids;
}

// The flags a PEFT user passes, as the CLI reads them: both name the same prefix.
TEST_F(PeftPrefix, GenerateTakesTheFolderAsAdapterOrAsPtuningCheckpoint) {
  const std::string base = "generate --model_name_or_path " +
                           (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string() +
                           " --device cpu --max_new_tokens 5 --output_format ids --prompt hello ";
  const zt::testing::CliRun plain = zt::testing::run_zerotune(base, folder_);
  const zt::testing::CliRun adapter_flag =
      zt::testing::run_zerotune(base + "--adapter_name_or_path " + adapter().string(), folder_);
  const zt::testing::CliRun ptuning_flag =
      zt::testing::run_zerotune(base + "--ptuning_checkpoint " + adapter().string(), folder_);
  ASSERT_EQ(adapter_flag.exit_code, 0) << adapter_flag.output;
  ASSERT_EQ(ptuning_flag.exit_code, 0) << ptuning_flag.output;
  ASSERT_FALSE(id_lines(adapter_flag.output).empty()) << adapter_flag.output;
  EXPECT_EQ(id_lines(adapter_flag.output), id_lines(ptuning_flag.output));
  EXPECT_NE(id_lines(adapter_flag.output), id_lines(plain.output)) << "the prefix must change the answer";
  const zt::testing::CliRun both = zt::testing::run_zerotune(
      base + "--adapter_name_or_path " + adapter().string() + " --ptuning_checkpoint " + adapter().string(), folder_);
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.output.find("pass one of them"), std::string::npos) << both.output;
}

}  // namespace
}  // namespace zt::models
