// P-Tuning v2 (models/peft/prefix_encoder.h) on tiny random models of every architecture: a prefix
// made of real tokens' cached keys and values gives the logits of the full sequence; the
// encoder's rows split as ChatGLM's get_prompt splits them; its gradients match finite
// differences with and without the projection, and with activation checkpointing; training
// moves only the prefix; save and load round-trip; cached generation equals recomputation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "models/config/config_presets.h"
#include "models/init.h"
#include "models/peft/prefix_encoder.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/reference/generate.h"
#include "models/reference/sequence_kv_cache.h"
#include "models/weights/weights.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/gradcheck.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/op_test_util.h"
#include "tests/common/tiny_models.h"
#include "train/finetuning.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;
using autograd::Variable;
using testing::fixture_dir;
using Sequences = std::vector<std::vector<std::int64_t>>;

const Architecture kArchitectures[] = {Architecture::kQwen2, Architecture::kQwen3, Architecture::kGlm,
                                       Architecture::kGlm4, Architecture::kChatGlm};

std::string arch_name(const ::testing::TestParamInfo<Architecture>& info) { return architecture_name(info.param); }

// Every parameter drawn away from its initial value, so a misplaced one changes the result.
CausalLM random_model(Architecture arch, std::uint64_t seed, DType dtype = DType::kF64) {
  CausalLM model = init_model(parse_config(tiny_config_json(arch), "tiny"), seed, {.dtype = dtype});
  std::uint64_t offset = 0;
  for (const auto& p : model.named_parameters()) {
    Tensor value = p.variable.data();
    const bool is_norm = p.name.find("norm") != std::string::npos;
    value.copy_from(Tensor::normal(value.shape(), seed + 1, offset, is_norm ? 1.0 : 0.0, is_norm ? 0.2 : 0.4, dtype));
    offset += 1 << 16;
  }
  return model;
}

std::shared_ptr<PrefixEncoder> random_encoder(const CausalLM& model, PrefixConfig config, std::uint64_t seed) {
  auto encoder = std::make_shared<PrefixEncoder>(model.config(), config, model.device(), model.dtype());
  Generator generator(seed);
  encoder->init_weights(generator);
  return encoder;
}

struct Packed {
  Tensor ids, positions, cu_seqlens;
};

// The sequences back to back, each one's positions counting from first_position.
Packed pack(const Sequences& sequences, std::int64_t first_position = 0) {
  std::vector<double> ids, positions, cu{0};
  for (const auto& sequence : sequences) {
    for (std::size_t i = 0; i < sequence.size(); ++i) {
      ids.push_back(static_cast<double>(sequence[i]));
      positions.push_back(static_cast<double>(first_position + static_cast<std::int64_t>(i)));
    }
    cu.push_back(cu.back() + static_cast<double>(sequence.size()));
  }
  return {testing::index_tensor(ids, DType::kI64, Device::cpu()),
          testing::index_tensor(positions, DType::kI64, Device::cpu()),
          testing::index_tensor(cu, DType::kI32, Device::cpu())};
}

Variable logits_of(const CausalLM& model, const Packed& batch) {
  return model.forward(batch.ids, batch.positions, batch.cu_seqlens);
}

// Each layer's keys (after RoPE) and values of `tokens` at positions 0.., as a cache holds them.
std::vector<PrefixKv> cached_keys_values(const CausalLM& model, const std::vector<std::int64_t>& tokens) {
  autograd::NoGradGuard no_recording;
  const auto length = static_cast<std::int64_t>(tokens.size());
  SequenceKvCache cache(model.config(), length, model.dtype(), model.device());
  Packed batch = pack({tokens});
  model.forward_hidden(batch.ids, batch.positions, batch.cu_seqlens, &cache);
  std::vector<PrefixKv> layers;
  for (std::int64_t layer = 0; layer < model.config().num_layers; ++layer)
    layers.push_back({Variable(cache.keys(layer).clone()), Variable(cache.values(layer).clone())});
  return layers;
}

// [1, ...] repeated to [sequences, ...].
Tensor repeated(const Tensor& one, std::int64_t sequences) {
  Shape shape = one.shape();
  shape[0] = sequences;
  Tensor out = Tensor::empty(shape, one.dtype(), one.device());
  for (std::int64_t s = 0; s < sequences; ++s) out.narrow(0, s, 1).copy_from(one);
  return out;
}

std::vector<double> rows(const Tensor& t, std::int64_t start, std::int64_t count) {
  return t.narrow(0, start, count).contiguous().to_vector();
}

void expect_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tolerance * std::max(1.0, std::abs(expected[i]))) << what << " at " << i;
}

std::string with_thousands(std::int64_t value) {
  std::string digits = std::to_string(value);
  for (auto at = static_cast<std::ptrdiff_t>(digits.size()) - 3; at > 0; at -= 3)
    digits.insert(static_cast<std::size_t>(at), 1, ',');
  return digits;
}

class PrefixModel : public ::testing::TestWithParam<Architecture> {};

// The real equivalence behind P-Tuning: a context's cached keys and values used as every
// layer's prefix give the continuation the logits it has after the context in one sequence
// (positions continuing the context's), for each sequence of a packed batch.
TEST_P(PrefixModel, CachedContextAsPrefixGivesTheFullSequencesLogits) {
  CausalLM model = random_model(GetParam(), 3);
  const std::vector<std::int64_t> context{3, 7, 11};
  const Sequences continuations{{5, 9, 2, 4}, {8, 1}, {30}};
  const std::vector<PrefixKv> prefix = cached_keys_values(model, context);
  model.set_prefix_source([prefix](std::int64_t sequences) {
    std::vector<PrefixKv> layers;
    for (const PrefixKv& layer : prefix)
      layers.push_back(
          {Variable(repeated(layer.keys.data(), sequences)), Variable(repeated(layer.values.data(), sequences))});
    return layers;
  });
  const auto p = static_cast<std::int64_t>(context.size());
  Tensor with_prefix = logits_of(model, pack(continuations, p)).data();
  model.set_prefix_source(nullptr);
  std::int64_t row = 0;
  for (const auto& continuation : continuations) {
    std::vector<std::int64_t> whole = context;
    whole.insert(whole.end(), continuation.begin(), continuation.end());
    const auto n = static_cast<std::int64_t>(continuation.size());
    Tensor full = logits_of(model, pack({whole})).data();
    expect_close(rows(with_prefix, row, n), rows(full, p, n), 1e-10, "continuation at row " + std::to_string(row));
    row += n;
  }
}

// Greedy generation caches the prefix first and counts the prompt's positions from 0: the
// same tokens as recomputing the whole sequence with the prefix at every step.
TEST_P(PrefixModel, CachedGenerationEqualsRecomputation) {
  CausalLM model = random_model(GetParam(), 5);
  attach_prefix_encoder(model, random_encoder(model, {.pre_seq_len = 3, .prefix_projection = true}, 6));
  GenerationOptions options;
  options.max_new_tokens = 6;
  const std::vector<std::int64_t> prompt{4, 17, 9, 22};
  std::vector<std::int64_t> generated = generate(model, prompt, options);
  ASSERT_EQ(generated.size(), 6u);
  autograd::NoGradGuard no_recording;
  std::vector<std::int64_t> sequence = prompt;
  for (std::size_t step = 0; step < generated.size(); ++step) {
    Tensor logits = logits_of(model, pack({sequence})).data();
    std::vector<double> last = rows(logits, static_cast<std::int64_t>(sequence.size()) - 1, 1);
    const auto best = static_cast<std::int64_t>(std::max_element(last.begin(), last.end()) - last.begin());
    ASSERT_EQ(generated[step], best) << "step " << step;
    sequence.push_back(best);
  }
}

// Gradients of every encoder parameter through the whole model, by central differences.
TEST_P(PrefixModel, EncoderGradientsMatchFiniteDifferences) {
  for (bool projection : {false, true}) {
    CausalLM model = random_model(GetParam(), 7);
    for (const Variable& p : model.parameters()) p.set_requires_grad(false);
    auto encoder = random_encoder(model, {.pre_seq_len = 2, .prefix_projection = projection, .dropout = 0.0}, 8);
    attach_prefix_encoder(model, encoder);
    const Packed batch = pack({{5, 9, 2}, {8, 1}});
    auto set_parameters = [&](const std::vector<Tensor>& in) {
      for (std::size_t k = 0; k < in.size(); ++k) {
        Tensor target = encoder->named_parameters()[k].variable.data();
        target.copy_from(in[k]);
      }
    };
    auto forward = [&](const std::vector<Tensor>& in) {
      set_parameters(in);
      return logits_of(model, batch).data().clone();
    };
    auto backward = [&](const std::vector<Tensor>& in, const Tensor& probe) {
      set_parameters(in);
      for (const auto& p : encoder->named_parameters()) p.variable.zero_grad();
      autograd::sum(autograd::mul(logits_of(model, batch), Variable(probe))).backward();
      std::vector<Tensor> grads;
      for (const auto& p : encoder->named_parameters()) grads.push_back(p.variable.grad());
      return grads;
    };
    std::vector<Tensor> inputs;
    for (const auto& p : encoder->named_parameters()) inputs.push_back(p.variable.data().clone());
    testing::expect_gradients_match(std::string("prefix encoder, projection ") + (projection ? "on" : "off"), forward,
                                    backward, inputs, std::vector<bool>(inputs.size(), true), 1e-6, 1e-6);
  }
}

// The prefix enters each checkpointed layer as an input, so recomputing gives the same
// gradients (dropout included: it runs once per forward, outside the layers).
TEST_P(PrefixModel, CheckpointingGivesTheSameGradients) {
  auto gradients = [&](bool checkpointing) {
    CausalLM model = random_model(GetParam(), 9);
    for (const Variable& p : model.parameters()) p.set_requires_grad(false);
    auto encoder = random_encoder(model, {.pre_seq_len = 3, .prefix_projection = true}, 10);
    attach_prefix_encoder(model, encoder);
    model.set_gradient_checkpointing(checkpointing);
    default_generator().set_state({21, 0});
    const Packed batch = pack({{5, 9, 2, 4}, {8, 1}});
    Variable logits = logits_of(model, batch);
    autograd::sum(autograd::mul(logits, Variable(Tensor::normal(logits.data().shape(), 4, 0, 0.0, 1.0, DType::kF64))))
        .backward();
    std::vector<double> all;
    for (const auto& p : encoder->named_parameters()) {
      std::vector<double> g = p.variable.grad().to_vector();
      all.insert(all.end(), g.begin(), g.end());
    }
    return all;
  };
  expect_close(gradients(true), gradients(false), 1e-12, "gradients with and without checkpointing");
}

// select_trainable freezes the model and trains the encoder alone: after a few AdamW steps
// every base parameter is bit for bit what it was, and has no gradient.
TEST_P(PrefixModel, TrainingMovesOnlyThePrefixEncoder) {
  auto model = std::make_shared<CausalLM>(random_model(GetParam(), 11, DType::kF32));
  const train::TrainingArguments args = train::parse_training_arguments(
      {"--model_name_or_path", "tiny", "--output_dir", "unused", "--train_file", "unused", "--finetuning_type",
       "ptuning", "--pre_seq_len", "3", "--prefix_projection", "true"});
  std::vector<std::vector<double>> base_before;
  for (const auto& p : model->named_parameters()) base_before.push_back(p.variable.data().to_vector());
  std::vector<train::TrainableParameter> trainable = train::select_trainable(*model, args);
  std::set<std::string> names;
  std::vector<Variable> variables;
  std::vector<std::vector<double>> prefix_before;
  for (const auto& p : trainable) {
    names.insert(p.name);
    variables.push_back(p.variable);
    prefix_before.push_back(p.variable.data().to_vector());
  }
  EXPECT_EQ(names, (std::set<std::string>{
                       "transformer.prefix_encoder.embedding.weight", "transformer.prefix_encoder.trans.0.weight",
                       "transformer.prefix_encoder.trans.0.bias", "transformer.prefix_encoder.trans.2.weight",
                       "transformer.prefix_encoder.trans.2.bias"}));
  std::int64_t trained = 0;
  for (const Variable& v : variables) trained += v.data().numel();
  const std::int64_t all = model->num_parameters() + trained;
  char expected[128];
  std::snprintf(expected, sizeof expected, "trainable params: %s || all params: %s || trainable%%: %.4f",
                with_thousands(trained).c_str(), with_thousands(all).c_str(),
                100.0 * static_cast<double>(trained) / static_cast<double>(all));
  EXPECT_EQ(train::trainable_summary(*model, trainable), expected);

  testing::TinyAdamW optimizer(variables);
  const Packed batch = pack({{5, 9, 2, 4, 13}, {8, 1, 6}});
  const Tensor labels = testing::index_tensor({9, 2, 4, 13, -100, 1, 6, -100}, DType::kI64, Device::cpu());
  for (int step = 0; step < 3; ++step) {
    model->loss(logits_of(*model, batch), labels).backward();
    optimizer.step();
  }
  for (std::size_t i = 0; i < model->named_parameters().size(); ++i) {
    const NamedParameter& p = model->named_parameters()[i];
    EXPECT_EQ(p.variable.data().to_vector(), base_before[i]) << p.name << " changed";
    EXPECT_FALSE(p.variable.grad().defined()) << p.name << " has a gradient";
  }
  for (std::size_t i = 0; i < trainable.size(); ++i)
    EXPECT_NE(trainable[i].variable.data().to_vector(), prefix_before[i]) << trainable[i].name << " did not train";
}

INSTANTIATE_TEST_SUITE_P(Architectures, PrefixModel, ::testing::ValuesIn(kArchitectures), arch_name);

TEST(PrefixEncoder, RowsSplitAsLayerThenKeyOrValueThenHeadThenDim) {
  CausalLM model = random_model(Architecture::kChatGlm, 1);
  auto encoder = random_encoder(model, {.pre_seq_len = 3}, 2);
  const ModelConfig& c = model.config();
  ASSERT_EQ(encoder->width(), c.num_layers * 2 * c.num_kv_heads * c.head_dim);
  const std::vector<double> table = encoder->named_parameters()[0].variable.data().to_vector();
  autograd::NoGradGuard no_recording;
  const std::vector<PrefixKv> prefix = encoder->forward(2);
  ASSERT_EQ(static_cast<std::int64_t>(prefix.size()), c.num_layers);
  for (std::int64_t layer = 0; layer < c.num_layers; ++layer)
    for (int which = 0; which < 2; ++which) {
      const Tensor& t = which == 0 ? prefix[layer].keys.data() : prefix[layer].values.data();
      ASSERT_EQ(t.shape(), (Shape{2, 3, c.num_kv_heads, c.head_dim}));
      const std::vector<double> got = t.contiguous().to_vector();
      std::size_t i = 0;
      for (std::int64_t s = 0; s < 2; ++s)
        for (std::int64_t p = 0; p < 3; ++p)
          for (std::int64_t h = 0; h < c.num_kv_heads; ++h)
            for (std::int64_t d = 0; d < c.head_dim; ++d, ++i) {
              const std::int64_t column = ((layer * 2 + which) * c.num_kv_heads + h) * c.head_dim + d;
              ASSERT_EQ(got[i], table[static_cast<std::size_t>(p * encoder->width() + column)])
                  << "layer " << layer << (which ? " value" : " key") << " sequence " << s << " row " << p;
            }
    }
}

TEST(PrefixEncoder, ProjectionIsLinearTanhLinear) {
  CausalLM model = random_model(Architecture::kQwen2, 1);
  auto encoder = random_encoder(model, {.pre_seq_len = 2, .prefix_projection = true}, 3);
  const auto& params = encoder->named_parameters();
  ASSERT_EQ(params.size(), 5u);
  const std::int64_t width = encoder->width(), hidden = model.config().hidden_size;
  EXPECT_EQ(params[1].variable.data().shape(), (Shape{hidden, width}));
  EXPECT_EQ(params[3].variable.data().shape(), (Shape{width, hidden}));
  std::vector<std::vector<double>> v;
  for (const auto& p : params) v.push_back(p.variable.data().to_vector());
  autograd::NoGradGuard no_recording;
  // Layer 0's keys are the first kv_heads · head_dim columns of each row.
  const std::vector<double> keys = encoder->forward(1)[0].keys.data().contiguous().to_vector();
  const std::int64_t columns = model.config().num_kv_heads * model.config().head_dim;
  for (std::int64_t p = 0; p < 2; ++p) {
    std::vector<double> h(static_cast<std::size_t>(hidden));
    for (std::int64_t j = 0; j < hidden; ++j) {
      double sum = v[2][static_cast<std::size_t>(j)];
      for (std::int64_t k = 0; k < width; ++k)
        sum += v[1][static_cast<std::size_t>(j * width + k)] * v[0][static_cast<std::size_t>(p * width + k)];
      h[static_cast<std::size_t>(j)] = std::tanh(sum);
    }
    for (std::int64_t col = 0; col < columns; ++col) {
      double out = v[4][static_cast<std::size_t>(col)];
      for (std::int64_t j = 0; j < hidden; ++j)
        out += v[3][static_cast<std::size_t>(col * hidden + j)] * h[static_cast<std::size_t>(j)];
      EXPECT_NEAR(keys[static_cast<std::size_t>(p * columns + col)], out, 1e-12) << "row " << p << " column " << col;
    }
  }
}

TEST(PrefixEncoder, InitialisationFollowsTorchDefaultsAndTheGenerator) {
  CausalLM model = random_model(Architecture::kQwen2, 1);
  auto encoder = random_encoder(model, {.pre_seq_len = 16, .prefix_projection = true}, 4);
  const auto& params = encoder->named_parameters();
  std::vector<double> table = params[0].variable.data().to_vector();
  double mean = 0, square = 0;
  for (double x : table) mean += x / static_cast<double>(table.size());
  for (double x : table) square += (x - mean) * (x - mean) / static_cast<double>(table.size());
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(std::sqrt(square), 1.0, 0.1);  // nn.Embedding: N(0, 1)
  // nn.Linear: weight and bias uniform in ±1/√in_features, in_features being the weight's columns.
  using Pair = std::pair<std::size_t, std::size_t>;  // (parameter, its layer's weight)
  for (auto [k, weight] : {Pair{1, 1}, Pair{2, 1}, Pair{3, 3}, Pair{4, 3}}) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(params[weight].variable.data().size(1)));
    std::vector<double> values = params[k].variable.data().to_vector();
    const double largest = std::abs(
        *std::max_element(values.begin(), values.end(), [](double a, double b) { return std::abs(a) < std::abs(b); }));
    EXPECT_LE(largest, bound) << params[k].name;
    EXPECT_GT(largest, 0.8 * bound) << params[k].name;
  }
  EXPECT_EQ(random_encoder(model, encoder->config(), 4)->named_parameters()[3].variable.data().to_vector(),
            params[3].variable.data().to_vector());
  EXPECT_NE(random_encoder(model, encoder->config(), 5)->named_parameters()[0].variable.data().to_vector(), table);
}

// ChatGLM's dropout acts on the batch-expanded prefix: a mask per sequence, only in training.
TEST(PrefixEncoder, DropoutOnlyWhileRecordingWithAMaskPerSequence) {
  CausalLM model = random_model(Architecture::kQwen2, 1);
  auto encoder = random_encoder(model, {.pre_seq_len = 4, .dropout = 0.5}, 2);
  std::vector<double> clean;
  {
    autograd::NoGradGuard no_recording;
    clean = encoder->forward(1)[1].values.data().contiguous().to_vector();
    EXPECT_EQ(encoder->forward(1)[1].values.data().contiguous().to_vector(), clean);
  }
  const Tensor dropped = encoder->forward(2)[1].values.data().contiguous();
  const std::vector<double> first = rows(dropped, 0, 1), second = rows(dropped, 1, 1);
  EXPECT_NE(first, second);
  for (const auto* sequence : {&first, &second})
    for (std::size_t i = 0; i < clean.size(); ++i)
      EXPECT_TRUE((*sequence)[i] == 0.0 || std::abs((*sequence)[i] - 2.0 * clean[i]) < 1e-12) << i;
}

class PrefixFiles : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("zt_ptuning_files_" + std::string(GetParam()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(PrefixFiles, SaveThenLoadGivesIdenticalLogitsUnderChatGlmsNames) {
  CausalLM trained = load_model(fixture_dir(GetParam()));
  auto encoder = random_encoder(trained, {.pre_seq_len = 3, .prefix_projection = true}, 12);
  attach_prefix_encoder(trained, encoder);
  const Packed batch = pack({{5, 9, 2, 4}, {8, 1}});
  autograd::NoGradGuard no_recording;
  const std::vector<double> expected = logits_of(trained, batch).data().to_vector();
  save_prefix_checkpoint(trained, encoder->config(), encoder->named_parameters(), dir_.string());

  const nlohmann::ordered_json config = read_json_file((dir_ / "config.json").string());
  EXPECT_EQ(config["pre_seq_len"], 3);
  EXPECT_EQ(config["prefix_projection"], true);
  EXPECT_EQ(config["model_type"], trained.config().raw["model_type"]);
  std::vector<std::string> names = SafetensorsFile::open((dir_ / "model.safetensors").string()).names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "transformer.prefix_encoder.embedding.weight", "transformer.prefix_encoder.trans.0.bias",
                       "transformer.prefix_encoder.trans.0.weight", "transformer.prefix_encoder.trans.2.bias",
                       "transformer.prefix_encoder.trans.2.weight"}));

  CausalLM loaded = load_model(fixture_dir(GetParam()));
  auto reloaded = load_prefix_checkpoint(loaded, dir_.string());
  EXPECT_EQ(reloaded->config().pre_seq_len, 3);
  EXPECT_EQ(logits_of(loaded, batch).data().to_vector(), expected);
}

TEST_P(PrefixFiles, AnotherModelsPrefixOrAPlainModelFolderIsRefusedByName) {
  CausalLM model = load_model(fixture_dir(GetParam()));
  testing::expect_mentions(testing::error_of([&] { load_prefix_checkpoint(model, fixture_dir(GetParam())); }),
                           {"pre_seq_len", "config.json", "--ptuning_checkpoint"});
  CausalLM other = random_model(Architecture::kQwen2, 1);
  auto encoder = random_encoder(other, {.pre_seq_len = 2}, 1);
  save_prefix_checkpoint(other, encoder->config(), encoder->named_parameters(), dir_.string());
  testing::expect_mentions(testing::error_of([&] { load_prefix_checkpoint(model, dir_.string()); }),
                           {"wrong shape", "transformer.prefix_encoder.embedding.weight", "pre_seq_len"});
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PrefixFiles, ::testing::Values("qwen2", "chatglm", "glm"));

}  // namespace
}  // namespace zt::models
