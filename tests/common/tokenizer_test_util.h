// What the tokenizer and chat-template tests share: where the real Qwen3 tokenizer is (it is
// not in the repository), and a ChatGLM2/3-style sentencepiece model trained on the spot with
// libsentencepiece's trainer.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#if ZT_HAVE_TEXT
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#endif

namespace zt::testing {

// The Qwen3 tokenizer folder: $ZT_QWEN_TOKENIZER_DIR, else .fixtures/qwen3-tokenizer, else
// ../shared/data/qwen3-tokenizer; empty where none holds a tokenizer.json.
inline std::string qwen_tokenizer_dir() {
  namespace fs = std::filesystem;
  std::vector<fs::path> places;
  if (const char* env = std::getenv("ZT_QWEN_TOKENIZER_DIR")) places.emplace_back(env);
  places.push_back(fs::path(ZT_SOURCE_DIR) / ".fixtures/qwen3-tokenizer");
  places.push_back(fs::path(ZT_SOURCE_DIR) / "../shared/data/qwen3-tokenizer");
  for (const fs::path& p : places)
    if (fs::is_regular_file(p / "tokenizer.json")) return p.string();
  return {};
}

#if ZT_HAVE_TEXT
// `count` sentences, `sentences` over and over.
class SentenceCycle : public sentencepiece::SentenceIterator {
 public:
  SentenceCycle(const std::vector<std::string>& sentences, std::size_t count) : sentences_(sentences), count_(count) {}
  bool done() const override { return index_ >= count_; }
  void Next() override { ++index_; }
  const std::string& value() const override { return sentences_[index_ % sentences_.size()]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& sentences_;
  std::size_t count_;
  std::size_t index_ = 0;
};

// A BPE model of 400 pieces with byte fallback and no normalisation (newlines survive), like
// ChatGLM's, trained on `count` sentences of `sentences` over and over: written as
// `dir`/tokenizer.model and loaded into `processor`.
inline void train_sentencepiece(const std::vector<std::string>& sentences, std::size_t count,
                                const std::filesystem::path& dir, sentencepiece::SentencePieceProcessor& processor) {
  std::filesystem::create_directories(dir);
  SentenceCycle cycle(sentences, count);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train({{"model_type", "bpe"},
                                                                  {"vocab_size", "400"},
                                                                  {"byte_fallback", "true"},
                                                                  {"character_coverage", "1.0"},
                                                                  {"remove_extra_whitespaces", "false"},
                                                                  {"normalization_rule_name", "identity"},
                                                                  {"minloglevel", "2"}},
                                                                 &cycle, &model);
  ASSERT_TRUE(status.ok()) << status.ToString();
  std::ofstream(dir / "tokenizer.model", std::ios::binary) << model;
  ASSERT_TRUE(processor.LoadFromSerializedProto(model).ok());
}
#endif

}  // namespace zt::testing
