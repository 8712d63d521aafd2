// load_tokenizer(): which format a model folder holds, decided as transformers does
// (tokenizer.json first), with tokenizer.model told apart by its content.
#include <filesystem>
#include <fstream>

#include "runtime/error.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_files.h"
#include "text/tokenizer/tokenizer_loaders.h"

namespace zt::models {
namespace {

std::string read_head(const std::string& path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) zt::fail("cannot open tokenizer file '" + path + "'");
  std::string head(bytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(bytes));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

std::unique_ptr<Tokenizer> load_tokenizer_model(const std::string& path, const TokenizerConfig& config) {
  const std::string head = read_head(path, 4096);
  if (head.starts_with("version https://git-lfs"))
    zt::fail(path + " is a Git LFS pointer, not the tokenizer itself: run `git lfs pull` in the model folder");
  if (looks_like_tiktoken(head)) return load_tiktoken(path, config);
  return load_sentencepiece(path, config);
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_dir) {
  if (!tokenizers_available()) zt::fail(tokenizer_support_message());
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec))
    zt::fail("model folder '" + model_dir + "' does not exist or is not a folder");
  const TokenizerConfig config = read_tokenizer_config(model_dir);
  const std::string json = model_dir + "/tokenizer.json";
  const std::string vocab = model_dir + "/vocab.json";
  const std::string merges = model_dir + "/merges.txt";
  const std::string model = model_dir + "/tokenizer.model";
  if (tokenizer_file_exists(json)) return load_tokenizer_json(json, config);
  const bool has_vocab = tokenizer_file_exists(vocab), has_merges = tokenizer_file_exists(merges);
  if (has_vocab && has_merges) return load_vocab_and_merges(vocab, merges, config);
  if (has_vocab != has_merges)
    zt::fail("'" + model_dir + "' has " +
             (has_vocab ? "vocab.json but no merges.txt" : "merges.txt but no vocab.json") +
             "; a BPE tokenizer needs both (or a tokenizer.json)");
  if (tokenizer_file_exists(model)) return load_tokenizer_model(model, config);
  zt::fail("'" + model_dir +
           "' has no tokenizer: expected tokenizer.json, vocab.json + merges.txt, or "
           "tokenizer.model (sentencepiece or tiktoken)");
}

}  // namespace zt::models
