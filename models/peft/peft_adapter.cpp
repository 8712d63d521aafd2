#include "models/peft/peft_adapter.h"

#include <filesystem>

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
  return parse_peft_adapter_kind(file.json, file.path);
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
