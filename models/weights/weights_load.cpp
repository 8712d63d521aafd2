#include <filesystem>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/weights/hf_names.h"
#include "models/weights/tensor_mismatches.h"
#include "models/weights/weights.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors_index.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

// A folder holding only PyTorch pickles gets a message saying what to do about them.
void require_safetensors(const std::string& path) {
  if (!fs::is_directory(path)) return;
  bool safetensors = false, pickles = false;
  for (const auto& entry : fs::directory_iterator(path)) {
    safetensors = safetensors || entry.path().extension() == ".safetensors";
    pickles = pickles || entry.path().extension() == ".bin" || entry.path().extension() == ".pt";
  }
  if (!safetensors && pickles)
    fail("'" + path +
         "' holds PyTorch .bin weights but no .safetensors; zerotune reads safetensors only: "
         "convert them once (transformers: model.save_pretrained(dir, safe_serialization=True))");
}

// transformers reads a folder's weights by their file names, so other .safetensors files
// beside them (an adapter, a test's expected values) are not part of the model.
std::string weights_file(const std::string& path) {
  if (!fs::is_directory(path)) return path;
  for (const char* name : {"model.safetensors.index.json", "model.safetensors"})
    if (fs::is_regular_file(fs::path(path) / name)) return (fs::path(path) / name).string();
  return path;
}

std::string describe(const ModelConfig& config) {
  return std::string(architecture_name(config.arch)) + ", " + std::to_string(config.num_layers) + " layers, hidden " +
         std::to_string(config.hidden_size);
}

}  // namespace

void load_weights(CausalLM& model, const std::string& path) {
  require_safetensors(path);
  SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(weights_file(path));
  if (model.config().bnb_4bit) return quant::load_bnb_4bit_weights(model, checkpoint, path);
  if (model.options().quantize_base)
    return quant::load_quantizing_linears(model, checkpoint, path, *model.options().quantize_base);
  std::vector<std::string> problems = tensor_mismatches(
      model.named_parameters(), checkpoint,
      [&](const std::string& name) { return is_carried_buffer(name) || is_tied_head_copy(model.config(), name); });
  if (!problems.empty()) {
    std::string message = "the weights in '" + path + "' do not match " + model.config().source + " (" +
                          describe(model.config()) + "): " + std::to_string(problems.size()) + " problem(s)";
    for (const std::string& line : problems) message += "\n  " + line;
    fail(message + "\ncheck that config.json belongs to these weights and that every shard is present");
  }
  autograd::NoGradGuard no_recording;
  for (const NamedParameter& p : model.named_parameters()) {
    Tensor target = p.variable.data();
    target.copy_from(checkpoint.get(p.name));
  }
  NamedTensors buffers;
  for (const std::string& name : checkpoint.names())
    if (is_carried_buffer(name)) buffers.emplace_back(name, checkpoint.get(name).clone());
  model.set_buffers(std::move(buffers));
}

CausalLM load_model(const std::string& model_dir, const ModelOptions& options) {
  CausalLM model(load_config(model_dir), options);
  load_weights(model, model_dir);
  model.set_source_dir(model_dir);
  return model;
}

}  // namespace zt::models
