// A decode step inside a scope of every few-row product (ops::FewRowsProducts::kAll: the decode
// graph's every-linear candidate), where a layer's residual adds + RMSNorms run as the prologues
// of the products that read them (models/residual_stream.h's PendingNorm) and the q/k/v product
// ends in RoPE and the cache's write (KvCache::attend_projected), against the same step recorded:
// a recorder turns every fusion off, so each add, norm, product and rotation runs alone. The
// logits and every layer's cached keys and values agree bit for bit, and the step profiler
// counts the norm launches the fusions removed: both of a Qwen2 layer's (but the first layer's
// input norm, which has no add), the post-attention norm of layers whose q/k/v product keeps its
// own RoPE (Qwen3's q/k norms, GLM's and ChatGLM's half-rotary heads). bfloat16 and float16, 1,
// 3 and 8 sequences.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "infer/batch_forward.h"
#include "models/config/config.h"
#include "models/init.h"
#include "ops/gemm/few_rows_product.h"
#include "runtime/profile/step_profiler.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/test_util.h"

namespace zt::infer {
namespace {

constexpr std::int64_t kBlockSize = 16;

std::vector<double> host(const Tensor& t) { return t.to(Device::cpu(), DType::kF32).to_vector(); }

// The architecture's fixture config widened to rows the few-row kernels take: hidden 256 and
// heads of 64 dims (whole-head RoPE where the architecture rotates whole heads).
models::ModelConfig config_of(const std::string& arch) {
  models::ModelConfig config = models::load_config(testing::fixture_dir(arch));
  config.hidden_size = 256;
  config.intermediate_size = 512;
  config.num_heads = 4;
  config.num_kv_heads = 2;
  config.head_dim = 64;
  config.initializer_range = 0.1;
  return config;
}

struct Decoded {
  std::vector<double> logits;
  std::vector<std::vector<double>> pools;  // every layer's keys, then its values
  std::int64_t norm_launches = 0;
};

// Prefills `sequences` prompts outside any scope, then decodes one token each inside a scope of
// every few-row product, recorded or not.
Decoded decode_step(models::CausalLM& model, std::int64_t sequences, bool recorded) {
  const models::ModelConfig& c = model.config();
  PagedKvCache cache(c, 32, kBlockSize, model.dtype(), model.device());
  for (std::int64_t layer = 0; layer < c.num_layers; ++layer)
    for (Tensor pool : {cache.key_pool(layer), cache.value_pool(layer)}) pool.zero_();
  std::vector<std::vector<std::int64_t>> prompts;
  StepInputs prefill, decode;
  for (std::int64_t s = 0; s < sequences; ++s) {
    std::vector<std::int64_t> prompt;
    for (std::int64_t i = 0; i < 3 + 7 * s; ++i) prompt.push_back((s * 131 + i * 17 + 3) % c.vocab_size);
    prompts.push_back(prompt);
  }
  for (std::int64_t s = 0; s < sequences; ++s) {
    EXPECT_TRUE(cache.try_add(s, static_cast<std::int64_t>(prompts[s].size()) + 2));
    prefill.prefilling.push_back(s);
    prefill.prompts.push_back(&prompts[s]);
    decode.decoding.push_back(s);
    decode.tokens.push_back((5 * s + 1) % c.vocab_size);
  }
  step_logits(model, cache, prefill);
  models::ActivationRecorder recorder;
  if (recorded) model.set_activation_recorder(&recorder);
  Decoded out;
  {
    ops::FewRowsGemmScope every_product(ops::FewRowsProducts::kAll);
    StepProfiler profiler(model.device());
    profiler.begin_step();
    out.logits = host(step_logits(model, cache, decode));
    profiler.end_step();
    out.norm_launches = profiler.profile().families[static_cast<std::size_t>(OpFamily::kNorm)].regions;
  }
  model.set_activation_recorder(nullptr);
  for (std::int64_t layer = 0; layer < c.num_layers; ++layer) out.pools.push_back(host(cache.key_pool(layer)));
  for (std::int64_t layer = 0; layer < c.num_layers; ++layer) out.pools.push_back(host(cache.value_pool(layer)));
  return out;
}

class FewRowsDecodeStep : public ::testing::TestWithParam<const char*> {};

TEST_P(FewRowsDecodeStep, FusedNormsAndRopeGiveTheUnfusedStepsBits) {
  ZT_SKIP_WITHOUT_GPU();
  const std::string arch = GetParam();
  const models::ModelConfig config = config_of(arch);
  // The q/k/v product takes the input norm where it ends in RoPE: heads that rotate whole, no
  // q/k norm between.
  const bool qkv_takes_norm =
      config.rope.style == ops::RopeStyle::kRotateHalf && config.rope.rotary_fraction == 1.0 && !config.qk_norm;
  const std::int64_t layers = config.num_layers;
  const std::int64_t fused_norms = layers + (qkv_takes_norm ? layers - 1 : 0);
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    models::CausalLM model = models::init_model(config, 7, {.device = Device::cuda(), .dtype = dtype});
    for (std::int64_t sequences : {1, 3, 8}) {
      const std::string name = arch + " " + dtype_name(dtype) + " x" + std::to_string(sequences);
      const Decoded fused = decode_step(model, sequences, false);
      const Decoded unfused = decode_step(model, sequences, true);
      EXPECT_EQ(fused.logits, unfused.logits) << name;
      ASSERT_EQ(fused.pools.size(), unfused.pools.size()) << name;
      for (std::size_t p = 0; p < fused.pools.size(); ++p) EXPECT_EQ(fused.pools[p], unfused.pools[p]) << name;
      EXPECT_EQ(fused.norm_launches, unfused.norm_launches - fused_norms) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, FewRowsDecodeStep, ::testing::Values("qwen2", "qwen3", "glm", "chatglm"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace zt::infer
