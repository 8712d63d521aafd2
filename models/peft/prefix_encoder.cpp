#include "models/peft/prefix_encoder.h"

#include <cmath>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "runtime/error.h"

namespace zt::models {
namespace {

const std::string kPrefix = "transformer.prefix_encoder.";

Tensor drawn_normal(const Shape& shape, Generator& generator) {
  GeneratorState draw = generator.reserve(static_cast<std::uint64_t>(shape_numel(shape)));
  return Tensor::normal(shape, draw.seed, draw.offset, 0.0, 1.0, DType::kF32);
}

Tensor drawn_uniform(const Shape& shape, double bound, Generator& generator) {
  GeneratorState draw = generator.reserve(static_cast<std::uint64_t>(shape_numel(shape)));
  return Tensor::uniform(shape, draw.seed, draw.offset, -bound, bound, DType::kF32);
}

void assign(const Variable& parameter, const Tensor& value) {
  Tensor target = parameter.data();  // shares the parameter's storage
  target.copy_from(value);
}

// nn.Linear's reset_parameters: kaiming_uniform_(a = √5) on the weight comes to the same
// bound as the bias's, 1/√in_features.
void init_linear(const Variable& weight, const Variable& bias, Generator& generator) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight.data().size(1)));
  assign(weight, drawn_uniform(weight.data().shape(), bound, generator));
  assign(bias, drawn_uniform(bias.data().shape(), bound, generator));
}

}  // namespace

PrefixEncoder::PrefixEncoder(const ModelConfig& model, PrefixConfig config, Device device, DType dtype)
    : config_(config), layers_(model.num_layers), kv_heads_(model.num_kv_heads), head_dim_(model.head_dim) {
  ZT_REQUIRE(config_.pre_seq_len > 0,
             "P-Tuning: pre_seq_len must be positive, got " + std::to_string(config_.pre_seq_len));
  ZT_REQUIRE(config_.dropout >= 0.0 && config_.dropout < 1.0,
             "P-Tuning: the prefix dropout must be in [0, 1), got " + std::to_string(config_.dropout));
  embedding_ = add("embedding.weight", {config_.pre_seq_len, width()}, device, dtype);
  if (!config_.prefix_projection) return;
  hidden_weight_ = add("trans.0.weight", {model.hidden_size, width()}, device, dtype);
  hidden_bias_ = add("trans.0.bias", {model.hidden_size}, device, dtype);
  out_weight_ = add("trans.2.weight", {width(), model.hidden_size}, device, dtype);
  out_bias_ = add("trans.2.bias", {width()}, device, dtype);
}

Variable PrefixEncoder::add(const std::string& name, const Shape& shape, Device device, DType dtype) {
  Variable v(Tensor::zeros(shape, dtype, device), true, kPrefix + name);
  parameters_.push_back({kPrefix + name, v});
  return v;
}

std::int64_t PrefixEncoder::num_parameters() const {
  std::int64_t total = 0;
  for (const auto& p : parameters_) total += p.variable.data().numel();
  return total;
}

void PrefixEncoder::init_weights(Generator& generator) {
  autograd::NoGradGuard no_recording;
  assign(embedding_, drawn_normal(embedding_.data().shape(), generator));
  if (!config_.prefix_projection) return;
  init_linear(hidden_weight_, hidden_bias_, generator);
  init_linear(out_weight_, out_bias_, generator);
}

std::vector<PrefixKv> PrefixEncoder::forward(std::int64_t sequences) const {
  using namespace autograd;
  ZT_REQUIRE(sequences > 0, "P-Tuning: a prefix for " + std::to_string(sequences) + " sequences");
  const std::int64_t length = config_.pre_seq_len;
  const Device device = embedding_.data().device();
  Variable rows = embedding(embedding_, Tensor::arange(length, DType::kI64, device));
  if (config_.prefix_projection)
    rows = linear(tanh(linear(rows, hidden_weight_, hidden_bias_)), out_weight_, out_bias_);
  // add() repeats rows over the leading sequence dim, and its backward sums them back.
  Tensor zeros = Tensor::zeros({sequences, length, width()}, embedding_.data().dtype(), device);
  Variable batch = dropout(autograd::add(Variable(zeros), rows), config_.dropout, grad_enabled());
  Variable split = reshape(batch, {sequences, length, layers_, 2, kv_heads_, head_dim_});
  const Shape per_layer{sequences, length, kv_heads_, head_dim_};
  std::vector<PrefixKv> prefixes;
  for (std::int64_t layer = 0; layer < layers_; ++layer) {
    Variable both = narrow(split, 2, layer, 1);
    prefixes.push_back({reshape(narrow(both, 3, 0, 1), per_layer), reshape(narrow(both, 3, 1, 1), per_layer)});
  }
  return prefixes;
}

void attach_prefix_encoder(CausalLM& model, std::shared_ptr<const PrefixEncoder> encoder) {
  ZT_REQUIRE(encoder != nullptr, "attach_prefix_encoder: no encoder");
  model.set_prefix_source([encoder](std::int64_t sequences) { return encoder->forward(sequences); });
}

}  // namespace zt::models
