// Which files of a model repo zerotune needs, in the order they are fetched: config.json
// first (it settles that the repo and revision exist, and which commit they are), then
// generation_config.json, the tokenizer and chat-template files, the remote-code modules the
// configs' auto_map names (ChatGLM's configuration_chatglm.py, tokenization_chatglm.py, ...,
// which a saved model carries along for transformers), and the weights: model.safetensors,
// or model.safetensors.index.json and every shard it lists. Optional files the repo lacks
// are simply absent.
#pragma once

#include <filesystem>
#include <string>

namespace zt::models::hub {

// What a command reads beyond config.json, which every one reads.
struct ModelParts {
  bool tokenizer = true;
  bool weights = true;
};
inline constexpr ModelParts kWholeModel{};
inline constexpr ModelParts kConfigOnly{.tokenizer = false, .weights = false};
inline constexpr ModelParts kTokenizerOnly{.tokenizer = true, .weights = false};

// Where collect_model_files finds each file: the cache alone, or the cache and the hub.
class SnapshotFiles {
 public:
  virtual ~SnapshotFiles() = default;
  // True when `filename` is in the snapshot once this returns.
  virtual bool provide(const std::string& filename) = 0;
  // A file the model cannot do without is not there; `why` says what needs it.
  virtual void missing(const std::string& filename, const std::string& why) = 0;
  // The snapshot folder, once config.json has been provided.
  virtual std::filesystem::path folder() const = 0;
};

void collect_model_files(SnapshotFiles& files, ModelParts parts);

}  // namespace zt::models::hub
