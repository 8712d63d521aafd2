// Model folders in and out: random init by seed, save-then-load round trips (single file and
// sharded) for every architecture, the files around the weights, and one error that names
// every tensor that does not fit the config.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "models/config/config_presets.h"
#include "models/init.h"
#include "models/weights/weights.h"
#include "tests/common/op_test_util.h"
#include "tests/common/safetensors_test_util.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::expect_mentions;
using testing::ScratchDir;

ModelConfig tiny(Architecture arch) { return parse_config(tiny_config_json(arch), "tiny config.json"); }

void expect_same_parameters(const CausalLM& a, const CausalLM& b) {
  ASSERT_EQ(a.named_parameters().size(), b.named_parameters().size());
  for (std::size_t i = 0; i < a.named_parameters().size(); ++i) {
    const auto& pa = a.named_parameters()[i];
    const auto& pb = b.named_parameters()[i];
    ASSERT_EQ(pa.name, pb.name);
    EXPECT_EQ(pa.variable.data().to_vector(), pb.variable.data().to_vector()) << pa.name;
  }
}

// A folder as transformers would leave it: config.json beside the weights.
void write_config(const ModelConfig& config, const std::string& dir) {
  testing::write_bytes((fs::path(dir) / "config.json").string(), config.raw.dump(2));
}

TEST(ModelInit, DeterministicBySeedAndShapedLikeTransformers) {
  ModelConfig config = tiny(Architecture::kQwen3);
  CausalLM a = init_model(config, 5), b = init_model(config, 5), c = init_model(config, 6);
  expect_same_parameters(a, b);
  EXPECT_NE(a.parameter("lm_head.weight").data().to_vector(), c.parameter("lm_head.weight").data().to_vector());
  // Different parameters draw different numbers (the stream advances between them).
  EXPECT_NE(a.parameter("model.layers.0.self_attn.k_proj.weight").data().to_vector(),
            a.parameter("model.layers.0.self_attn.v_proj.weight").data().to_vector());
  EXPECT_EQ(a.parameter("model.layers.1.input_layernorm.weight").data().to_vector(), std::vector<double>(24, 1.0));
  EXPECT_EQ(a.parameter("model.layers.1.self_attn.q_norm.weight").data().to_vector(), std::vector<double>(8, 1.0));
  EXPECT_EQ(a.parameter("model.layers.1.self_attn.o_proj.bias").data().to_vector(), std::vector<double>(24, 0.0));
  EXPECT_EQ(a.parameter("model.embed_tokens.weight").data().select(0, 0).to_vector(), std::vector<double>(24, 0.0));
  std::vector<double> embed = a.parameter("model.embed_tokens.weight").data().narrow(0, 1, 36).to_vector();
  double sum_sq = 0.0;
  for (double v : embed) sum_sq += v * v;
  EXPECT_NEAR(std::sqrt(sum_sq / static_cast<double>(embed.size())), 0.02, 0.002);
  // The same numbers in another dtype, up to its rounding.
  CausalLM wide = init_model(config, 5, {.dtype = DType::kF64});
  EXPECT_LE(max_abs_diff(wide.parameter("lm_head.weight").data(), a.parameter("lm_head.weight").data()), 1e-9);
}

class ModelSaveLoad : public ::testing::TestWithParam<Architecture> {};

TEST_P(ModelSaveLoad, RoundTripIsIdentical) {
  ScratchDir dir;
  CausalLM original = init_model(tiny(GetParam()), 3);
  save_model(original, dir.str());
  for (const char* file : {"config.json", "generation_config.json", "model.safetensors"})
    EXPECT_TRUE(fs::is_regular_file(dir.file(file))) << file;
  EXPECT_EQ(read_json_file(dir.file("config.json")).dump(), original.config().raw.dump());
  EXPECT_EQ(read_json_file(dir.file("generation_config.json")).at("eos_token_id"), 2);
  CausalLM loaded = load_model(dir.str());
  expect_same_parameters(original, loaded);
  EXPECT_EQ(loaded.source_dir(), dir.str());
  ASSERT_EQ(loaded.buffers().size(), original.buffers().size());
  for (std::size_t i = 0; i < loaded.buffers().size(); ++i) {
    EXPECT_EQ(loaded.buffers()[i].first, original.buffers()[i].first);
    EXPECT_EQ(loaded.buffers()[i].second.to_vector(), original.buffers()[i].second.to_vector());
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, ModelSaveLoad,
                         ::testing::Values(Architecture::kQwen2, Architecture::kQwen3, Architecture::kGlm,
                                           Architecture::kGlm4, Architecture::kChatGlm),
                         [](const auto& info) { return std::string(architecture_name(info.param)); });

TEST(ModelSaveLoad, ChatGlmCarriesItsRopeBuffer) {
  CausalLM model = init_model(tiny(Architecture::kChatGlm), 1);
  ASSERT_EQ(model.buffers().size(), 1u);
  EXPECT_EQ(model.buffers()[0].first, "transformer.rotary_pos_emb.inv_freq");
  // RotaryEmbedding(kv_channels / 2 = 4): 1 / 10000^(i / 4) for i = 0, 2.
  std::vector<double> inv_freq = model.buffers()[0].second.to_vector();
  ASSERT_EQ(inv_freq.size(), 2u);
  EXPECT_DOUBLE_EQ(inv_freq[0], 1.0);
  EXPECT_FLOAT_EQ(inv_freq[1], 0.01f);
}

TEST(ModelSaveLoad, ShardedAndBack) {
  ScratchDir sharded, single;
  CausalLM original = init_model(tiny(Architecture::kGlm), 4);
  save_model(original, sharded.str(), {.max_shard_bytes = 4096});
  ASSERT_TRUE(fs::is_regular_file(sharded.file("model.safetensors.index.json")));
  EXPECT_FALSE(fs::exists(sharded.file("model.safetensors")));
  CausalLM loaded = load_model(sharded.str());
  expect_same_parameters(original, loaded);
  // Saved again into the same folder as one file: the old shards and index go.
  save_model(loaded, sharded.str());
  EXPECT_FALSE(fs::exists(sharded.file("model.safetensors.index.json")));
  expect_same_parameters(original, load_model(sharded.str()));
}

TEST(ModelSaveLoad, DtypesConvertBothWays) {
  ScratchDir dir, half;
  CausalLM original = init_model(tiny(Architecture::kQwen2), 2);
  save_model(original, dir.str());
  CausalLM wide = load_model(dir.str(), {.dtype = DType::kF64});
  EXPECT_EQ(wide.parameter("model.norm.weight").data().dtype(), DType::kF64);
  EXPECT_EQ(wide.parameter("model.embed_tokens.weight").data().to_vector(),
            original.parameter("model.embed_tokens.weight").data().to_vector());
  save_model(original, half.str(), {.dtype = DType::kBF16});
  EXPECT_EQ(SafetensorsFile::open(half.file("model.safetensors")).info("model.norm.weight").dtype, DType::kBF16);
  CausalLM narrow = load_model(half.str());
  Tensor rounded = original.parameter("model.embed_tokens.weight").data().to(DType::kBF16).to(DType::kF32);
  EXPECT_EQ(narrow.parameter("model.embed_tokens.weight").data().to_vector(), rounded.to_vector());
}

TEST(ModelSaveLoad, CompanionFilesAreCopiedOthersAreNot) {
  ScratchDir source, target;
  CausalLM original = init_model(tiny(Architecture::kChatGlm), 2);
  save_model(original, source.str());
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "tokenization_chatglm.py", "notes.txt"})
    testing::write_bytes(source.file(file), std::string("contents of ") + file);
  testing::write_bytes(source.file("generation_config.json"), R"({"eos_token_id": [2, 7], "do_sample": true})");
  save_model(load_model(source.str()), target.str());
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "tokenization_chatglm.py"})
    EXPECT_EQ(testing::read_bytes(target.file(file)), std::string("contents of ") + file);
  EXPECT_FALSE(fs::exists(target.file("notes.txt")));
  EXPECT_EQ(testing::read_bytes(target.file("generation_config.json")),
            R"({"eos_token_id": [2, 7], "do_sample": true})");
}

TEST(ModelLoad, EveryMismatchNamedInOneError) {
  ScratchDir dir;
  CausalLM model = init_model(tiny(Architecture::kQwen2), 1);
  write_config(model.config(), dir.str());
  NamedTensors tensors;
  for (const auto& p : model.named_parameters()) {
    if (p.name == "model.layers.1.mlp.up_proj.weight") continue;
    Tensor value = p.variable.data();
    if (p.name == "model.layers.0.self_attn.k_proj.bias") value = Tensor::zeros({15}, DType::kF32);
    tensors.emplace_back(p.name, value);
  }
  tensors.emplace_back("model.layers.0.self_attn.extra.weight", Tensor::zeros({2, 3}, DType::kF32));
  tensors.emplace_back("lm_head.weight", model.lm_head_weight().data());  // a tied model's copy: ignored
  save_safetensors(dir.file("model.safetensors"), tensors);
  std::string message = error_of([&] { load_model(dir.str()); });
  expect_mentions(message, {"3 problem", "missing: model.layers.1.mlp.up_proj.weight [20, 24]",
                            "wrong shape: model.layers.0.self_attn.k_proj.bias is [15]", "expected [12]",
                            "unexpected: model.layers.0.self_attn.extra.weight [2, 3]", "config.json"});
  EXPECT_EQ(message.find("lm_head"), std::string::npos) << message;
}

TEST(ModelLoad, TiedHeadCopyAndRopeBuffersAreAccepted) {
  ScratchDir dir;
  CausalLM model = init_model(tiny(Architecture::kQwen2), 1);
  write_config(model.config(), dir.str());
  NamedTensors tensors;
  for (const auto& p : model.named_parameters()) tensors.emplace_back(p.name, p.variable.data());
  tensors.emplace_back("lm_head.weight", model.lm_head_weight().data());
  tensors.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", Tensor::ones({4}, DType::kF32));
  save_safetensors(dir.file("model.safetensors"), tensors);
  CausalLM loaded = load_model(dir.str());
  expect_same_parameters(model, loaded);
  ASSERT_EQ(loaded.buffers().size(), 1u);
  EXPECT_EQ(loaded.buffers()[0].first, "model.layers.0.self_attn.rotary_emb.inv_freq");
}

TEST(ModelLoad, MissingPiecesAreNamed) {
  ScratchDir dir;
  expect_mentions(error_of([&] { load_model(dir.str()); }), {"config.json", dir.str().c_str()});
  write_config(tiny(Architecture::kQwen2), dir.str());
  testing::write_bytes(dir.file("pytorch_model.bin"), "pickle");
  expect_mentions(error_of([&] { load_model(dir.str()); }), {".bin", "safetensors", "convert"});
  fs::remove(dir.file("pytorch_model.bin"));
  expect_mentions(error_of([&] { load_model(dir.str()); }), {"no *.safetensors"});
}

}  // namespace
}  // namespace zt::models
