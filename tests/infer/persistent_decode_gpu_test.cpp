// The persistent decode kernel (infer/persistent_decode.h) against the plain decode layer on
// the GPU: two caches filled by the same prefill decode in lockstep, one step through the CUDA
// graph of the plain layer, one through the kernel, fed the same tokens. Each step's logits and
// every layer's cached keys and values agree to the dtype's rounding, the kernel's argmax is
// the first largest of its own logits, and the greedy tokens agree wherever the plain logits'
// top two are not a near tie. Covered: Qwen2 (q/k/v bias, tied head, GQA), Qwen3 (per-head q/k
// norms), GLM (partial
// interleaved RoPE, fused gate/up), ChatGLM (fused q/k/v, two kv groups), bfloat16 and float16,
// 1, 2, 3 (a padded row) and 8 sequences, prompts and steps that cross page boundaries, 48-dim
// heads over contexts past 512 tokens. Then the engine with the kernel chosen by measurement
// gives the graph path's tokens, and models the kernel does not take are refused by name or
// left to the graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "infer/batch_forward.h"
#include "infer/decode_graph.h"
#include "infer/engine.h"
#include "infer/persistent_decode.h"
#include "models/init.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/test_util.h"

namespace zt::infer {
namespace {

using Tokens = std::vector<std::int64_t>;

constexpr std::int64_t kBlockSize = 16;
constexpr std::int64_t kWidth = 8;  // blocks per sequence in the engine-level tests

// What one lockstep run decodes: prompt lengths, steps, and the block tables' width.
struct Run {
  std::int64_t sequences = 1;
  std::int64_t first_prompt = 5;  // sequence s's prompt: first_prompt + 9 s % 40 tokens
  std::int64_t steps = 24;
  std::int64_t width = 8;
};

struct Lockstep {
  Lockstep(const models::CausalLM& model, DecodeKernel kernel, std::int64_t width)
      : cache(model.config(), 96, kBlockSize, model.dtype(), model.device()), graphs(model, cache, 8, width, kernel) {
    cache.set_table_width(width);
    for (std::int64_t layer = 0; layer < model.config().num_layers; ++layer)
      for (Tensor pool : {cache.key_pool(layer), cache.value_pool(layer)}) pool.zero_();  // unused slots compare equal
  }
  PagedKvCache cache;
  DecodeGraphs graphs;
};

Tokens prompt_of(std::int64_t length, std::int64_t seed, std::int64_t vocab) {
  Tokens prompt;
  for (std::int64_t i = 0; i < length; ++i) prompt.push_back((seed * 131 + i * 17 + 3) % vocab);
  return prompt;
}

std::vector<float> row_of(const Tensor& logits, std::int64_t row) {
  const std::vector<double> values = logits.select(0, row).to(Device::cpu()).to_vector();
  return {values.begin(), values.end()};
}

std::int64_t first_largest(const std::vector<float>& row) {
  return std::max_element(row.begin(), row.end()) - row.begin();
}

// The gap between the largest and the second largest logit.
float top_gap(std::vector<float> row) {
  std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<>());
  return row[0] - row[1];
}

// The largest difference between two rows, infinite where the second is not finite.
float largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.0f;
  for (std::size_t v = 0; v < a.size(); ++v)
    worst = std::isfinite(b[v]) ? std::max(worst, std::fabs(a[v] - b[v])) : INFINITY;
  return worst;
}

// Every layer's keys and values cached by the two sides agree to the dtype's rounding: the
// q/k/v projections, their biases, RoPE and the slot each step writes, checked apart from the
// logits.
void expect_same_caches(const PagedKvCache& a, const PagedKvCache& b, std::int64_t layers, float tolerance,
                        std::int64_t step) {
  for (std::int64_t layer = 0; layer < layers; ++layer)
    for (bool keys : {true, false}) {
      const std::vector<double> pa = (keys ? a.key_pool(layer) : a.value_pool(layer)).to(Device::cpu()).to_vector();
      const std::vector<double> pb = (keys ? b.key_pool(layer) : b.value_pool(layer)).to(Device::cpu()).to_vector();
      const std::vector<float> fa(pa.begin(), pa.end()), fb(pb.begin(), pb.end());
      float scale = 0.0f;
      for (float value : fa) scale = std::max(scale, std::fabs(value));
      EXPECT_LE(largest_difference(fa, fb), tolerance * scale + 1e-3f)
          << (keys ? "keys" : "values") << " of layer " << layer << " after step " << step;
    }
}

// The plain layer's prefill of prompts[s] as sequence s, each given room for `room` more
// tokens in the cache: the logits of each prompt's last token.
Tensor prefill(const models::CausalLM& model, PagedKvCache& cache, const std::vector<Tokens>& prompts,
               std::int64_t room) {
  StepInputs step;
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    const auto id = static_cast<SequenceId>(s);
    EXPECT_TRUE(cache.try_add(id, static_cast<std::int64_t>(prompts[s].size()) + room)) << "sequence " << s;
    step.prefilling.push_back(id);
    step.prompts.push_back(&prompts[s]);
  }
  return step_logits(model, cache, step);
}

void decode_in_lockstep(const models::CausalLM& model, const std::string& label, const Run& run) {
  SCOPED_TRACE(label + " " + dtype_name(model.dtype()) + " x" + std::to_string(run.sequences));
  const std::int64_t vocab = model.config().vocab_size;
  Lockstep plain(model, DecodeKernel::kGraph, run.width), kernel(model, DecodeKernel::kPersistent, run.width);
  std::vector<SequenceId> ids;
  std::vector<Tokens> prompts;
  for (std::int64_t s = 0; s < run.sequences; ++s) {
    ids.push_back(s);
    prompts.push_back(prompt_of(run.first_prompt + 9 * s % 40, s, vocab));
  }
  Tokens tokens;
  for (Lockstep* side : {&plain, &kernel}) {
    const Tensor logits = prefill(model, side->cache, prompts, run.steps + 1);
    tokens.clear();
    for (std::int64_t s = 0; s < run.sequences; ++s) tokens.push_back(first_largest(row_of(logits, s)));
  }
  const float tolerance = model.dtype() == DType::kBF16 ? 0.05f : 0.01f;
  for (std::int64_t step = 0; step < run.steps; ++step) {
    const DecodeGraphs::Step a = plain.graphs.run(ids, tokens);
    const DecodeGraphs::Step b = kernel.graphs.run(ids, tokens);
    const std::vector<double> b_argmax = b.argmax.to(Device::cpu()).to_vector();
    for (std::int64_t s = 0; s < run.sequences; ++s) {
      const std::vector<float> ra = row_of(a.logits, s), rb = row_of(b.logits, s);
      float scale = 0.0f;
      for (float value : ra) scale = std::max(scale, std::fabs(value));
      const float worst = largest_difference(ra, rb);
      ASSERT_LE(worst, tolerance * scale + 1e-3f) << "step " << step << " row " << s;
      EXPECT_EQ(static_cast<std::int64_t>(b_argmax[s]), first_largest(rb)) << "step " << step << " row " << s;
      if (top_gap(ra) > 2 * worst) {
        EXPECT_EQ(first_largest(ra), first_largest(rb)) << "step " << step << " row " << s;
      }
      tokens[s] = first_largest(ra);
    }
    expect_same_caches(plain.cache, kernel.cache, model.config().num_layers, tolerance, step);
  }
}

// One architecture per test, so that a sanitizer run can take one (--gtest_filter=*/qwen2).
class PersistentDecodeSteps : public ::testing::TestWithParam<const char*> {};

TEST_P(PersistentDecodeSteps, MatchThePlainLayer) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const models::CausalLM model = models::load_model(testing::fixture_dir(GetParam()), {Device::cuda(), dtype});
    for (std::int64_t sequences : {1, 2, 3, 8}) decode_in_lockstep(model, GetParam(), {.sequences = sequences});
    // The engine test's lengths: 64 steps past prompts of up to 29 tokens.
    decode_in_lockstep(model, GetParam(), {.sequences = 3, .first_prompt = 29, .steps = 70});
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, PersistentDecodeSteps, ::testing::Values("qwen2", "qwen3", "glm", "chatglm"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// Heads of 48 dims (two columns a lane in the value sums) and contexts past 512 tokens (a
// warp's second chunk, whose larger scores rescale the first's sums), with weights ten times
// the fixtures' so that the scores, and so RoPE and the keys read, move the softmax.
TEST(PersistentDecodeGpu, LongContextsAndWideHeadsMatchThePlainLayer) {
  ZT_SKIP_WITHOUT_GPU();
  models::ModelConfig config = models::load_config(testing::fixture_dir("qwen2"));
  config.num_heads = 2;
  config.num_kv_heads = 1;
  config.head_dim = config.hidden_size / 2;
  config.initializer_range = 0.2;
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const models::CausalLM model = models::init_model(config, 7, {.device = Device::cuda(), .dtype = dtype});
    for (std::int64_t sequences : {1, 2})
      decode_in_lockstep(model, "qwen2 head_dim 48",
                         {.sequences = sequences, .first_prompt = 600, .steps = 8, .width = 40});
  }
}

// The plain layer's logits for the token after `prefix`, from a prefill.
std::vector<float> plain_logits_after(const models::CausalLM& model, const Tokens& prefix) {
  PagedKvCache cache(model.config(), 96, kBlockSize, model.dtype(), model.device());
  return row_of(prefill(model, cache, {prefix}, 1), 0);
}

// Two greedy generations of `prompt` agree token for token, or part where the plain layer's
// logits for the two tokens chosen differ by less than the kernel's allowed rounding (a near
// tie, which a different order of the same sums may break either way).
void expect_same_or_near_tie(const models::CausalLM& model, const Tokens& prompt, const Tokens& got, const Tokens& want,
                             const std::string& label) {
  const auto [g, w] = std::mismatch(got.begin(), got.end(), want.begin(), want.end());
  if (g == got.end() && w == want.end()) return;
  ASSERT_TRUE(g != got.end() && w != want.end()) << label << ": one generation is a prefix of the other";
  Tokens prefix = prompt;
  prefix.insert(prefix.end(), want.begin(), w);
  const std::vector<float> logits = plain_logits_after(model, prefix);
  float scale = 0.0f;
  for (float value : logits) scale = std::max(scale, std::fabs(value));
  const float tolerance = model.dtype() == DType::kBF16 ? 0.05f : 0.01f;
  EXPECT_LE(std::fabs(logits[static_cast<std::size_t>(*g)] - logits[static_cast<std::size_t>(*w)]),
            tolerance * scale + 1e-3f)
      << label << ": tokens part at " << (w - want.begin()) << " (" << *g << " against " << *w
      << ") where the plain logits are no near tie";
}

// The reference prompts of the fixtures, generated with the kernel chosen by measurement and
// with the graphs alone: the same tokens, but for near ties.
TEST(PersistentDecodeGpu, EngineChoosingByMeasurementGivesTheGraphTokens) {
  ZT_SKIP_WITHOUT_GPU();
  const auto json = models::read_json_file(testing::fixture_dir("generate_reference.json"));
  for (const char* arch : {"qwen2", "chatglm"}) {
    models::CausalLM model = models::load_model(testing::fixture_dir(arch), {Device::cuda(), DType::kF16});
    models::GenerationOptions options;
    options.max_new_tokens = json["max_new_tokens"].get<std::int64_t>();
    std::vector<GenerationRequest> requests;
    for (const auto& prompt : json[arch]["prompts"]) requests.push_back({prompt.get<Tokens>(), options});
    const std::vector<Tokens> graphs = Engine(model, {.decode_kernel = DecodeKernel::kGraph}).run(requests);
    const std::vector<Tokens> fastest = Engine(model, {.decode_kernel = DecodeKernel::kFastest}).run(requests);
    const std::vector<Tokens> persistent = Engine(model, {.decode_kernel = DecodeKernel::kPersistent}).run(requests);
    ASSERT_EQ(fastest.size(), graphs.size());
    ASSERT_EQ(persistent.size(), graphs.size());
    for (std::size_t r = 0; r < graphs.size(); ++r) {
      const std::string label = std::string(arch) + " prompt " + std::to_string(r);
      expect_same_or_near_tie(model, requests[r].prompt, fastest[r], graphs[r], label + " (fastest)");
      expect_same_or_near_tie(model, requests[r].prompt, persistent[r], graphs[r], label + " (persistent)");
    }
  }
}

// One decode step of one sequence after a 20-token prompt, through the kernel alone.
struct KernelStep {
  explicit KernelStep(const models::CausalLM& m)
      : model(m),
        cache(m.config(), 16, kBlockSize, m.dtype(), m.device()),
        prompt(prompt_of(20, 1, m.config().vocab_size)),
        buffers(1, kWidth, m.device()) {
    cache.set_table_width(kWidth);
    prefill(model, cache, {prompt}, 20);
    kernel = std::make_unique<PersistentDecode>(model, cache, kWidth);
    cache.fill_step({0}, {7}, buffers, nullptr);
  }
  // The step's logits, recording the stage marks when `marks` is given.
  std::vector<float> logits(const Tensor& marks = Tensor()) {
    const Tensor out = Tensor::empty({1, model.config().vocab_size}, model.dtype(), model.device());
    const Tensor argmax = Tensor::empty({1}, DType::kI64, model.device());
    kernel->run(buffers, out, argmax, nullptr, marks);
    return row_of(out, 0);
  }
  const models::CausalLM& model;
  PagedKvCache cache;
  Tokens prompt;
  DecodeStepBuffers buffers;
  std::unique_ptr<PersistentDecode> kernel;
};

// The stage marks of a step (bench/persistent_decode_bench.cu's profile): one per barrier, in
// order, and recording them leaves the step's logits as they are, bit for bit.
TEST(PersistentDecodeGpu, StageMarksAreRecordedInOrder) {
  ZT_SKIP_WITHOUT_GPU();
  const models::CausalLM model = models::load_model(testing::fixture_dir("qwen2"), {Device::cuda(), DType::kBF16});
  KernelStep step(model);
  const int count = cuda::persistent_decode_stage_marks(step.kernel->dims());
  const Tensor marks = Tensor::zeros({count}, DType::kI64, model.device());
  EXPECT_EQ(step.logits(marks), step.logits());
  const Tensor host = marks.to(Device::cpu());
  const std::int64_t* at = host.data<std::int64_t>();
  EXPECT_GT(at[0], 0);
  for (int i = 1; i < count; ++i) EXPECT_GE(at[i], at[i - 1]) << "mark " << i;
  EXPECT_GT(at[count - 1], at[0]);
}

// Row pairs shared among teams of warps, each summing a slice of the columns, on a model whose
// rows are longer than one warp's 256-column slice (hidden 1024: the q/k/v, output and down
// stages split their columns 2 or more ways on an H100's grid): the kernel matches the plain
// layer in lockstep, and one warp per pair gives the same step to rounding.
TEST(PersistentDecodeGpu, ColumnSplitsMatchThePlainLayer) {
  ZT_SKIP_WITHOUT_GPU();
  models::ModelConfig config = models::load_config(testing::fixture_dir("qwen2"));
  config.hidden_size = 1024;
  config.intermediate_size = 2816;
  config.num_heads = 8;
  config.num_kv_heads = 2;
  config.head_dim = 128;
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const models::CausalLM model = models::init_model(config, 7, {.device = Device::cuda(), .dtype = dtype});
    for (std::int64_t sequences : {1, 8}) decode_in_lockstep(model, "qwen2 hidden 1024", {.sequences = sequences});
    KernelStep step(model);
    const std::vector<float> split = step.logits();
    step.kernel->set_split_columns(false);
    const std::vector<float> whole = step.logits();
    float scale = 0.0f;
    for (float value : whole) scale = std::max(scale, std::fabs(value));
    EXPECT_LE(largest_difference(whole, split), (dtype == DType::kBF16 ? 0.05f : 0.01f) * scale + 1e-3f)
        << dtype_name(dtype);
  }
}

TEST(PersistentDecodeGpu, ModelsItCannotTakeAreRefusedOrLeftToTheGraphs) {
  ZT_SKIP_WITHOUT_GPU();
  {
    models::CausalLM model = models::load_model(testing::fixture_dir("glm4"), {Device::cuda(), DType::kBF16});
    PagedKvCache cache(model.config(), 16, kBlockSize, model.dtype(), model.device());
    EXPECT_NE(PersistentDecode::unsupported(model, cache), "");
    EXPECT_THROW(DecodeGraphs(model, cache, 8, kWidth, DecodeKernel::kPersistent), Error);
    EXPECT_NO_THROW(DecodeGraphs(model, cache, 8, kWidth, DecodeKernel::kFastest));
  }
  models::CausalLM model = models::load_model(testing::fixture_dir("qwen2"), {Device::cuda(), DType::kF32});
  PagedKvCache cache(model.config(), 16, kBlockSize, model.dtype(), model.device());
  EXPECT_EQ(PersistentDecode::unsupported(model, cache), "the weights are not bfloat16 or float16");
}

}  // namespace
}  // namespace zt::infer
