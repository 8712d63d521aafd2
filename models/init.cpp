#include "models/init.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "models/weights/hf_names.h"
#include "runtime/philox.h"

namespace zt::models {
namespace {

// THUDM's ChatGLM checkpoints store the RotaryEmbedding's inv_freq buffer (over kv_channels / 2
// dims, base 10000: rope_ratio applies in its forward, not here); its code expects it back.
NamedTensors fresh_buffers(const ModelConfig& config, DType dtype) {
  if (config.arch != Architecture::kChatGlm) return {};
  const std::int64_t dim = config.head_dim / 2;
  std::vector<double> values;
  for (std::int64_t i = 0; i < dim; i += 2)
    values.push_back(1.0 / std::pow(10000.0, static_cast<double>(i) / static_cast<double>(dim)));
  Shape shape{static_cast<std::int64_t>(values.size())};
  return {{"transformer.rotary_pos_emb.inv_freq", Tensor::from_values(values, shape, dtype)}};
}

}  // namespace

void init_weights(CausalLM& model, std::uint64_t seed) {
  autograd::NoGradGuard no_recording;
  const ModelConfig& config = model.config();
  std::uint64_t offset = 0;
  for (const ParamSpec& spec : parameter_layout(config).all()) {
    Tensor value;
    switch (spec.kind) {
      case ParamKind::kNorm:
        value = Tensor::ones(spec.shape, DType::kF32);
        break;
      case ParamKind::kBias:
        value = Tensor::zeros(spec.shape, DType::kF32);
        break;
      default:
        value = Tensor::normal(spec.shape, seed, offset, 0.0, config.initializer_range, DType::kF32);
        offset += philox::blocks_for(static_cast<std::uint64_t>(value.numel()));
        break;
    }
    if (spec.kind == ParamKind::kEmbedding && config.pad_token_id) value.select(0, *config.pad_token_id).zero_();
    Tensor target = model.parameter(spec.name).data();
    target.copy_from(value);
  }
  model.set_buffers(fresh_buffers(config, model.dtype()));
}

CausalLM init_model(const ModelConfig& config, std::uint64_t seed, const ModelOptions& options) {
  CausalLM model(config, options);
  init_weights(model, seed);
  return model;
}

}  // namespace zt::models
