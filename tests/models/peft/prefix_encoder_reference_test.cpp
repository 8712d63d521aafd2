// P-Tuning v2 against an independent PyTorch statement of it (scripts/check_ptuning.py): the
// tiny Qwen2 fixture with a prefix encoder of fixed weights, run by transformers with each
// layer's prefix as a pre-filled cache and positions from 0. zerotune must read the folder
// as --ptuning_checkpoint reads it and reproduce the per-layer prefix, the logits, the loss
// and the prefix encoder's gradients.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "autograd/grad_mode.h"
#include "models/config/config.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/weights/weights.h"
#include "tensor/safetensors/safetensors.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(ZT_SOURCE_DIR) / "tests/data/models";

Tensor int_tensor(const nlohmann::ordered_json& list, DType dtype) {
  std::vector<double> values;
  for (const auto& v : list) values.push_back(v.get<double>());
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype);
}

TEST(PtuningReference, PrefixLogitsLossAndGradientsMatchTransformers) {
  const fs::path dir = kModels / "qwen2_ptuning";
  for (const char* file : {"config.json", "model.safetensors", "expected.safetensors", "fixture.json"})
    ASSERT_TRUE(fs::is_regular_file(dir / file))
        << "no " << file << " in " << dir << ": run scripts/check_ptuning.py (needs torch and transformers) "
        << "to write the P-Tuning fixture";
  const nlohmann::ordered_json fixture = read_json_file((dir / "fixture.json").string());
  const SafetensorsFile expected = SafetensorsFile::open((dir / "expected.safetensors").string());

  CausalLM model = load_model((kModels / "qwen2").string(), {Device::cpu(), DType::kF32});
  for (const auto& p : model.named_parameters()) p.variable.set_requires_grad(false);
  PrefixConfig config = read_prefix_config(dir.string());
  EXPECT_EQ(config.pre_seq_len, fixture["pre_seq_len"].get<std::int64_t>());
  EXPECT_EQ(config.prefix_projection, fixture["prefix_projection"].get<bool>());
  config.dropout = 0.0;  // the reference runs the encoder in eval mode
  auto encoder = std::make_shared<PrefixEncoder>(model.config(), config, model.device(), model.dtype());
  load_prefix_weights(encoder->named_parameters(), dir.string());
  attach_prefix_encoder(model, encoder);

  {
    autograd::NoGradGuard no_recording;
    const std::vector<PrefixKv> prefix = encoder->forward(1);
    for (std::size_t layer = 0; layer < prefix.size(); ++layer) {
      const std::string key = "prefix/" + std::to_string(layer);
      EXPECT_LE(relative_error(prefix[layer].keys.data(), expected.get(key + "/keys")), 1e-6) << key << " keys";
      EXPECT_LE(relative_error(prefix[layer].values.data(), expected.get(key + "/values")), 1e-6) << key << " values";
    }
  }

  autograd::Variable logits =
      model.forward(int_tensor(fixture["input_ids"], DType::kI64), int_tensor(fixture["position_ids"], DType::kI64),
                    int_tensor(fixture["cu_seqlens"], DType::kI32));
  ASSERT_EQ(logits.data().shape(), expected.get("logits").shape());
  EXPECT_LE(relative_error(logits.data(), expected.get("logits")), 1e-5) << "logits";
  autograd::Variable loss = model.loss(logits, int_tensor(fixture["labels"], DType::kI64));
  const double expected_loss = expected.get("loss").item();
  EXPECT_NEAR(loss.data().item(), expected_loss, 1e-5 * std::abs(expected_loss)) << "loss";
  loss.backward();
  for (const NamedParameter& p : encoder->named_parameters()) {
    ASSERT_TRUE(p.variable.grad().defined()) << p.name << " got no gradient";
    EXPECT_LE(relative_error(p.variable.grad(), expected.get("grad/" + p.name)), 1e-4) << "gradient of " << p.name;
  }
}

}  // namespace
}  // namespace zt::models
