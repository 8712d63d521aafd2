#include "models/peft/peft_prefix_files.h"

#include "models/peft/adapter_paths.h"
#include "models/peft/lora_files.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors.h"

namespace zt::models {
namespace {

std::string likely_cause(const PeftPrefixConfig& config, const ModelConfig& model) {
  const std::string base =
      config.base_model_name_or_path.empty() ? "another model" : "'" + config.base_model_name_or_path + "'";
  return "the adapter was probably trained on a different base model (its config names " + base + "), not on " +
         model.source;
}

// The keys of adapter_config.json that must agree with the model, one line per disagreement.
std::vector<std::string> config_mismatches(const PeftPrefixConfig& c, const ModelConfig& model) {
  std::vector<std::string> problems;
  auto expect = [&](const char* key, std::int64_t value, std::int64_t wanted, const std::string& what) {
    if (value != wanted)
      problems.push_back(std::string(key) + " is " + std::to_string(value) + ", the model has " +
                         std::to_string(wanted) + " (" + what + ")");
  };
  expect("num_layers", c.num_layers, model.num_layers, "layers");
  expect("num_attention_heads", c.num_attention_heads, model.num_kv_heads, "key/value heads");
  expect("token_dim", c.token_dim, model.num_kv_heads * model.head_dim, "key/value heads · head_dim");
  return problems;
}

// `table` [tokens, layers · 2 · kv_heads · head_dim] as each layer's keys and values.
std::vector<PrefixKv> split_by_layer(const Tensor& table, const ModelConfig& model) {
  const std::int64_t tokens = table.size(0), kv_heads = model.num_kv_heads, head_dim = model.head_dim;
  const Tensor rows = table.reshape({1, tokens, model.num_layers, 2, kv_heads, head_dim});
  const Shape per_layer{1, tokens, kv_heads, head_dim};
  std::vector<PrefixKv> prefix;
  for (std::int64_t layer = 0; layer < model.num_layers; ++layer) {
    const Tensor both = rows.select(2, layer);  // [1, tokens, 2, kv_heads, head_dim]
    prefix.push_back({Variable(both.select(2, 0).contiguous().reshape(per_layer)),
                      Variable(both.select(2, 1).contiguous().reshape(per_layer))});
  }
  return prefix;
}

}  // namespace

// The table is fixed at inference (nothing is trained), so every sequence gets a copy.
CausalLM::PrefixSource fixed_prefix_source(std::vector<PrefixKv> prefix) {
  return [one = std::move(prefix)](std::int64_t sequences) {
    std::vector<PrefixKv> batch;
    for (const PrefixKv& layer : one) {
      Shape shape = layer.keys.data().shape();
      shape[0] = sequences;
      batch.push_back({Variable(layer.keys.data().expand(shape).contiguous()),
                       Variable(layer.values.data().expand(shape).contiguous())});
    }
    return batch;
  };
}

PeftPrefixConfig read_peft_prefix_config(const std::string& dir) {
  const FolderJson file(dir, kAdapterConfigFile,
                        ": expected a prefix-tuning adapter folder as PEFT's save_pretrained writes it");
  return parse_peft_prefix_config(file.json, file.path);
}

std::vector<PrefixKv> read_peft_prefix(const CausalLM& model, const std::string& dir) {
  const PeftPrefixConfig config = read_peft_prefix_config(dir);
  const ModelConfig& m = model.config();
  const std::string config_path = path_in(dir, kAdapterConfigFile);
  if (std::vector<std::string> problems = config_mismatches(config, m); !problems.empty()) {
    std::string message = config_path + " does not fit the model:";
    for (const std::string& line : problems) message += "\n  " + line;
    fail(message + "\n" + likely_cause(config, m));
  }
  const std::string path = existing_file_in(dir, kAdapterWeightsFile,
                                            " (zerotune reads safetensors adapters only; PEFT writes them by default)");
  const SafetensorsFile file = SafetensorsFile::open(path);
  ZT_REQUIRE(file.contains(kPeftPrefixTensor),
             path + " has no tensor '" + kPeftPrefixTensor + "', which PEFT saves a prefix-tuning adapter's prefix as");
  for (const std::string& name : file.names())
    ZT_REQUIRE(name == kPeftPrefixTensor, path + " has the tensor '" + name + "' beside " + kPeftPrefixTensor +
                                              " (modules_to_save?): zerotune applies the prefix alone");
  const Shape expected{config.num_virtual_tokens, m.num_layers * 2 * m.num_kv_heads * m.head_dim};
  const SafetensorsInfo& info = file.info(kPeftPrefixTensor);
  ZT_REQUIRE(info.shape == expected && is_floating(info.dtype),
             path + ": " + kPeftPrefixTensor + " is " + shape_str(info.shape) + " " + dtype_name(info.dtype) +
                 ", expected " + shape_str(expected) +
                 " floating point ([num_virtual_tokens, layers · 2 · kv_heads · "
                 "head_dim]); " +
                 likely_cause(config, m));
  return split_by_layer(file.get(kPeftPrefixTensor).to(model.device(), model.dtype()), m);
}

std::int64_t load_peft_prefix(CausalLM& model, const std::string& dir) {
  std::vector<PrefixKv> prefix = read_peft_prefix(model, dir);
  const std::int64_t length = prefix.front().keys.data().size(1);
  model.set_prefix_source(fixed_prefix_source(std::move(prefix)), PrefixPositions::kAfterPrefix);
  return length;
}

}  // namespace zt::models
