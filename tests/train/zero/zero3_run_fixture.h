// The ZeRO-3 tests' training runs (tests/train/zero/zero3_test.cpp and
// zero3_param_offload_test.cpp): a tiny model fixture trained by the Trainer under a DeepSpeed
// config, on one device or with ranks as threads on the CPU, and the comparison of the weights
// two runs end on (zero3_test.cpp says why the bound is a relative 1e-6).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "autograd/functions.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "models/peft/lora.h"
#include "models/peft/lora_files.h"
#include "models/peft/prefix_encoder.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/weights/weights.h"
#include "runtime/generator.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/process_test_util.h"
#include "tests/common/train_log_test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/optimizer_state_files.h"
#include "train/finetuning.h"
#include "train/trainer.h"
#include "train/training_job.h"
#include "train/zero/zero3_optimizer.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using testing::fixture_dir;
using testing::trainable_of;

// Pseudo-random token sequences of 5-12 tokens; the first two are the unlabelled prompt.
std::vector<TokenizedSample> samples(int count, std::int32_t vocab) {
  std::vector<TokenizedSample> out;
  std::uint32_t state = 12345;
  for (int s = 0; s < count; ++s) {
    TokenizedSample sample;
    const int length = 5 + s % 8;
    for (int i = 0; i < length; ++i) {
      state = state * 1664525u + 1013904223u;
      const auto token = static_cast<std::int32_t>((state >> 8) % static_cast<std::uint32_t>(vocab - 1)) + 1;
      sample.ids.push_back(token);
      sample.labels.push_back(i < 2 ? kIgnoreIndex : token);
    }
    out.push_back(sample);
  }
  return out;
}

// One training run: a model, a method, and how it is spread over ranks.
struct Spec {
  std::string model = "qwen2";  // a fixture: qwen2 (tied head, q/k/v biases), glm (untied), ...
  std::string method = "full";  // full | freeze | lora | ptuning
  int world = 0;                // 0: the single-device trainer, without a communicator
  int stage = 3;
  std::int64_t persistence_threshold = 100;  // norms and biases whole; 0: everything partitioned
  int micro = 2;
  int accumulation = 1;
  double max_grad_norm = 0.0;
  int steps = 5;
  std::string adam_epsilon = "1e-3";  // see the top of the file
  double prefix_dropout = 0.0;        // P-Tuning's (ChatGLM uses 0.1)
  int fp16_scale_power = 0;           // > 0: fp16 loss scaling from 2^this (hysteresis 1)
  bool offload = false;               // offload_optimizer to the CPU (stages 1-3)
  double offload_ratio = 1.0;         // offload_optimizer.ratio: the CPU Adam's share
  bool offload_param = false;         // offload_param to the CPU (stage 3)
  Device device = Device::cpu();      // the GPU: float32 weights there, ranks sharing it
  std::vector<std::string> extra;     // more flags

  // The single device on the same global batch: every rank's micro-batches of a step in one
  // accumulation window, in the order the ranks take them.
  Spec single() const {
    Spec s = *this;
    s.accumulation = accumulation * std::max(world, 1);
    s.world = 0;
    return s;
  }
  // The same run on `ranks` ranks (0: the single-device trainer), 12 samples a step.
  Spec on_ranks(int ranks) const {
    Spec s = *this;
    s.world = ranks;
    s.micro = 12 / std::max(ranks, 1);
    return s;
  }
  std::string label() const {
    return model + " " + method + " stage " + std::to_string(stage) + " world " + std::to_string(world) +
           " accumulation " + std::to_string(accumulation) + " clip " + std::to_string(max_grad_norm) +
           (offload ? " offload_optimizer ratio " + std::to_string(offload_ratio) : "") +
           (offload_param ? " offload_param" : "") + (device.is_cuda() ? " on the GPU" : "");
  }
};

using Weights = std::map<std::string, Tensor>;

class Zero3 : public testing::FolderTest {
 protected:
  fs::path deepspeed_config(const Spec& run) const {
    return dir_ / ("ds_" + std::to_string(run.stage) + "_" + std::to_string(run.persistence_threshold) + "_" +
                   std::to_string(run.fp16_scale_power) +
                   (run.offload ? "_offload" + std::to_string(static_cast<int>(run.offload_ratio * 100)) : "") +
                   (run.offload_param ? "_param" : "") + ".json");
  }
  // The single device reads it too (its stage then does not matter).
  void write_deepspeed_config(const Spec& run) const {
    std::ofstream out(deepspeed_config(run));
    out << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto", "zero_optimization": {"stage": )"
        << run.stage << R"(, "reduce_bucket_size": 3000,
        "stage3_param_persistence_threshold": )"
        << run.persistence_threshold;
    if (run.offload) out << R"(, "offload_optimizer": {"device": "cpu", "ratio": )" << run.offload_ratio << "}";
    if (run.offload_param) out << R"(, "offload_param": {"device": "cpu", "pin_memory": true})";
    out << "}";
    if (run.fp16_scale_power > 0)
      out << R"(, "fp16": {"enabled": "auto", "hysteresis": 1, "initial_scale_power": )" << run.fp16_scale_power << "}";
    out << "}";
  }

  TrainingArguments arguments(const Spec& run, const fs::path& out) const {
    std::vector<std::string> all = {"--model_name_or_path",
                                    fixture_dir(run.model),
                                    "--output_dir",
                                    out.string(),
                                    "--train_file",
                                    "x",
                                    "--learning_rate",
                                    "2e-3",
                                    "--weight_decay",
                                    "0.01",
                                    "--adam_epsilon",
                                    run.adam_epsilon,
                                    "--logging_steps",
                                    "1",
                                    "--save_strategy",
                                    "no",
                                    "--finetuning_type",
                                    run.method,
                                    "--max_length",
                                    "32",
                                    "--max_steps",
                                    std::to_string(run.steps),
                                    "--per_device_train_batch_size",
                                    std::to_string(run.micro),
                                    "--gradient_accumulation_steps",
                                    std::to_string(run.accumulation),
                                    "--max_grad_norm",
                                    std::to_string(run.max_grad_norm),
                                    "--overwrite_output_dir"};
    if (run.method == "lora") all.insert(all.end(), {"--lora_rank", "4", "--lora_target", "all"});
    if (run.method == "freeze") all.insert(all.end(), {"--freeze_trainable_layers", "1"});
    if (run.method == "ptuning") all.insert(all.end(), {"--pre_seq_len", "3", "--prefix_projection", "true"});
    all.insert(all.end(), {"--deepspeed", deepspeed_config(run).string()});
    if (run.fp16_scale_power > 0) all.push_back("--fp16");
    all.insert(all.end(), run.extra.begin(), run.extra.end());
    return parse_training_arguments(all);
  }

  // What training_job sets up, with P-Tuning's dropout settable (each rank draws its own
  // masks, so only a run without dropout can equal one device's).
  static TrainerModel trainer_model(const std::shared_ptr<models::CausalLM>& model, const TrainingArguments& args,
                                    const Spec& run) {
    TrainerModel trained;
    trained.model = model.get();
    if (args.finetuning_type == FinetuningType::kPtuning) {
      for (const auto& p : model->named_parameters()) p.variable.set_requires_grad(false);
      models::PrefixConfig config = prefix_config(args);
      config.dropout = run.prefix_dropout;
      auto encoder = std::make_shared<models::PrefixEncoder>(model->config(), config, model->device(), model->dtype());
      Generator generator(static_cast<std::uint64_t>(args.seed));
      encoder->init_weights(generator);
      models::attach_prefix_encoder(*model, encoder);
      std::vector<models::NamedParameter> prefix;
      for (const auto& [name, variable] : encoder->named_parameters()) {
        trained.trainable.push_back({name, variable, decays(name, variable.data())});
        prefix.push_back({name, variable});
      }
      trained.save = [model, config, prefix](const std::string& d) {
        models::save_prefix_checkpoint(*model, config, prefix, d);
      };
      trained.load = [prefix](const std::string& d) { models::load_prefix_weights(prefix, d); };
      return trained;
    }
    trained.trainable = select_trainable(*model, args);
    if (args.finetuning_type == FinetuningType::kLora) {
      const models::LoraConfig lora = lora_config(args, model->config());
      trained.save = [model, lora](const std::string& d) { models::save_lora_adapter(*model, lora, d); };
      trained.load = [model](const std::string& d) { models::load_lora_weights(*model, d); };
    } else {
      trained.save = [model](const std::string& d) { models::save_model(*model, d); };
      trained.load = [model](const std::string& d) { models::load_weights(*model, model_weights_path(d)); };
    }
    return trained;
  }

  // One rank's run (the single-device one when comm is null).
  TrainerState train_rank(const Spec& run, const fs::path& out, distributed::Communicator* comm) const {
    const TrainingArguments args = arguments(run, out);
    default_generator().manual_seed(99);  // every rank's (thread's) random stream starts alike
    auto model = std::make_shared<models::CausalLM>(models::load_model(fixture_dir(run.model), {.device = run.device}));
    TrainerModel trained = trainer_model(model, args, run);
    TrainerData data{samples(96, static_cast<std::int32_t>(model->config().vocab_size)), {}};
    const std::int64_t world = comm ? comm->world_size() : 1;
    const auto count = static_cast<std::int64_t>(data.train.size());
    TrainingPlan plan = plan_training(
        args, [&](std::int64_t micro) { return ((count + micro - 1) / micro + world - 1) / world; },
        static_cast<int>(world));
    Trainer trainer(trained, std::move(data), plan, comm);
    return trainer.train();
  }

  // Trains into root/name and returns every tensor of the .safetensors files written there
  // (the model, the LoRA adapter or the prefix encoder).
  Weights train(const Spec& run, const std::string& name, TrainerState* state = nullptr) const {
    const fs::path out = dir_ / name;
    write_deepspeed_config(run);
    if (run.world == 0) {
      TrainerState s = train_rank(run, out, nullptr);
      if (state) *state = s;
    } else {
      std::mutex mutex;
      distributed::run_inprocess_ranks(run.world, 120s, [&](distributed::Communicator& comm) {
        TrainerState s = train_rank(run, out, &comm);
        std::lock_guard<std::mutex> lock(mutex);
        if (comm.rank() == 0 && state) *state = s;
      });
    }
    return read_weights(out);
  }

  // `reader` resumed at step 2 of the run `name` of `writer` ends, after 5 steps, on the
  // weights of `writer` run on one device without offload and without stopping.
  void expect_resume_matches_uninterrupted(const Spec& writer, Spec reader, const std::string& name) const;

  // `run` trained into `name`_plain, then with parameter offload: the same weights and losses
  // bit for bit; then with optimizer offload as well: the same weights within the bound.
  // Leaves both offloads on in `run`; the weights without them.
  Weights expect_parameter_offload_changes_nothing(Spec& run, const std::string& name) const;

  // fp16_at_the_edge() over 3 ranks, as it is and with `offload` on: every rank skips the steps
  // the run without it skips, and the weights agree within `bound`.
  void expect_offload_skips_the_same_fp16_overflows(bool Spec::*offload, double bound) const;

  static Weights read_weights(const fs::path& dir) {
    Weights weights;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".safetensors") continue;
      SafetensorsFile file = SafetensorsFile::open(entry.path().string());
      for (const std::string& n : file.names()) weights[n] = file.get(n).clone();
    }
    return weights;
  }
};

// Of every tensor, the relative error ‖got − expected‖ / ‖expected‖ (2-norms); the worst of
// them, naming the tensor.
std::pair<double, std::string> worst_relative(const Weights& got, const Weights& expected) {
  EXPECT_EQ(got.size(), expected.size());
  std::pair<double, std::string> worst{0.0, ""};
  for (const auto& [name, want] : expected) {
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << "missing " << name;
      continue;
    }
    EXPECT_EQ(it->second.shape(), want.shape()) << name;
    const std::vector<double> a = it->second.to_vector(), b = want.to_vector();
    if (a.size() != b.size()) continue;
    double difference = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      difference += (a[i] - b[i]) * (a[i] - b[i]);
      norm += b[i] * b[i];
    }
    const double relative = std::sqrt(difference) / std::max(std::sqrt(norm), 1e-30);
    if (relative > worst.first) worst = {relative, name};
  }
  return worst;
}

void expect_same_weights(const Weights& got, const Weights& expected, const std::string& what, double bound = 1e-6) {
  ASSERT_FALSE(expected.empty()) << what;
  const auto [relative, where] = worst_relative(got, expected);
  EXPECT_LE(relative, bound) << what << ": " << where;
  if (std::getenv("ZT_ZERO3_SHOW"))
    std::fprintf(stderr, "RESULT %-70s %.3g %s\n", what.c_str(), relative, where.c_str());
}

inline void Zero3::expect_resume_matches_uninterrupted(const Spec& writer, Spec reader, const std::string& name) const {
  reader.extra = {"--resume_from_checkpoint", (dir_ / name / "checkpoint-2").string()};
  TrainerState state;
  const Weights resumed = train(reader, name + "_resumed", &state);
  EXPECT_EQ(state.global_step, 5);
  Spec single = writer.single();
  single.offload = false;
  single.offload_param = false;
  const Weights uninterrupted = train(single, name + "_single");
  expect_same_weights(resumed, uninterrupted, "resumed " + reader.label() + " from " + writer.label());
}

// `method` over `world` ranks with accumulation and clipping, LoRA matrices partitioned too
// (norms and biases whole): the runs the offload tests compare with and without offload.
inline Spec accumulated_clipped(const std::string& method, int world) {
  Spec run;
  run.method = method;
  run.world = world;
  run.accumulation = 2;
  run.max_grad_norm = 0.5;
  run.persistence_threshold = 50;
  return run;
}

// `method` clipped at 0.5, saving a checkpoint every 2 steps: the runs whose checkpoints the
// resume tests move to other runs.
inline Spec checkpoint_writer(const std::string& method) {
  Spec run;
  run.method = method;
  run.max_grad_norm = 0.5;
  run.extra = {"--save_strategy", "steps", "--save_steps", "2"};
  return run;
}

// fp16 with the loss scale starting at 2^126, at the edge of float32's range (the CPU model
// is float32): the scaled gradients overflow in some steps and not in others.
inline Spec fp16_at_the_edge() {
  Spec run;
  run.fp16_scale_power = 126;
  run.steps = 8;
  run.accumulation = 2;
  run.max_grad_norm = 0.5;
  return run;
}

inline Weights Zero3::expect_parameter_offload_changes_nothing(Spec& run, const std::string& name) const {
  TrainerState plain_state, offload_state;
  const Weights plain = train(run, name + "_plain", &plain_state);
  run.offload_param = true;
  expect_same_weights(train(run, name + "_param", &offload_state), plain, run.label(), 0.0);
  EXPECT_FALSE(testing::logged_values(plain_state, "loss").empty()) << run.label();
  EXPECT_EQ(testing::logged_values(offload_state, "loss"), testing::logged_values(plain_state, "loss")) << run.label();
  run.offload = true;
  expect_same_weights(train(run, name + "_param_optimizer"), plain, run.label());
  return plain;
}

inline void Zero3::expect_offload_skips_the_same_fp16_overflows(bool Spec::*offload, double bound) const {
  Spec run = fp16_at_the_edge();
  run.world = 3;
  TrainerState plain_state, offload_state;
  const Weights expected = train(run, "plain", &plain_state);
  run.*offload = true;
  const Weights got = train(run, "offload", &offload_state);
  const std::vector<double> plain_skipped = testing::logged_values(plain_state, "skipped_steps");
  ASSERT_TRUE(!plain_skipped.empty() && plain_skipped.back() > 0) << "the test needs some overflowed steps";
  EXPECT_EQ(testing::logged_values(offload_state, "skipped_steps"), plain_skipped);
  expect_same_weights(got, expected, run.label(), bound);
}

}  // namespace
}  // namespace zt::train
