#include "models/peft/prefix_encoder_files.h"

#include <filesystem>

#include "autograd/grad_mode.h"
#include "models/config/config_json.h"
#include "models/peft/adapter_paths.h"
#include "models/weights/tensor_mismatches.h"
#include "models/weights/weights.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors.h"

namespace zt::models {

PrefixConfig read_prefix_config(const std::string& dir) {
  const FolderJson file(dir, kPrefixConfigFile,
                        ": expected a P-Tuning checkpoint folder as zerotune train --finetuning_type ptuning or "
                        "ChatGLM's recipe writes it");
  const detail::ConfigKeys& keys = file.keys;
  if (!keys.has("pre_seq_len"))
    keys.fail(
        "pre_seq_len is missing or null: this is not a P-Tuning checkpoint (pass the folder that "
        "zerotune train --finetuning_type ptuning wrote as --ptuning_checkpoint)");
  PrefixConfig config;
  config.pre_seq_len = keys.integer("pre_seq_len", 0);
  keys.require_positive("pre_seq_len", config.pre_seq_len);
  config.prefix_projection = keys.boolean("prefix_projection", false);
  return config;
}

void save_prefix_checkpoint(const CausalLM& model, const PrefixConfig& prefix,
                            const std::vector<NamedParameter>& parameters, const std::string& dir) {
  std::filesystem::create_directories(dir);
  NamedTensors tensors;
  for (const NamedParameter& p : parameters)
    tensors.emplace_back(p.name, p.variable.data().to(Device::cpu(), DType::kF32));
  save_safetensors(path_in(dir, kPrefixWeightsFile), tensors, {{"format", "pt"}});
  nlohmann::ordered_json config = model.config().raw;
  config["pre_seq_len"] = prefix.pre_seq_len;
  config["prefix_projection"] = prefix.prefix_projection;
  write_file_atomically(path_in(dir, kPrefixConfigFile), config.dump(2) + "\n");
  copy_companion_files(model.source_dir(), dir);
}

void load_prefix_weights(const std::vector<NamedParameter>& parameters, const std::string& dir) {
  const std::string path = existing_file_in(dir, kPrefixWeightsFile,
                                            ": zerotune reads the prefix encoder from safetensors only (ChatGLM's "
                                            "recipe writes pytorch_model.bin with older transformers: convert it)");
  const SafetensorsFile file = SafetensorsFile::open(path);
  std::vector<std::string> problems = tensor_mismatches(parameters, file);
  if (!problems.empty()) {
    std::string message = "the P-Tuning checkpoint '" + path + "' does not match the model and its " +
                          kPrefixConfigFile + ": " + std::to_string(problems.size()) + " problem(s)";
    for (const std::string& line : problems) message += "\n  " + line;
    fail(message +
         "\ncheck that the prefix was trained on this base model, with the pre_seq_len and "
         "prefix_projection of its config.json");
  }
  autograd::NoGradGuard no_recording;
  for (const NamedParameter& p : parameters) {
    Tensor target = p.variable.data();
    target.copy_from(file.get(p.name));
  }
}

std::shared_ptr<PrefixEncoder> load_prefix_checkpoint(CausalLM& model, const std::string& dir) {
  auto encoder =
      std::make_shared<PrefixEncoder>(model.config(), read_prefix_config(dir), model.device(), model.dtype());
  load_prefix_weights(encoder->named_parameters(), dir);
  attach_prefix_encoder(model, encoder);
  return encoder;
}

}  // namespace zt::models
