// What the tensor-parallel tests share: the fixture models (with the LoRA adapter and the
// P-Tuning prefix as tests/infer/engine_test.cpp loads them), and generation on N in-process
// ranks whose every rank's tokens come back, so a test can check that the ranks agree.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/communicators/inprocess_communicator.h"
#include "infer/tensor_parallel_engine.h"
#include "models/peft/lora.h"
#include "models/peft/lora_files.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/tensor_parallel.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"

namespace zt::testing {

using Tokens = std::vector<std::int64_t>;

// tests/data/models/<name>; qwen2_lora and qwen2_ptuning are qwen2 with that adapter.
inline models::CausalLM tp_fixture_model(const std::string& name, Device device = Device::cpu(),
                                         DType dtype = DType::kF32) {
  const std::string base = name == "qwen2_lora" || name == "qwen2_ptuning" ? "qwen2" : name;
  models::CausalLM model = models::load_model(fixture_dir(base), {device, dtype});
  if (name == "qwen2_lora") models::load_lora_adapter(model, fixture_dir(name));
  if (name == "qwen2_ptuning") {
    models::PrefixConfig config = models::read_prefix_config(fixture_dir(name));
    config.dropout = 0.0;
    auto encoder = std::make_shared<models::PrefixEncoder>(model.config(), config, model.device(), model.dtype());
    models::load_prefix_weights(encoder->named_parameters(), fixture_dir(name));
    models::attach_prefix_encoder(model, encoder);
  }
  return model;
}

// Every rank's shard of `full` (merged first when it carries a LoRA, as the runner merges it).
inline std::vector<models::CausalLM> shards_of(models::CausalLM full, int size, Device device) {
  if (!full.lora().empty()) models::merge_lora(full);
  std::vector<models::CausalLM> shards;
  for (int rank = 0; rank < size; ++rank) shards.push_back(models::shard_model(full, {rank, size}, device));
  return shards;
}

// `requests` generated on `shards.size()` in-process ranks: every rank's results, by rank.
inline std::vector<std::vector<Tokens>> generate_on_ranks(std::vector<models::CausalLM>& shards,
                                                          const std::vector<infer::GenerationRequest>& requests,
                                                          infer::TensorParallelOptions options = {}) {
  std::vector<std::vector<Tokens>> by_rank(shards.size());
  distributed::run_inprocess_ranks(static_cast<int>(shards.size()), std::chrono::minutes(5),
                                   [&](distributed::Communicator& comm) {
                                     const auto rank = static_cast<std::size_t>(comm.rank());
                                     infer::TensorParallelEngine engine(shards[rank], comm, options);
                                     by_rank[rank] = engine.run(requests);
                                   });
  return by_rank;
}

// fixture.json's prompt, max_new_tokens new tokens each, greedy with no stop token.
inline infer::GenerationRequest fixture_prompt_request(const std::string& name, std::int64_t max_new_tokens) {
  const std::string base = name == "qwen2_lora" || name == "qwen2_ptuning" ? "qwen2" : name;
  const auto json = models::read_json_file(fixture_dir(base) + "/fixture.json");
  infer::GenerationRequest request{json["prompt"].get<Tokens>(), {}};
  request.options.max_new_tokens = max_new_tokens;
  return request;
}

}  // namespace zt::testing
