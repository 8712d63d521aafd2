// The committed transformers fixtures (tests/data/models/<arch>/, written by
// scripts/make_model_fixtures.py): their folders, their packed batch, a model's logits on it,
// a model's every parameter to train, and LoRA B matrices drawn at random, for the tests
// that build on those fixtures.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "models/config/config.h"
#include "models/model.h"
#include "models/peft/lora.h"
#include "train/optim/optimizer.h"

namespace zt::testing {

inline std::string fixture_dir(const std::string& arch) {
  return (std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/models" / arch).string();
}

struct FixtureBatch {
  Tensor ids, positions, cu_seqlens, labels;
};

inline Tensor int_tensor(const nlohmann::ordered_json& list, DType dtype) {
  std::vector<double> values;
  for (const auto& v : list) values.push_back(v.get<double>());
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype);
}

// fixture.json's batch: input_ids, position_ids, cu_seqlens and labels aligned with the logits.
inline FixtureBatch fixture_batch(const std::string& arch) {
  const auto json = models::read_json_file(fixture_dir(arch) + "/fixture.json");
  return {int_tensor(json["input_ids"], DType::kI64), int_tensor(json["position_ids"], DType::kI64),
          int_tensor(json["cu_seqlens"], DType::kI32), int_tensor(json["labels"], DType::kI64)};
}

inline Tensor logits_of(const models::CausalLM& model, const FixtureBatch& batch) {
  autograd::NoGradGuard no_recording;
  return model.forward(batch.ids, batch.positions, batch.cu_seqlens).data();
}

// Every LoRA B of `model` drawn at random (attach_lora starts them at zero), so the adapter
// changes the logits.
inline void randomize_lora_b(const models::CausalLM& model, std::uint64_t seed) {
  autograd::NoGradGuard no_recording;
  std::uint64_t offset = 0;
  for (const auto& p : models::lora_parameters(model))
    if (p.name.find("lora_B") != std::string::npos) {
      Tensor b = p.variable.data();
      b.copy_from(Tensor::normal(b.shape(), seed, offset++ * 1000, 0.0, 0.2, DType::kF32));
    }
}

// Every parameter of `model`, with weight decay where the trainer applies it.
inline std::vector<train::TrainableParameter> trainable_of(const models::CausalLM& model) {
  std::vector<train::TrainableParameter> trainable;
  for (const auto& [n, v] : model.named_parameters()) trainable.push_back({n, v, train::decays(n, v.data())});
  return trainable;
}

}  // namespace zt::testing
