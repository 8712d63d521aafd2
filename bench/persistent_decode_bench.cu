// The persistent decode kernel (cuda/decode_step/) alone, through infer::PersistentDecode, on
// random models of Qwen2.5-0.5B's, 1.5B's and 7B's shapes in bfloat16: 1, 2, 4 and 8 sequences
// with 128 tokens in the paged cache, one decode step per iteration (the same slots rewritten,
// so every iteration does the same work). Bytes: every weight read once (a tied head counted
// once, the embedding's rows of the step not apart), against the copy ceiling. From the
// kernel's stage marks, averaged over 20 steps after the timed ones: microseconds per step of
// each stage kind summed over the layers, each stage's time running from the barrier before it
// to the barrier after it (so the barrier is in it), and the LM head and argmax stages. Each
// shape and row count twice: narrow stages' row pairs shared by teams of warps (`split`, the
// kernel's default) and one warp per pair (`whole`).
//   build/bench/persistent_decode_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/gpu_bench.h"
#include "infer/batch_forward.h"
#include "infer/persistent_decode.h"
#include "models/config/config.h"
#include "models/init.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace zt::bench {
namespace {

struct ModelShape {
  const char* name;
  int hidden, ffn, layers, heads, kv_heads, vocab;
  bool tied;
};

constexpr ModelShape kQwen05{"Qwen2.5-0.5B", 896, 4864, 24, 14, 2, 151936, true};
constexpr ModelShape kQwen15{"Qwen2.5-1.5B", 1536, 8960, 28, 12, 2, 151936, true};
constexpr ModelShape kQwen7{"Qwen2.5-7B", 3584, 18944, 28, 28, 4, 152064, false};

constexpr std::int64_t kContext = 128, kBlockSize = 16, kWidth = 16;  // room for 256 tokens a sequence

models::ModelConfig config_of(const ModelShape& s) {
  const nlohmann::ordered_json json = {
      {"model_type", "qwen2"},         {"hidden_size", s.hidden},         {"intermediate_size", s.ffn},
      {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads},  {"num_key_value_heads", s.kv_heads},
      {"vocab_size", s.vocab},         {"tie_word_embeddings", s.tied},   {"rms_norm_eps", 1e-6},
      {"rope_theta", 1000000.0},       {"max_position_embeddings", 32768}};
  return models::parse_config(json, s.name);
}

// The model of the shape asked for: one on the GPU at a time, built by its first benchmark.
const models::CausalLM& model_of(const ModelShape& shape) {
  static std::string built;
  static std::unique_ptr<models::CausalLM> model;
  if (built != shape.name) {
    model.reset();
    model = std::make_unique<models::CausalLM>(
        models::init_model(config_of(shape), 1, {.device = Device::cuda(), .dtype = DType::kBF16}));
    built = shape.name;
  }
  return *model;
}

// A cache holding `rows` sequences of kContext prompt tokens, prefilled by the plain layer.
std::unique_ptr<infer::PagedKvCache> filled_cache(const models::CausalLM& model, int rows) {
  auto cache =
      std::make_unique<infer::PagedKvCache>(model.config(), rows * kWidth, kBlockSize, DType::kBF16, Device::cuda());
  cache->set_table_width(kWidth);
  std::vector<std::vector<std::int64_t>> prompts(static_cast<std::size_t>(rows));
  infer::StepInputs prefill;
  for (int s = 0; s < rows; ++s) {
    for (std::int64_t t = 0; t < kContext; ++t)
      prompts[s].push_back((s * 7919 + t * 104729) % model.config().vocab_size);
    ZT_REQUIRE(cache->try_add(s, kContext + kBlockSize), "persistent_decode_bench: the cache is too small");
    prefill.prefilling.push_back(s);
    prefill.prompts.push_back(&prompts[s]);
  }
  infer::step_logits(model, *cache, prefill);
  return cache;
}

// Microseconds per step of each stage kind, from the marks of one step (stage_marks layout).
using StageTimes = std::array<double, 8>;
constexpr std::array<const char*, 8> kStageNames = {"embed_us",   "qkv_us",  "attention_us", "o_proj_us",
                                                    "gate_up_us", "down_us", "head_us",      "argmax_us"};

// marks: the timer's nanoseconds, read as integers (as doubles they would lose the low bits).
void add_stage_times(const std::int64_t* marks, int layers, StageTimes& times) {
  auto span = [&](int from, int to) { return static_cast<double>(marks[to] - marks[from]) / 1e3; };
  times[0] += span(0, 1);
  for (int layer = 0; layer < layers; ++layer) {
    const int first = 2 + 5 * layer;
    times[1] += span(first - 1, first);
    for (int stage = 1; stage < 5; ++stage) times[1 + stage] += span(first + stage - 1, first + stage);
  }
  times[6] += span(1 + 5 * layers, 2 + 5 * layers);
  times[7] += span(2 + 5 * layers, 3 + 5 * layers);
}

void BM_PersistentDecode(benchmark::State& state, const ModelShape& shape, int rows, bool split_columns) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const models::CausalLM& model = model_of(shape);
  const std::unique_ptr<infer::PagedKvCache> cache = filled_cache(model, rows);
  if (const std::string why = infer::PersistentDecode::unsupported(model, *cache); !why.empty())
    return state.SkipWithError(why.c_str());
  infer::PersistentDecode kernel(model, *cache, kWidth);
  kernel.set_split_columns(split_columns);
  if (!kernel.takes_rows(rows)) return state.SkipWithError("the kernel does not take this many rows on this GPU");
  infer::DecodeStepBuffers buffers(rows, kWidth, Device::cuda());
  std::vector<infer::SequenceId> ids;
  for (int s = 0; s < rows; ++s) ids.push_back(s);
  cache->fill_step(ids, std::vector<std::int64_t>(static_cast<std::size_t>(rows), 11), buffers, nullptr);
  const Tensor logits = Tensor::empty({rows, model.config().vocab_size}, DType::kBF16, Device::cuda());
  const Tensor argmax = Tensor::empty({rows}, DType::kI64, Device::cuda());
  time_on_gpu(state, [&] { kernel.run(buffers, logits, argmax, nullptr); });
  report_bandwidth(state, static_cast<double>(model.num_parameters()) * 2.0);

  const Tensor marks = Tensor::zeros({cuda::persistent_decode_stage_marks(kernel.dims())}, DType::kI64, Device::cuda());
  constexpr int kProfiled = 20;
  StageTimes times{};
  for (int i = 0; i < kProfiled; ++i) {
    kernel.run(buffers, logits, argmax, nullptr, marks);
    const Tensor host = marks.to(Device::cpu());
    add_stage_times(host.data<std::int64_t>(), shape.layers, times);
  }
  for (std::size_t k = 0; k < times.size(); ++k) state.counters[kStageNames[k]] = times[k] / kProfiled;
}

BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen05B_rows1_split, kQwen05, 1, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen05B_rows1_whole, kQwen05, 1, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen05B_rows2_split, kQwen05, 2, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen05B_rows2_whole, kQwen05, 2, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen05B_rows4_split, kQwen05, 4, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen05B_rows4_whole, kQwen05, 4, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen05B_rows8_split, kQwen05, 8, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen05B_rows8_whole, kQwen05, 8, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen15B_rows1_split, kQwen15, 1, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen15B_rows1_whole, kQwen15, 1, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen15B_rows2_split, kQwen15, 2, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen15B_rows2_whole, kQwen15, 2, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen15B_rows4_split, kQwen15, 4, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen15B_rows4_whole, kQwen15, 4, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen15B_rows8_split, kQwen15, 8, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen15B_rows8_whole, kQwen15, 8, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen7B_rows1_split, kQwen7, 1, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen7B_rows1_whole, kQwen7, 1, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen7B_rows2_split, kQwen7, 2, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen7B_rows2_whole, kQwen7, 2, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen7B_rows4_split, kQwen7, 4, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen7B_rows4_whole, kQwen7, 4, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen7B_rows8_split, kQwen7, 8, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PersistentDecode, Qwen7B_rows8_whole, kQwen7, 8, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zt::bench
