#include "models/quant/quantized_checkpoint.h"

#include <filesystem>
#include <set>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/hf_names.h"
#include "models/weights/tensor_mismatches.h"
#include "models/weights/weights.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace zt::models::quant {
namespace {

namespace fs = std::filesystem;

// The tensors bitsandbytes stores beside a 4-bit weight, by suffix.
constexpr const char* kCompanions[] = {".absmax",
                                       ".quant_map",
                                       ".nested_absmax",
                                       ".nested_quant_map",
                                       ".quant_state.bitsandbytes__nf4",
                                       ".quant_state.bitsandbytes__fp4"};

struct Stored {
  std::vector<NamedParameter> dense;
  std::vector<std::pair<NamedParameter, Quant4Type>> packed;
};

// Each parameter's shape as the layout gives it (a 4-bit linear's Variable holds nothing).
std::unordered_map<std::string, Shape> parameter_shapes(const ModelConfig& config) {
  std::unordered_map<std::string, Shape> shapes;
  for (const ParamSpec& spec : parameter_layout(config).all()) shapes[spec.name] = spec.shape;
  return shapes;
}

std::int64_t layer_of(const std::string& name) { return std::stoll(name.substr(name.find("layers.") + 7)); }

void report_problems(const CausalLM& model, const std::vector<std::string>& problems, const std::string& path,
                     const char* what) {
  if (problems.empty()) return;
  std::string message = std::string("the ") + what + " in '" + path + "' do not match " + model.config().source + ": " +
                        std::to_string(problems.size()) + " problem(s)";
  for (const std::string& line : problems) message.append("\n  ").append(line);
  fail(message + "\ncheck that config.json belongs to these weights and that every shard is present");
}

Stored split_by_storage(const CausalLM& model, const SafetensorsCheckpoint& checkpoint) {
  Stored stored;
  for (const NamedParameter& p : model.named_parameters()) {
    if (const std::optional<Quant4Type> type = stored_quant_type(checkpoint, p.name))
      stored.packed.emplace_back(p, *type);
    else
      stored.dense.push_back(p);
  }
  return stored;
}

void require_consistent(const CausalLM& model, const SafetensorsCheckpoint& checkpoint, const Stored& stored,
                        const std::string& path) {
  std::set<std::string> quantized;
  for (const auto& [p, type] : stored.packed) {
    quantized.insert(p.name);
    for (const char* suffix : kCompanions) quantized.insert(p.name + suffix);
  }
  std::vector<std::string> problems = tensor_mismatches(stored.dense, checkpoint, [&](const std::string& name) {
    return quantized.count(name) != 0 || is_carried_buffer(name) || is_tied_head_copy(model.config(), name);
  });
  for (const NamedParameter& p : stored.dense)
    if (p.variable.data().numel() == 0)
      problems.push_back("stored dense: " + p.name + " (a decoder linear not in llm_int8_skip_modules)");
  report_problems(model, problems, path, "4-bit weights");
}

void load_carried_buffers(CausalLM& model, const SafetensorsCheckpoint& checkpoint) {
  NamedTensors buffers;
  for (const std::string& name : checkpoint.names())
    if (is_carried_buffer(name)) buffers.emplace_back(name, checkpoint.get(name).clone());
  model.set_buffers(std::move(buffers));
}

}  // namespace

void load_bnb_4bit_weights(CausalLM& model, const SafetensorsCheckpoint& checkpoint, const std::string& path) {
  const Stored stored = split_by_storage(model, checkpoint);
  if (stored.packed.empty())
    fail(model.config().source + " declares bitsandbytes 4-bit weights (quantization_config), but no weight in '" +
         path + "' is stored in 4 bits: remove quantization_config from config.json if the weights are dense");
  require_consistent(model, checkpoint, stored, path);
  autograd::NoGradGuard no_recording;
  for (const NamedParameter& p : stored.dense) {
    Tensor target = p.variable.data();
    target.copy_from(checkpoint.get(p.name));
  }
  const std::unordered_map<std::string, Shape> shapes = parameter_shapes(model.config());
  std::vector<QuantizedLinears::Entry> kept;
  for (const auto& [p, type] : stored.packed) {
    const Quant4Weight weight = read_quantized_weight(checkpoint, p.name, type, shapes.at(p.name));
    if (p.variable.data().numel() == 0) {  // left unallocated for its 4 bits (keep_4bit_weights)
      kept.push_back({layer_of(p.name), p.name, p.variable, weight.to(model.device())});
      continue;
    }
    Tensor target = p.variable.data();
    target.copy_from(weight.dequantize(weight.state.dtype));
  }
  load_carried_buffers(model, checkpoint);
  if (!kept.empty()) model.own_parameter_gatherer(std::make_shared<QuantizedLinears>(std::move(kept), model.dtype()));
}

void load_quantizing_linears(CausalLM& model, const SafetensorsCheckpoint& checkpoint, const std::string& path,
                             const Quant4Options& options) {
  const std::unordered_map<std::string, Shape> shapes = parameter_shapes(model.config());
  std::vector<NamedParameter> dense;
  std::vector<NamedParameter> linears;
  for (const NamedParameter& p : model.named_parameters())
    (p.variable.data().numel() == 0 && shape_numel(shapes.at(p.name)) != 0 ? linears : dense).push_back(p);
  std::set<std::string> linear_names;
  for (const NamedParameter& p : linears) linear_names.insert(p.name);
  std::vector<std::string> problems = tensor_mismatches(dense, checkpoint, [&](const std::string& name) {
    return linear_names.count(name) != 0 || is_carried_buffer(name) || is_tied_head_copy(model.config(), name);
  });
  for (const NamedParameter& p : linears) add_tensor_mismatch(problems, checkpoint, p.name, shapes.at(p.name));
  report_problems(model, problems, path, "weights");
  autograd::NoGradGuard no_recording;
  for (const NamedParameter& p : dense) {
    Tensor target = p.variable.data();
    target.copy_from(checkpoint.get(p.name));
  }
  // Quantized from the stored values in the model's dtype, as bitsandbytes quantizes the weights
  // transformers loaded in torch_dtype; only the 4 bits reach the device.
  std::vector<QuantizedLinears::Entry> entries;
  for (const NamedParameter& p : linears)
    entries.push_back({layer_of(p.name), p.name, p.variable,
                       quantize_weight(checkpoint.get(p.name).to(model.dtype()), options, p.name).to(model.device())});
  load_carried_buffers(model, checkpoint);
  model.own_parameter_gatherer(std::make_shared<QuantizedLinears>(std::move(entries), model.dtype()));
}

nlohmann::ordered_json bnb_4bit_quantization_config(const Quant4Options& options, DType compute_dtype,
                                                    const std::vector<std::string>& skip_modules) {
  nlohmann::ordered_json config;
  config["_load_in_4bit"] = true;
  config["_load_in_8bit"] = false;
  config["bnb_4bit_compute_dtype"] = dtype_name(compute_dtype);
  config["bnb_4bit_quant_storage"] = "uint8";
  config["bnb_4bit_quant_type"] = ops::quant4::quant4_type_name(options.type);
  config["bnb_4bit_use_double_quant"] = options.double_quant;
  config["llm_int8_enable_fp32_cpu_offload"] = false;
  config["llm_int8_has_fp16_weight"] = false;
  config["llm_int8_skip_modules"] =
      skip_modules.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(skip_modules);
  config["llm_int8_threshold"] = 6.0;
  config["load_in_4bit"] = true;
  config["load_in_8bit"] = false;
  config["quant_method"] = "bitsandbytes";
  return config;
}

void save_bnb_4bit_model(const CausalLM& model, const std::string& dir, const Quant4Options& options,
                         const std::vector<std::string>& skip_modules) {
  ZT_REQUIRE(model.owned_parameter_gatherer() == nullptr && model.parameter_gatherer() == nullptr,
             "save_bnb_4bit_model writes a dense model's weights: load it unquantized");
  NamedTensors tensors;
  for (const NamedParameter& p : model.named_parameters()) {
    if (is_quantizable_linear(model.config(), p.name) && !is_skipped_module(p.name, skip_modules)) {
      for (auto& named : quantize_weight(p.variable.data(), options, p.name).checkpoint_tensors(p.name))
        tensors.push_back(std::move(named));
    } else {
      tensors.emplace_back(p.name, p.variable.data());
    }
  }
  for (const auto& buffer : model.buffers()) tensors.push_back(buffer);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) fail("cannot create the model folder '" + dir + "': " + error.message());
  save_sharded_safetensors(dir, tensors, 5'000'000'000, {{"format", "pt"}});
  nlohmann::ordered_json config = model.config().raw;
  config["quantization_config"] = bnb_4bit_quantization_config(options, model.dtype(), skip_modules);
  write_file_atomically((fs::path(dir) / "config.json").string(), config.dump(2) + "\n");
  copy_companion_files(model.source_dir(), dir);
}

}  // namespace zt::models::quant
