// A bitsandbytes 4-bit model folder written in transformers' exact layout from the tiny model
// (examples/tiny-qwen): it loads and gives the logits of the same model with each linear
// replaced by the CPU reference's dequantization, whether dequantized at load or kept 4-bit
// (one layer dequantized at a time); LoRA's gradients through the 4-bit layers equal those of
// the dequantized model; damaged folders are refused naming the tensor.
#include <gtest/gtest.h>

#include <filesystem>

#include "autograd/grad_mode.h"
#include "models/config/config_presets.h"
#include "models/init.h"
#include "models/peft/lora.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "ops/quant4/blockwise.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

namespace zt::models::quant {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::expect_mentions;

const std::string kTiny = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";

struct Batch {
  Tensor ids, positions, cu_seqlens;
};

// Token ids below `vocab` (the tiny presets have a few dozen).
Batch batch(std::int64_t vocab = 503) {
  std::vector<double> ids;
  for (double id : {5, 17, 230, 41, 9, 300, 77, 12})
    ids.push_back(static_cast<double>(static_cast<std::int64_t>(id) % vocab));
  return {Tensor::from_values(ids, {8}, DType::kI64), Tensor::from_values({0, 1, 2, 3, 4, 0, 1, 2}, {8}, DType::kI64),
          Tensor::from_values({0, 5, 8}, {3}, DType::kI32)};
}

Tensor logits(const CausalLM& model) {
  autograd::NoGradGuard no_recording;
  const Batch b = batch(model.config().vocab_size);
  return model.forward(b.ids, b.positions, b.cu_seqlens).data();
}

// The dense model with every linear weight replaced by ops/quant4's quantize -> dequantize,
// computed here from the ops directly.
CausalLM reference_dequantized(const Quant4Options& options) {
  CausalLM model = load_model(kTiny);
  autograd::NoGradGuard no_recording;
  for (const NamedParameter& p : model.named_parameters()) {
    if (!is_quantizable_linear(model.config(), p.name)) continue;
    const std::vector<double> values = p.variable.data().to_vector();
    const std::vector<float> floats(values.begin(), values.end());
    ops::quant4::Packed4 q = ops::quant4::quantize_4bit(floats, options.blocksize, options.type, p.name);
    std::vector<float> absmax = q.absmax;
    if (options.double_quant) {
      const ops::quant4::NestedAbsmax nested = ops::quant4::compress_absmax(q.absmax);
      absmax = ops::quant4::decompress_absmax(nested.codes, nested.absmax, nested.blocksize, nested.offset,
                                              ops::quant4::dynamic_map());
    }
    std::vector<float> out(floats.size());
    ops::quant4::dequantize_4bit(q.packed, absmax, options.blocksize, options.type, out);
    Tensor target = p.variable.data();
    target.copy_from(Tensor::from_values(std::vector<double>(out.begin(), out.end()), target.shape(), DType::kF32));
  }
  return model;
}

void expect_equal(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << what << " element " << i;
}

class QuantizedCheckpoint : public testing::FolderTest {};

TEST_F(QuantizedCheckpoint, WrittenInTransformersLayout) {
  const Quant4Options options{.type = Quant4Type::kNf4, .double_quant = true, .blocksize = 64};
  save_bnb_4bit_model(load_model(kTiny), dir_.string(), options);
  const SafetensorsFile file = SafetensorsFile::open((dir_ / "model.safetensors").string());
  const std::string w = "model.layers.1.mlp.down_proj.weight";  // [96, 120]: 11520 values, 180 blocks
  EXPECT_EQ(file.info(w).dtype, DType::kU8);
  EXPECT_EQ(file.info(w).shape, (Shape{5760, 1}));
  EXPECT_EQ(file.info(w + ".absmax").dtype, DType::kU8);
  EXPECT_EQ(file.info(w + ".absmax").shape, (Shape{180}));
  EXPECT_EQ(file.info(w + ".quant_map").shape, (Shape{16}));
  EXPECT_EQ(file.info(w + ".nested_absmax").shape, (Shape{1}));
  EXPECT_EQ(file.info(w + ".nested_quant_map").shape, (Shape{256}));
  const Tensor json = file.get(w + ".quant_state.bitsandbytes__nf4");
  const std::string text(json.data<char>(), static_cast<std::size_t>(json.numel()));
  EXPECT_EQ(text.rfind(R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [96, 120], )", 0), 0u)
      << text;
  // Embeddings, norms and biases stay dense.
  EXPECT_EQ(file.info("model.embed_tokens.weight").dtype, DType::kF32);
  EXPECT_EQ(file.info("model.layers.0.self_attn.q_proj.bias").dtype, DType::kF32);
  EXPECT_EQ(file.info("model.norm.weight").dtype, DType::kF32);
  const nlohmann::ordered_json config = read_json_file((dir_ / "config.json").string());
  EXPECT_EQ(config["quantization_config"]["quant_method"], "bitsandbytes");
  EXPECT_EQ(config["quantization_config"]["bnb_4bit_quant_type"], "nf4");
  EXPECT_EQ(config["quantization_config"]["bnb_4bit_use_double_quant"], true);
}

TEST_F(QuantizedCheckpoint, LoadsToTheReferenceLogits) {
  for (const Quant4Options options :
       {Quant4Options{.type = Quant4Type::kNf4, .double_quant = true},
        Quant4Options{.type = Quant4Type::kFp4, .double_quant = false, .blocksize = 128}}) {
    const fs::path folder = dir_ / quant4_type_name(options.type);
    save_bnb_4bit_model(load_model(kTiny), folder.string(), options);
    const Tensor expected = logits(reference_dequantized(options));
    const CausalLM dense = load_model(folder.string());
    EXPECT_TRUE(dense.config().bnb_4bit);
    expect_equal(logits(dense), expected, "dequantized at load");
    const CausalLM packed = load_model(folder.string(), {.keep_4bit_weights = true});
    const auto* linears = dynamic_cast<const QuantizedLinears*>(packed.owned_parameter_gatherer().get());
    ASSERT_NE(linears, nullptr);
    EXPECT_EQ(linears->entries().size(), 3u * 7u);
    EXPECT_EQ(packed.parameter("model.layers.2.mlp.up_proj.weight").data().numel(), 0);  // 4-bit at rest
    expect_equal(logits(packed), expected, "kept 4-bit");
    EXPECT_EQ(packed.parameter("model.layers.2.mlp.up_proj.weight").data().numel(), 0);
    // Saved dense again: the quantization_config goes, the values stay.
    const fs::path resaved = dir_ / "resaved";
    save_model(packed, resaved.string());
    EXPECT_FALSE(read_json_file((resaved / "config.json").string()).contains("quantization_config"));
    expect_equal(logits(load_model(resaved.string())), expected, "saved dense");
  }
}

TEST_F(QuantizedCheckpoint, QuantizingAtLoadEqualsThePreQuantizedFolder) {
  const Quant4Options options{.type = Quant4Type::kNf4, .double_quant = true};
  CausalLM model = load_model(kTiny);
  for (const NamedParameter& p : model.named_parameters()) p.variable.set_requires_grad(false);
  const std::int64_t bytes = quantize_linears(model, options);
  // 0.5 byte a weight + a byte a block + the nested scales and maps, per linear.
  EXPECT_GT(bytes, 0);
  expect_equal(logits(model), logits(reference_dequantized(options)), "quantized at load");
  EXPECT_THROW(quantize_linears(model, options), Error);  // a second gatherer
}

TEST_F(QuantizedCheckpoint, QuantizedAsItLoadsNeverHoldingTheDenseLinears) {
  for (const Quant4Options options : {Quant4Options{.type = Quant4Type::kNf4, .double_quant = true},
                                      Quant4Options{.type = Quant4Type::kFp4, .double_quant = false}}) {
    const CausalLM model = load_model(kTiny, {.quantize_base = options});
    EXPECT_EQ(model.num_parameters(), load_model(kTiny).num_parameters());
    EXPECT_EQ(model.parameter("model.layers.0.self_attn.q_proj.weight").data().numel(), 0);
    EXPECT_GT(model.parameter("model.layers.0.self_attn.q_proj.bias").data().numel(), 0);
    expect_equal(logits(model), logits(reference_dequantized(options)), "quantized as it loads");
    // Resident: the dense float32 model less its linears' 4 bytes a weight, plus their 4 bits.
    std::int64_t linear_numel = 0, packed_bytes = 0;
    for (const auto& layer : quantizable_linear_specs(model.config()))
      for (const ParamSpec& spec : layer) {
        linear_numel += shape_numel(spec.shape);
        packed_bytes += ops::quant4::quantized_bytes(shape_numel(spec.shape), 64, options.double_quant);
      }
    EXPECT_EQ(resident_weight_bytes(model), 4 * (model.num_parameters() - linear_numel) + packed_bytes);
    EXPECT_EQ(resident_weight_bytes(load_model(kTiny)), 4 * model.num_parameters());
  }
}

TEST_F(QuantizedCheckpoint, SkippedModulesStayDense) {
  const std::vector<std::string> skip = {"mlp.down_proj"};
  save_bnb_4bit_model(load_model(kTiny), dir_.string(), {}, skip);
  const SafetensorsFile file = SafetensorsFile::open((dir_ / "model.safetensors").string());
  EXPECT_EQ(file.info("model.layers.1.mlp.down_proj.weight").dtype, DType::kF32);
  EXPECT_FALSE(file.contains("model.layers.1.mlp.down_proj.weight.absmax"));
  const CausalLM packed = load_model(dir_.string(), {.keep_4bit_weights = true});
  EXPECT_EQ(packed.config().bnb_skip_modules, skip);
  EXPECT_GT(packed.parameter("model.layers.1.mlp.down_proj.weight").data().numel(), 0);
  EXPECT_EQ(packed.parameter("model.layers.1.mlp.up_proj.weight").data().numel(), 0);
  expect_equal(logits(packed), logits(load_model(dir_.string())), "with a dense down_proj");
}

TEST_F(QuantizedCheckpoint, LoraGradientsThroughFourBitLayersEqualTheDequantizedModel) {
  const Quant4Options options{.type = Quant4Type::kNf4, .double_quant = true};
  save_bnb_4bit_model(load_model(kTiny), dir_.string(), options);
  auto gradients = [&](CausalLM model) {
    for (const NamedParameter& p : model.named_parameters()) p.variable.set_requires_grad(false);
    LoraConfig lora;
    lora.rank = 4;
    lora.alpha = 8;
    lora.target_modules = parse_lora_target("all", model.config());
    attach_lora(model, lora, 3);
    autograd::NoGradGuard off;
    for (const NamedParameter& p : lora_parameters(model))
      if (p.name.find("lora_B") != std::string::npos) {
        Tensor b = p.variable.data();
        b.copy_from(Tensor::normal(b.shape(), 9, 0, 0.0, 0.1, DType::kF32));
      }
    std::vector<Tensor> grads;
    {
      autograd::EnableGradGuard on;
      const Batch b = batch();
      model
          .loss(model.forward(b.ids, b.positions, b.cu_seqlens),
                Tensor::from_values({17, 230, 41, 9, -100, 77, 12, -100}, {8}, DType::kI64))
          .backward();
    }
    for (const NamedParameter& p : lora_parameters(model)) grads.push_back(p.variable.grad());
    return grads;
  };
  const std::vector<Tensor> dense = gradients(load_model(dir_.string()));
  const std::vector<Tensor> packed = gradients(load_model(dir_.string(), {.keep_4bit_weights = true}));
  ASSERT_EQ(dense.size(), packed.size());
  for (std::size_t i = 0; i < dense.size(); ++i) {
    const std::vector<double> a = dense[i].to_vector(), b = packed[i].to_vector();
    for (std::size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-6 * (1 + std::fabs(a[k]))) << i << " " << k;
  }
}

// Every architecture's linears (GLM's fused [gate; up], ChatGLM's query_key_value and
// dense_4h_to_h, Qwen3's q/k norms beside them) round-trip through the layout and load kept
// 4-bit to the logits of the folder dequantized at load.
TEST_F(QuantizedCheckpoint, EveryArchitectureLoadsKeptFourBit) {
  for (Architecture arch :
       {Architecture::kQwen2, Architecture::kQwen3, Architecture::kGlm, Architecture::kGlm4, Architecture::kChatGlm}) {
    const fs::path folder = dir_ / architecture_name(arch);
    save_bnb_4bit_model(init_model(parse_config(tiny_config_json(arch), "config.json"), 7), folder.string(), {});
    const CausalLM packed = load_model(folder.string(), {.keep_4bit_weights = true});
    const auto* linears = dynamic_cast<const QuantizedLinears*>(packed.owned_parameter_gatherer().get());
    ASSERT_NE(linears, nullptr) << architecture_name(arch);
    std::size_t expected = 0;
    for (const auto& layer : quantizable_linear_specs(packed.config())) expected += layer.size();
    EXPECT_EQ(linears->entries().size(), expected) << architecture_name(arch);
    expect_equal(logits(packed), logits(load_model(folder.string())), architecture_name(arch));
  }
}

TEST_F(QuantizedCheckpoint, DamagedFoldersAreRefusedNamingTheTensor) {
  save_bnb_4bit_model(load_model(kTiny), dir_.string(), {});
  const SafetensorsFile file = SafetensorsFile::open((dir_ / "model.safetensors").string());
  const std::string w = "model.layers.0.self_attn.k_proj.weight";
  auto rewrite_without = [&](const std::string& drop, const fs::path& folder) {
    NamedTensors kept;
    for (const std::string& name : file.names())
      if (name != drop) kept.emplace_back(name, file.get(name).clone());
    fs::create_directories(folder);
    save_safetensors((folder / "model.safetensors").string(), kept);
    fs::copy_file(dir_ / "config.json", folder / "config.json");
  };
  rewrite_without(w + ".nested_absmax", dir_ / "a");
  const std::string missing = "'" + w + ".nested_absmax' is missing";
  expect_mentions(error_of([&] { load_model((dir_ / "a").string()); }),
                  {"the 4-bit weight 'model.layers.0.self_attn.k_proj.weight'", missing.c_str()});
  rewrite_without("model.norm.weight", dir_ / "b");
  expect_mentions(error_of([&] { load_model((dir_ / "b").string()); }), {"missing: model.norm.weight"});
  // A dense folder whose config.json claims bitsandbytes weights.
  fs::create_directories(dir_ / "c");
  fs::copy_file(kTiny + "/model.safetensors", dir_ / "c" / "model.safetensors");
  fs::copy_file(dir_ / "config.json", dir_ / "c" / "config.json");
  expect_mentions(error_of([&] { load_model((dir_ / "c").string()); }),
                  {"declares bitsandbytes 4-bit weights", "no weight", "is stored in 4 bits"});
}

}  // namespace
}  // namespace zt::models::quant
