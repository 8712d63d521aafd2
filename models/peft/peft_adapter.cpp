#include "models/peft/peft_adapter.h"

#include <filesystem>

#include "models/config/config_json.h"
#include "models/peft/adapter_paths.h"
#include "models/peft/lora_files.h"
#include "models/peft/peft_prefix_files.h"
#include "runtime/error.h"

namespace zt::models {

bool is_peft_adapter_folder(const std::string& dir) {
  return std::filesystem::is_regular_file(path_in(dir, kAdapterConfigFile));
}

PeftAdapterKind peft_adapter_kind(const std::string& dir) {
  const FolderJson file(dir, kAdapterConfigFile, ": expected an adapter folder as PEFT or zerotune train writes it");
  const detail::ConfigKeys& keys = file.keys;
  const std::string type = keys.string("peft_type", "");
  if (type == "LORA") return PeftAdapterKind::kLora;
  if (type == "PREFIX_TUNING") return PeftAdapterKind::kPrefix;
  if (type == "P_TUNING" || type == "PROMPT_TUNING" || type == "MULTITASK_PROMPT_TUNING")
    keys.fail("peft_type is '" + type +
              "': it learns virtual token embeddings put in front of the input, "
              "which zerotune does not apply; it applies \"LORA\" and \"PREFIX_TUNING\" (P-Tuning v2) adapters");
  keys.fail("peft_type is '" + type + "'; zerotune applies \"LORA\" and \"PREFIX_TUNING\" adapters only");
}

PeftAdapterKind load_peft_adapter(CausalLM& model, const std::string& dir) {
  const PeftAdapterKind kind = peft_adapter_kind(dir);
  if (kind == PeftAdapterKind::kLora)
    load_lora_adapter(model, dir);
  else
    load_peft_prefix(model, dir);
  return kind;
}

}  // namespace zt::models
