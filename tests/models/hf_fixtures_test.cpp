// The models against Hugging Face transformers, the oracle: every folder under
// tests/data/models (written by scripts/make_model_fixtures.py) holds a tiny random model as
// transformers saved it, the logits, loss and every parameter's gradient transformers
// computed on a packed batch, and the tokens its greedy generate produced. ZT_MODEL_FIXTURES
// points the tests at another folder of the same layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "models/batch.h"
#include "models/config/config.h"
#include "models/reference/generate.h"
#include "models/weights/weights.h"
#include "tensor/safetensors/safetensors.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

const char* const kArchitectures[] = {"qwen2", "qwen3", "glm", "glm4", "chatglm"};

std::string fixture_dir(const std::string& arch) {
  const char* override_dir = std::getenv("ZT_MODEL_FIXTURES");
  fs::path root = override_dir != nullptr ? fs::path(override_dir) : fs::path(ZT_SOURCE_DIR) / "tests/data/models";
  return (root / arch).string();
}

struct Fixture {
  std::string dir;
  nlohmann::ordered_json json;
  SafetensorsFile expected;
};

// Absent fixtures fail the test (they are part of the tree, not an optional extra).
Fixture load_fixture(const std::string& arch) {
  std::string dir = fixture_dir(arch);
  for (const char* file : {"config.json", "fixture.json", "expected.safetensors"})
    if (!fs::is_regular_file(fs::path(dir) / file))
      throw std::runtime_error("no " + std::string(file) + " in '" + dir +
                               "': run scripts/make_model_fixtures.py (needs torch and transformers) to write "
                               "the model fixtures");
  return {dir, read_json_file((fs::path(dir) / "fixture.json").string()),
          SafetensorsFile::open((fs::path(dir) / "expected.safetensors").string())};
}

std::vector<double> doubles(const nlohmann::ordered_json& list) {
  std::vector<double> values;
  for (const auto& v : list) values.push_back(v.get<double>());
  return values;
}

Tensor int_tensor(const nlohmann::ordered_json& list, DType dtype) {
  std::vector<double> values = doubles(list);
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype);
}

class ModelFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelFixture, LogitsLossAndGradientsMatchTransformers) {
  Fixture f = load_fixture(GetParam());
  CausalLM model = load_model(f.dir, {Device::cpu(), DType::kF32});
  Variable logits =
      model.forward(int_tensor(f.json["input_ids"], DType::kI64), int_tensor(f.json["position_ids"], DType::kI64),
                    int_tensor(f.json["cu_seqlens"], DType::kI32));
  Tensor expected_logits = f.expected.get("logits");
  ASSERT_EQ(logits.data().shape(), expected_logits.shape());
  EXPECT_LE(relative_error(logits.data(), expected_logits), 1e-5) << "logits of " << GetParam();

  Variable loss = model.loss(logits, int_tensor(f.json["labels"], DType::kI64));
  double expected_loss = f.expected.get("loss").item();
  EXPECT_LE(std::abs(loss.data().item() - expected_loss), 1e-5 * std::abs(expected_loss))
      << "loss " << loss.data().item() << " vs transformers' " << expected_loss;

  loss.backward();
  std::size_t expected_grads = 0;
  for (const std::string& name : f.expected.names()) expected_grads += name.rfind("grad/", 0) == 0;
  EXPECT_EQ(model.named_parameters().size(), expected_grads) << "parameters vs gradients transformers reported";
  for (const NamedParameter& p : model.named_parameters()) {
    const std::string key = "grad/" + p.name;
    ASSERT_TRUE(f.expected.contains(key)) << "transformers has no gradient for " << p.name;
    ASSERT_TRUE(p.variable.grad().defined()) << p.name << " got no gradient";
    EXPECT_LE(relative_error(p.variable.grad(), f.expected.get(key)), 1e-4) << "gradient of " << p.name;
  }
}

TEST_P(ModelFixture, GreedyTokensMatchTransformers) {
  Fixture f = load_fixture(GetParam());
  CausalLM model = load_model(f.dir, {Device::cpu(), DType::kF32});
  GenerationOptions options = load_generation_options(f.dir, model.config());
  options.max_new_tokens = f.json["max_new_tokens"].get<std::int64_t>();
  options.do_sample = false;
  std::vector<std::int64_t> prompt = f.json["prompt"].get<std::vector<std::int64_t>>();
  std::vector<std::int64_t> expected = f.json["greedy_new_tokens"].get<std::vector<std::int64_t>>();
  EXPECT_EQ(generate(model, prompt, options), expected);
}

// The fixture's packed batch laid out by pack_sequences gives the fixture's own tensors.
TEST_P(ModelFixture, PackSequencesLaysOutTheFixtureBatch) {
  Fixture f = load_fixture(GetParam());
  std::vector<std::int64_t> ids = f.json["input_ids"].get<std::vector<std::int64_t>>();
  std::vector<std::int64_t> labels = f.json["labels"].get<std::vector<std::int64_t>>();
  std::vector<std::int64_t> cu = f.json["cu_seqlens"].get<std::vector<std::int64_t>>();
  std::vector<std::vector<std::int64_t>> sequences, sequence_labels;
  for (std::size_t s = 0; s + 1 < cu.size(); ++s) {
    sequences.emplace_back(ids.begin() + cu[s], ids.begin() + cu[s + 1]);
    sequence_labels.emplace_back(labels.begin() + cu[s], labels.begin() + cu[s + 1]);
  }
  PackedBatch batch = pack_sequences(sequences, sequence_labels);
  EXPECT_EQ(batch.input_ids.to_vector(), doubles(f.json["input_ids"]));
  EXPECT_EQ(batch.positions.to_vector(), doubles(f.json["position_ids"]));
  EXPECT_EQ(batch.cu_seqlens.to_vector(), doubles(f.json["cu_seqlens"]));
  EXPECT_EQ(batch.labels.to_vector(), doubles(f.json["labels"]));
}

INSTANTIATE_TEST_SUITE_P(Architectures, ModelFixture, ::testing::ValuesIn(kArchitectures));

}  // namespace
}  // namespace zt::models
