// Encode throughput of the real Qwen3 tokenizer, one thread, in bytes/s, on
// tests/data/tokenizer/corpus.txt or the file $ZT_TOKENIZER_BENCH_TEXT names (one JSON string
// per line, each encoded on its own). The `tokens` counter is the ids one pass produces.
// scripts/tokenizer_speed.py runs this beside HF tokenizers on the same lines.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "text/stream_decoder.h"
#include "text/tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;

// The source tree: ZT_SOURCE_DIR when the build defines it, else the nearest folder above
// the working directory that holds the corpus.
fs::path source_root() {
#ifdef ZT_SOURCE_DIR
  return ZT_SOURCE_DIR;
#else
  for (fs::path p = fs::current_path(); !p.empty(); p = p.parent_path()) {
    if (fs::exists(p / "tests/data/tokenizer/corpus.txt")) return p;
    if (p == p.parent_path()) break;
  }
  return fs::current_path();
#endif
}

std::string qwen_tokenizer_dir() {
  std::vector<fs::path> places;
  if (const char* env = std::getenv("ZT_QWEN_TOKENIZER_DIR")) places.emplace_back(env);
  places.push_back(source_root() / ".fixtures/qwen3-tokenizer");
  places.push_back(source_root() / "../shared/data/qwen3-tokenizer");
  for (const fs::path& p : places)
    if (fs::is_regular_file(p / "tokenizer.json")) return p.string();
  return {};
}

fs::path text_file() {
  if (const char* env = std::getenv("ZT_TOKENIZER_BENCH_TEXT")) return env;
  return source_root() / "tests/data/tokenizer/corpus.txt";
}

struct Corpus {
  std::unique_ptr<zt::models::Tokenizer> tokenizer;
  std::vector<std::string> lines;
  std::size_t bytes = 0;
  std::string missing;  // why the benchmark cannot run, when it cannot
};

const Corpus& corpus() {
  static const Corpus c = [] {
    Corpus out;
    const std::string dir = qwen_tokenizer_dir();
    if (!zt::models::tokenizers_available()) {
      out.missing = zt::models::tokenizer_support_message();
      return out;
    }
    if (dir.empty()) {
      out.missing = "the Qwen3 tokenizer folder is absent: set ZT_QWEN_TOKENIZER_DIR (and run from the source tree)";
      return out;
    }
    out.tokenizer = zt::models::load_tokenizer(dir);
    const fs::path text = text_file();
    std::ifstream in(text, std::ios::binary);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) out.lines.push_back(nlohmann::json::parse(line).get<std::string>());
    for (const std::string& l : out.lines) out.bytes += l.size();
    if (out.lines.empty())
      out.missing = text.string() + " is missing or empty: run from the source tree or set ZT_TOKENIZER_BENCH_TEXT";
    return out;
  }();
  return c;
}

void BM_Qwen3Encode(benchmark::State& state) {
  const Corpus& c = corpus();
  if (!c.missing.empty()) {
    state.SkipWithError(c.missing.c_str());
    return;
  }
  std::size_t tokens = 0;
  for (auto _ : state) {
    tokens = 0;
    for (const std::string& line : c.lines) tokens += c.tokenizer->encode(line, false).size();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_Qwen3Encode)->Unit(benchmark::kMillisecond);

void BM_Qwen3StreamDecode(benchmark::State& state) {
  const Corpus& c = corpus();
  if (!c.missing.empty()) {
    state.SkipWithError(c.missing.c_str());
    return;
  }
  std::vector<std::vector<zt::models::TokenId>> ids;
  for (const std::string& line : c.lines) ids.push_back(c.tokenizer->encode(line, false));
  for (auto _ : state) {
    for (const auto& line : ids) {
      zt::models::StreamDecoder stream(*c.tokenizer);
      for (zt::models::TokenId id : line) benchmark::DoNotOptimize(stream.put(id));
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
}
BENCHMARK(BM_Qwen3StreamDecode)->Unit(benchmark::kMillisecond);

}  // namespace
