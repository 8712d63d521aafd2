// Published DeepSpeed configs (tests/data/ds_configs/), each loaded with the flags a user of
// that project passes, on a model of hidden size 64, 100 steps with 10 of warmup: the values
// that decide the run, and the warnings, are DeepSpeed's reading of them. Each is also read
// without flags, as `zerotune estimate --deepspeed` reads it, with the same warnings or error.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/op_test_util.h"
#include "tests/train/deepspeed/deepspeed_test_arguments.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

const std::filesystem::path kConfigs = std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/ds_configs";

struct Launch {
  int world_size = 2;
  std::vector<std::string> flags = {"--bf16"};
};

TrainingArguments arguments(const Launch& launch) { return deepspeed_test_arguments(launch.flags); }

DeepSpeedConfig load_for_training(const std::string& file, const Launch& launch) {
  const TrainingArguments args = arguments(launch);
  return load_deepspeed_config(read_deepspeed_input((kConfigs / file).string()),
                               deepspeed_auto_context(args, launch.world_size, 64, 100, 10));
}

DeepSpeedConfig load_without_flags(const std::string& file) {
  const std::string path = (kConfigs / file).string();
  return parse_deepspeed_without_flags(read_deepspeed_input(path).json, 64, path);
}

DeepSpeedConfig load(const std::string& file, const Launch& launch = {}) {
  const DeepSpeedConfig config = load_for_training(file, launch);
  EXPECT_EQ(load_without_flags(file).warnings, config.warnings) << file << ": the estimate's reading differs";
  return config;
}

std::string error_loading(const std::string& file, const Launch& launch = {}) {
  const std::string error = testing::error_of([&] { load_for_training(file, launch); });
  EXPECT_EQ(testing::error_of([&] { load_without_flags(file); }), error) << file << ": the estimate's reading differs";
  return error;
}

void expect_batch(const DeepSpeedConfig& config, std::int64_t micro, std::int64_t accumulation, std::int64_t total) {
  EXPECT_EQ(config.micro_batch_per_gpu, micro);
  EXPECT_EQ(config.gradient_accumulation_steps, accumulation);
  EXPECT_EQ(config.train_batch_size, total);
}

// Parameter and optimizer offload to host memory under stage 3, read without a warning about
// either.
void expect_full_offload(const DeepSpeedConfig& config, const std::string& file) {
  EXPECT_EQ(config.zero.stage, 3) << file;
  EXPECT_TRUE(config.zero.offload_param) << file;
  EXPECT_TRUE(config.zero.offload_optimizer) << file;
  for (const std::string& warning : config.warnings)
    EXPECT_EQ(warning.find("zero_optimization.offload"), std::string::npos) << warning;
}

// expect_full_offload, the parameters' shards page-locked, and no warning at all.
void expect_pinned_full_offload_without_warnings(const DeepSpeedConfig& config, const std::string& file) {
  expect_full_offload(config, file);
  EXPECT_TRUE(config.zero.offload_param_pin_memory) << file;
  EXPECT_TRUE(config.warnings.empty()) << file << "\n" << all_warnings(config);
}

TEST(RealConfigs, LlamaFactory) {
  for (const char* file : {"llama_factory/ds_z0_config.json", "llama_factory/ds_z2_config.json",
                           "llama_factory/ds_z2_offload_config.json"}) {
    const DeepSpeedConfig config = load(file);
    expect_batch(config, 4, 2, 16);
    EXPECT_TRUE(config.bf16) << file;
    EXPECT_FALSE(config.fp16) << file;
    EXPECT_EQ(config.gradient_clipping, 1.0) << file;
    EXPECT_EQ(config.zero.reduce_bucket_size, 500'000'000) << file;
    EXPECT_FALSE(config.zero.overlap_comm) << file;
    EXPECT_TRUE(config.warnings.empty()) << file << "\n" << all_warnings(config);
  }
  EXPECT_EQ(load("llama_factory/ds_z0_config.json").zero.stage, 0);
  EXPECT_EQ(load("llama_factory/ds_z2_config.json").zero.stage, 2);
  const ZeroConfig offload = load("llama_factory/ds_z2_offload_config.json").zero;
  EXPECT_TRUE(offload.offload_optimizer);
  EXPECT_TRUE(offload.offload_pin_memory);

  const DeepSpeedConfig z3 = load("llama_factory/ds_z3_config.json");
  EXPECT_EQ(z3.zero.stage, 3);
  EXPECT_EQ(z3.zero.reduce_bucket_size, 64 * 64);
  EXPECT_EQ(z3.zero.stage3_prefetch_bucket_size, 3686);
  EXPECT_EQ(z3.zero.stage3_param_persistence_threshold, 640);
  EXPECT_EQ(z3.zero.stage3_max_live_parameters, 1'000'000'000);
  EXPECT_EQ(z3.zero.sub_group_size, 1'000'000'000);
  EXPECT_TRUE(z3.zero.stage3_gather_16bit_weights_on_model_save);
  EXPECT_FALSE(z3.zero.overlap_comm);
  EXPECT_TRUE(z3.warnings.empty()) << all_warnings(z3);
  const DeepSpeedConfig z3_offload = load("llama_factory/ds_z3_offload_config.json");
  expect_pinned_full_offload_without_warnings(z3_offload, "ds_z3_offload_config.json");
}

// Its own script, not HF's, fills these "auto"s; zerotune fills them as HF does. The offload
// devices are "auto" too, which DeepSpeed drops to none.
TEST(RealConfigs, ChatGlmFinetuning) {
  const Launch launch{4, {"--fp16"}};
  for (const char* file :
       {"chatglm_finetuning/ds_zero2_no_offload.json", "chatglm_finetuning/ds_zero3_no_offload.json"}) {
    const DeepSpeedConfig config = load(file, launch);
    expect_batch(config, 4, 2, 32);
    EXPECT_TRUE(config.fp16) << file;
    EXPECT_EQ(config.loss_scaler.loss_scale_window, 100) << file;
    EXPECT_FALSE(config.zero.offload_optimizer) << file;
    ASSERT_TRUE(config.optimizer && config.scheduler) << file;
    EXPECT_EQ(config.optimizer->lr, 2e-5) << file;
    EXPECT_EQ(config.scheduler->kind, ScheduleKind::kWarmupDecayLR) << file;
    EXPECT_EQ(config.scheduler->peak_lr, 2e-5) << file;
    EXPECT_EQ(config.scheduler->warmup_min_lr, 0.0) << file;
    EXPECT_EQ(config.scheduler->warmup_steps, 10) << file;
    EXPECT_EQ(config.scheduler->total_steps, 100) << file;
    EXPECT_TRUE(config.scheduler->warmup_log) << file;  // "cosine" is not a DeepSpeed warmup: log
    ASSERT_EQ(config.warnings.size(), 1u) << file << "\n" << all_warnings(config);
    testing::expect_mentions(config.warnings[0], {"warmup_type 'cosine'"});
  }
  EXPECT_EQ(load("chatglm_finetuning/ds_zero2_no_offload.json", launch).zero.stage, 2);
  const ZeroConfig z3 = load("chatglm_finetuning/ds_zero3_no_offload.json", launch).zero;
  EXPECT_EQ(z3.stage, 3);
  EXPECT_TRUE(z3.stage3_gather_16bit_weights_on_model_save);
  const DeepSpeedConfig z3_offload = load("chatglm_finetuning/ds_zero3_offload.json", launch);
  expect_full_offload(z3_offload, "ds_zero3_offload.json");
  EXPECT_TRUE(z3_offload.fp16);
}

TEST(RealConfigs, FastChat) {
  const DeepSpeedConfig s2 = load("fastchat/deepspeed_config_s2.json");
  expect_batch(s2, 4, 2, 16);
  EXPECT_EQ(s2.zero.stage, 2);
  EXPECT_TRUE(s2.zero.offload_optimizer);
  EXPECT_TRUE(s2.zero.overlap_comm);
  EXPECT_FALSE(s2.fp16);
  EXPECT_TRUE(s2.warnings.empty()) << all_warnings(s2);
  const DeepSpeedConfig s3 = load("fastchat/deepspeed_config_s3.json");
  expect_pinned_full_offload_without_warnings(s3, "deepspeed_config_s3.json");
}

TEST(RealConfigs, Transformers) {
  const DeepSpeedConfig z2 = load("transformers/ds_config_zero2.json");
  expect_batch(z2, 4, 2, 16);
  EXPECT_EQ(z2.zero.stage, 2);
  EXPECT_EQ(z2.zero.reduce_bucket_size, 200'000'000);
  EXPECT_TRUE(z2.zero.offload_optimizer);
  ASSERT_TRUE(z2.optimizer && z2.scheduler);
  EXPECT_EQ(z2.optimizer->lr, 2e-5);
  EXPECT_EQ(z2.scheduler->kind, ScheduleKind::kWarmupLR);
  EXPECT_EQ(z2.scheduler->peak_lr, 2e-5);
  EXPECT_FALSE(z2.scheduler->peak_lr_from_optimizer);
  EXPECT_EQ(z2.scheduler->warmup_steps, 10);
  EXPECT_EQ(z2.steps_per_print, 2000);
  EXPECT_TRUE(z2.warnings.empty()) << all_warnings(z2);
  expect_full_offload(load("transformers/ds_config_zero3.json"), "ds_config_zero3.json");
}

// Qwen's finetune/ds_config_zero2.json: an offload block whose device is "none" offloads nothing.
TEST(RealConfigs, Qwen) {
  const DeepSpeedConfig z2 = load("qwen/ds_config_zero2.json");
  expect_batch(z2, 4, 2, 16);
  EXPECT_EQ(z2.zero.stage, 2);
  EXPECT_FALSE(z2.zero.offload_optimizer);
  EXPECT_TRUE(z2.zero.overlap_comm);
  EXPECT_EQ(z2.zero.reduce_bucket_size, 200'000'000);
  EXPECT_TRUE(z2.bf16);
  EXPECT_EQ(z2.steps_per_print, 100);
  ASSERT_TRUE(z2.scheduler);
  EXPECT_EQ(z2.scheduler->kind, ScheduleKind::kWarmupLR);
  EXPECT_EQ(z2.scheduler->warmup_steps, 10);
  EXPECT_TRUE(z2.warnings.empty()) << all_warnings(z2);
}

// LLaVA's scripts/zero3_offload.json sets bf16 true (its scripts pass --bf16 True, which HF then
// requires) and steps_per_print as 1e5, a JSON float DeepSpeed takes as the count.
TEST(RealConfigs, Llava) {
  const DeepSpeedConfig z3 = load("llava/zero3_offload.json");
  expect_batch(z3, 4, 2, 16);
  expect_pinned_full_offload_without_warnings(z3, "zero3_offload.json");
  EXPECT_TRUE(z3.bf16);
  EXPECT_EQ(z3.steps_per_print, 100000);
  testing::expect_mentions(testing::error_of([] {
                             load_for_training("llava/zero3_offload.json", {2, {}});
                           }),
                           {"ds bf16.enabled=true vs hf bf16=false"});
}

// ChatGLM3's finetune_demo/configs/ds_zero_3.json names the micro-batch alone: DeepSpeed's rules
// then give one accumulation step, the flag's when it is 1 (`zerotune train` refuses another, as HF
// through accelerate does).
TEST(RealConfigs, ChatGlm3) {
  const DeepSpeedConfig z3 = load("chatglm3/ds_zero_3.json", {2, {"--bf16", "--gradient_accumulation_steps", "1"}});
  expect_batch(z3, 4, 1, 8);
  expect_full_offload(z3, "ds_zero_3.json");
  EXPECT_TRUE(z3.bf16);
  EXPECT_TRUE(z3.zero.stage3_gather_16bit_weights_on_model_save);
}

// axolotl writes the short names of the stage-3 fields, and 0 for their sizes.
TEST(RealConfigs, Axolotl) {
  const DeepSpeedConfig z1 = load("axolotl/zero1.json");
  EXPECT_EQ(z1.zero.stage, 1);
  EXPECT_TRUE(z1.zero.overlap_comm);
  EXPECT_EQ(z1.loss_scaler.initial_scale_power, 32);
  EXPECT_TRUE(z1.warnings.empty()) << all_warnings(z1);
  EXPECT_TRUE(load("axolotl/zero2.json").zero.offload_optimizer);
  for (const char* file : {"axolotl/zero3.json", "axolotl/zero3_bf16.json"}) {
    const DeepSpeedConfig z3 = load(file);
    EXPECT_TRUE(z3.bf16) << file;
    EXPECT_EQ(z3.zero.stage, 3) << file;
    EXPECT_EQ(z3.zero.sub_group_size, 0) << file;
    EXPECT_EQ(z3.zero.stage3_max_live_parameters, 0) << file;
    EXPECT_EQ(z3.zero.stage3_max_reuse_distance, 0) << file;
    EXPECT_EQ(z3.zero.stage3_prefetch_bucket_size, 3686) << file;
    EXPECT_TRUE(z3.zero.stage3_gather_16bit_weights_on_model_save) << file;
    EXPECT_TRUE(z3.warnings.empty()) << file << "\n" << all_warnings(z3);
  }
  const DeepSpeedConfig params = load("axolotl/zero3_bf16_cpuoffload_params.json");
  EXPECT_TRUE(params.zero.offload_param);
  EXPECT_TRUE(params.warnings.empty()) << all_warnings(params);
}

// Configs written for DeepSpeed alone, loaded with the flags that match their numbers.
TEST(RealConfigs, DeepSpeedExamples) {
  const DeepSpeedConfig imagenet =
      load("deepspeed_examples/imagenet_ds_fp16_z1_config.json",
           {8,
            {"--per_device_train_batch_size", "32", "--gradient_accumulation_steps", "1", "--learning_rate", "1e-3",
             "--adam_beta1", "0.8", "--weight_decay", "3e-7", "--max_grad_norm", "0", "--fp16"}});
  expect_batch(imagenet, 32, 1, 256);
  EXPECT_EQ(imagenet.zero.stage, 1);
  EXPECT_TRUE(imagenet.optimizer->decoupled_weight_decay);  // DeepSpeed's Adam is AdamW by default
  EXPECT_EQ(imagenet.optimizer->beta1, 0.8);
  for (const char* key :
       {"fp16.auto_cast = true", "cuda_visible_devices is not a DeepSpeed setting", "sets none of initial_scale_power"})
    EXPECT_NE(all_warnings(imagenet).find(key), std::string::npos) << key << "\n" << all_warnings(imagenet);
  EXPECT_EQ(imagenet.warnings.size(), 3u) << all_warnings(imagenet);

  // AutoTP training splits each layer over the GPUs: refused, with how to train without it.
  testing::expect_mentions(error_loading("deepspeed_examples/tensor_parallel_hf_ds_config.json"),
                           {"tensor_parallel.autotp_size = 4 asks for DeepSpeed's AutoTP training",
                            "remove the tensor_parallel block (or set autotp_size to 0)"});

  const DeepSpeedConfig bf16 = load("deepspeed_examples/bf16_master_weight_bf16_full.json",
                                    {2,
                                     {"--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "1",
                                      "--learning_rate", "1e-4", "--weight_decay", "0.01", "--bf16"}});
  EXPECT_EQ(bf16.zero.stage, 3);
  EXPECT_EQ(bf16.zero.reduce_bucket_size, 50'000'000);
  EXPECT_EQ(bf16.zero.stage3_param_persistence_threshold, 0);
  EXPECT_EQ(bf16.warnings.size(), 3u) << all_warnings(bf16);
  for (const char* key : {"bf16_master_weights_and_grads", "bf16_optimizer_states", "torch_autocast"})
    EXPECT_NE(all_warnings(bf16).find(key), std::string::npos) << key;

  testing::expect_mentions(error_loading("deepspeed_examples/bing_bert_squad_bsz24_config.json",
                                         {8,
                                          {"--per_device_train_batch_size", "3", "--gradient_accumulation_steps", "1",
                                           "--learning_rate", "3e-5", "--fp16"}}),
                           {"optimizer.params.bias_correction false is not supported"});

  const DeepSpeedConfig pipe = load(
      "deepspeed_examples/pipeline_parallelism_ds_config.json",
      {8, {"--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "4", "--learning_rate", "1e-3"}});
  expect_batch(pipe, 8, 4, 256);
  EXPECT_TRUE(pipe.optimizer->decoupled_weight_decay);
  EXPECT_TRUE(pipe.warnings.empty()) << all_warnings(pipe);
}

// Comment keys and keys DeepSpeed does not read, as LLaMA-Factory and axolotl ship them.
TEST(RealConfigs, CommentsAndKeysDeepSpeedDoesNotRead) {
  // LLaMA-Factory's AutoTP example: its "_comment" passes; its AutoTP is what is refused.
  const std::string autotp = "llama_factory/ds_z2_autotp_config.json";
  testing::expect_mentions(error_loading(autotp), {"tensor_parallel.autotp_size = 2 asks for DeepSpeed's AutoTP "
                                                   "training (each layer split over 2 GPUs)"});
  nlohmann::json without_tp = read_deepspeed_input((kConfigs / autotp).string()).json;
  ASSERT_TRUE(without_tp.contains("_comment"));
  without_tp.erase("tensor_parallel");
  const TrainingArguments args = arguments({});
  const DeepSpeedConfig z2 =
      load_deepspeed_config(read_deepspeed_input(without_tp.dump()), deepspeed_auto_context(args, 2, 64, 100, 10));
  EXPECT_EQ(z2.zero.stage, 2);
  EXPECT_TRUE(z2.warnings.empty()) << all_warnings(z2);

  // comms_config and monitor_config are names of DeepSpeed's Python attributes, not keys it
  // reads (its monitors are top-level tensorboard, wandb, csv_monitor, comet): a note each.
  const DeepSpeedConfig fp8 = load("llama_factory/ds_z3_fp8_config.json");
  EXPECT_EQ(fp8.zero.stage, 3);
  EXPECT_TRUE(fp8.zero.offload_optimizer);
  EXPECT_FALSE(fp8.zero.offload_pin_memory);
  ASSERT_EQ(fp8.warnings.size(), 2u) << all_warnings(fp8);
  testing::expect_mentions(all_warnings(fp8), {"comms_config (did you mean comms_logger?) is not a DeepSpeed setting",
                                               "monitor_config is not a DeepSpeed setting: DeepSpeed ignores it"});

  // axolotl's torch.compile block: "backend" is a field of DeepSpeed 0.13-0.14.3's torch.compile
  // settings; "disable" was never one. Compiling changes nothing here.
  const DeepSpeedConfig compile = load("axolotl/zero1_torch_compile.json");
  EXPECT_EQ(compile.zero.stage, 1);
  ASSERT_EQ(compile.warnings.size(), 1u) << all_warnings(compile);
  testing::expect_mentions(compile.warnings[0],
                           {"compile.disable is not read by DeepSpeed's compile section; ignored"});
}

// DeepSpeedExamples' configs for features zerotune does not have: each warned about by name,
// or refused where it would train otherwise.
TEST(RealConfigs, DeepSpeedExamplesFeatures) {
  const DeepSpeedConfig tune = load("deepspeed_examples/autotuning_hf_ds_config_tune.json");
  EXPECT_EQ(tune.micro_batch_per_gpu, 4);
  ASSERT_EQ(tune.warnings.size(), 1u) << all_warnings(tune);
  testing::expect_mentions(tune.warnings[0], {"autotuning.enabled = true (DeepSpeed's autotuner) has no effect"});

  const Launch small{2,
                     {"--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "1", "--learning_rate",
                      "1e-4", "--adam_beta1", "0.8", "--weight_decay", "3e-7"}};
  const DeepSpeedConfig ltd = load("deepspeed_examples/data_efficiency_gpt_base_random_ltd.json", small);
  expect_batch(ltd, 2, 1, 4);
  EXPECT_EQ(ltd.warnings.size(), 2u) << all_warnings(ltd);
  testing::expect_mentions(all_warnings(ltd), {"data_efficiency.enabled = true", "prescale_gradients = true"});

  Launch quantized{2,
                   {"--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "1", "--learning_rate",
                    "1e-3", "--adam_beta1", "0.8", "--weight_decay", "3e-7", "--fp16"}};
  const DeepSpeedConfig w8a8 = load("deepspeed_examples/compression_gpt2_W8A8_Qgroup64_fp16.json", quantized);
  EXPECT_TRUE(w8a8.fp16);
  EXPECT_EQ(w8a8.warnings.size(), 3u) << all_warnings(w8a8);
  testing::expect_mentions(all_warnings(w8a8), {"compression_training (DeepSpeed's compression",
                                                "prescale_gradients = true", "sets none of initial_scale_power"});

  // AutoSP: sequences split over 2 GPUs, which the batch sizes were written for.
  testing::expect_mentions(
      error_loading("deepspeed_examples/autosp_config.json",
                    {1, {"--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "1", "--bf16"}}),
      {"sequence_parallel_size = 2 asks for DeepSpeed's Ulysses sequence parallelism"});
}

}  // namespace
}  // namespace zt::train
