// The inference engine on the GPU: transformers' greedy tokens from the float32 fixtures
// (tests/data/models/generate_reference.json) with decode steps replayed as CUDA graphs,
// the same tokens without graphs, batched equal to alone, and bfloat16 models that run.
#include <gtest/gtest.h>

#include "infer/engine.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/test_util.h"

namespace zt::infer {
namespace {

using Tokens = std::vector<std::int64_t>;

std::vector<GenerationRequest> reference_requests(const std::string& arch, std::vector<Tokens>& expected) {
  const auto json = models::read_json_file(testing::fixture_dir("generate_reference.json"));
  const auto& cases = json[arch];
  models::GenerationOptions options;
  options.max_new_tokens = json["max_new_tokens"].get<std::int64_t>();
  options.eos_token_ids = cases["eos_token_id"].get<Tokens>();
  std::vector<GenerationRequest> requests;
  for (std::size_t i = 0; i < cases["prompts"].size(); ++i) {
    requests.push_back({cases["prompts"][i].get<Tokens>(), options});
    expected.push_back(cases["new_tokens"][i].get<Tokens>());
  }
  return requests;
}

TEST(EngineGpu, GraphsGiveTransformersGreedyTokens) {
  ZT_SKIP_WITHOUT_GPU();
  for (const char* arch : {"qwen2", "qwen3", "glm", "glm4", "chatglm"}) {
    models::CausalLM model = models::load_model(testing::fixture_dir(arch), {Device::cuda(), DType::kF32});
    std::vector<Tokens> expected;
    const std::vector<GenerationRequest> requests = reference_requests(arch, expected);
    EXPECT_EQ(Engine(model, {.block_size = 16}).run(requests), expected) << arch << " batched, graphs";
    EXPECT_EQ(Engine(model, {.block_size = 16, .cuda_graphs = false}).run(requests), expected) << arch << " eager";
    for (std::size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(Engine(model, {.max_batch = 1}).run({requests[i]})[0], expected[i]) << arch << " prompt " << i;
  }
}

// Four sequences that never stop early keep every decode step at four rows, so graph
// replays and eager steps run the very same kernels and must agree bit for bit. The graphs
// are asked for by name: the default path may time the persistent kernel faster, whose
// bfloat16 sums run in another order and may tip a near tie the other way.
TEST(EngineGpu, Bf16GraphsMatchBf16EagerSteps) {
  ZT_SKIP_WITHOUT_GPU();
  models::CausalLM model = models::load_model(testing::fixture_dir("qwen3"), {Device::cuda(), DType::kBF16});
  std::vector<Tokens> expected;
  std::vector<GenerationRequest> requests = reference_requests("qwen3", expected);
  requests.push_back(requests.front());
  for (GenerationRequest& r : requests) r.options.eos_token_ids.clear();
  const std::vector<Tokens> eager = Engine(model, {.max_batch = 4, .cuda_graphs = false}).run(requests);
  const std::vector<Tokens> graphs =
      Engine(model, {.max_batch = 4, .decode_kernel = DecodeKernel::kGraph}).run(requests);
  EXPECT_EQ(graphs, eager);
  EXPECT_EQ(graphs[0].size(), static_cast<std::size_t>(requests[0].options.max_new_tokens));
}

// Sixteen bfloat16 sequences decode in a bucket of 16 rows, past the persistent kernel's 8: the
// default path captures the step with cuBLASLt's products and with the few-row GEMM (for the
// gate/up + SwiGLU product, and for every linear) and keeps the fastest graph, whichever it is.
// The few-row sums run in another order than
// the eager steps' cuBLASLt GEMMs, so a near tie may tip: every sequence still gets its tokens,
// the first (the prefill's) equal to the eager run's, and nearly all of the rest; a product
// computed wrongly would leave few equal.
TEST(EngineGpu, Bf16GraphsChosenByMeasurementGiveTheEagerTokens) {
  ZT_SKIP_WITHOUT_GPU();
  models::CausalLM model = models::load_model(testing::fixture_dir("qwen3"), {Device::cuda(), DType::kBF16});
  std::vector<Tokens> expected;
  const std::vector<GenerationRequest> references = reference_requests("qwen3", expected);
  std::vector<GenerationRequest> requests;
  for (std::size_t i = 0; requests.size() < 16; ++i) requests.push_back(references[i % references.size()]);
  for (GenerationRequest& r : requests) r.options.eos_token_ids.clear();
  const std::vector<Tokens> eager = Engine(model, {.max_batch = 16, .cuda_graphs = false}).run(requests);
  const std::vector<Tokens> fastest = Engine(model, {.max_batch = 16}).run(requests);
  ASSERT_EQ(fastest.size(), eager.size());
  std::size_t equal = 0, total = 0;
  for (std::size_t i = 0; i < eager.size(); ++i) {
    ASSERT_EQ(fastest[i].size(), static_cast<std::size_t>(requests[i].options.max_new_tokens)) << "sequence " << i;
    EXPECT_EQ(fastest[i].front(), eager[i].front()) << "sequence " << i;
    for (std::size_t t = 0; t < eager[i].size(); ++t) equal += fastest[i][t] == eager[i][t];
    total += eager[i].size();
  }
  EXPECT_GE(static_cast<double>(equal), 0.75 * static_cast<double>(total)) << equal << " of " << total;
}

}  // namespace
}  // namespace zt::infer
