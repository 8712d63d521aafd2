// The model the trainer's tests train: a two-layer Qwen2 of vocabulary 32, small enough that
// a few optimizer steps take milliseconds on the CPU, also with randomised weights; the flags,
// samples and TrainerModel its runs take; the DeepSpeed config its ZeRO runs take; and the
// flags of a whole training job on the shipped examples/tiny-qwen.
#pragma once

#include <unistd.h>
#include <cstdint>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "models/config/config.h"
#include "models/init.h"
#include "models/model.h"
#include "models/weights/weights.h"
#include "train/args/training_arguments.h"
#include "train/checkpoint/checkpoint.h"
#include "train/data/batching.h"
#include "train/optim/optimizer.h"
#include "train/trainer.h"

namespace zt::testing {

inline models::ModelConfig tiny_trainer_config() {
  return models::parse_config(nlohmann::ordered_json::parse(R"({
    "model_type": "qwen2", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": false,
    "max_position_embeddings": 64})"),
                              "tiny config");
}

// The tiny model with its parameters away from their initial values: normal, standard
// deviation 0.3, about 1 for the norms and 0 for the rest (seeded `seed` + 1), in `dtype`.
inline models::CausalLM random_tiny_model(std::uint64_t seed, DType dtype = DType::kF64) {
  models::CausalLM model = models::init_model(tiny_trainer_config(), seed, {.dtype = dtype});
  std::uint64_t offset = 0;
  for (const auto& p : model.named_parameters()) {
    Tensor value = p.variable.data();
    const bool is_norm = p.name.find("norm") != std::string::npos;
    value.copy_from(Tensor::normal(value.shape(), seed + 1, offset, is_norm ? 1.0 : 0.0, 0.3, dtype));
    offset += 1 << 16;
  }
  return model;
}

// The flags of a full fine-tune of the tiny model (the model and data reach the Trainer
// directly, so their flags only have to parse), writing to `output_dir`, then `extra`, whose
// flags win over these.
inline train::TrainingArguments tiny_trainer_arguments(const std::filesystem::path& output_dir,
                                                       const std::vector<std::string>& extra) {
  std::vector<std::string> all = {"--model_name_or_path", "tiny", "--output_dir",    output_dir.string(),
                                  "--train_file",         "x",    "--save_strategy", "no",
                                  "--finetuning_type",    "full", "--max_length",    "16"};
  all.insert(all.end(), extra.begin(), extra.end());
  return train::parse_training_arguments(all);
}

// Every parameter of `model` trains (decaying by HF's rule); a checkpoint is the whole model.
inline train::TrainerModel train_every_parameter(const std::shared_ptr<models::CausalLM>& model) {
  train::TrainerModel trained;
  trained.model = model.get();
  for (const auto& [name, variable] : model->named_parameters())
    trained.trainable.push_back({name, variable, train::decays(name, variable.data())});
  trained.save = [model](const std::string& d) { models::save_model(*model, d); };
  trained.load = [model](const std::string& d) { models::load_weights(*model, train::model_weights_path(d)); };
  return trained;
}

// `count` sequences whose next token follows from the current one (t -> (multiplier * t +
// increment) % 32, sample s starting at s % 32), sample s `length + s % spread` tokens long;
// the first two tokens are the prompt (labels ignored).
inline std::vector<train::TokenizedSample> chained_samples(int count, int length, int spread, int multiplier,
                                                           int increment) {
  std::vector<train::TokenizedSample> out;
  for (int s = 0; s < count; ++s) {
    train::TokenizedSample sample;
    std::int32_t t = s % 32;
    for (int i = 0; i < length + s % spread; ++i) {
      sample.ids.push_back(t);
      sample.labels.push_back(i < 2 ? train::kIgnoreIndex : t);
      t = (multiplier * t + increment) % 32;
    }
    out.push_back(sample);
  }
  return out;
}

// A ds_config.json in the temporary folder, named `name`, the stage and the process (ctest runs
// test cases side by side, and one case must not remove the file another is reading), for ZeRO
// `stage` with buckets of 300 elements (the tiny model fills several) and the batch sizes "auto"
// (from the flags); its path.
inline std::string write_zero_config(const std::string& name, int stage) {
  const std::filesystem::path ds = std::filesystem::temp_directory_path() /
                                   (name + std::to_string(stage) + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(ds) << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                           "zero_optimization": {"reduce_bucket_size": 300, "stage": )"
                    << stage << "}}";
  return ds.string();
}

// `zerotune train`'s flags for a job on the shipped tiny Qwen2 and the Alpaca demo data (qwen
// template) on the CPU, micro-batch 2, then `extra`.
inline std::vector<std::string> tiny_qwen_job_flags(const std::vector<std::string>& extra) {
  const std::string source = ZT_SOURCE_DIR;
  std::vector<std::string> all = {"--model_name_or_path",
                                  source + "/examples/tiny-qwen",
                                  "--train_file",
                                  source + "/examples/data/alpaca_demo.json",
                                  "--template",
                                  "qwen",
                                  "--device",
                                  "cpu",
                                  "--per_device_train_batch_size",
                                  "2"};
  all.insert(all.end(), extra.begin(), extra.end());
  return all;
}

}  // namespace zt::testing
