// Every field of HF TrainingArguments (transformers 4.40 to 5.x) is accepted: honoured, or
// without effect with one warning per job, or refused with the reason; old names still work.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/rank.h"
#include "tests/common/op_test_util.h"
#include "tests/common/training_arguments_test_util.h"
#include "train/args/training_arguments.h"

namespace zt::train {
namespace {

using nlohmann::json;

std::vector<std::string> with(const std::vector<std::string>& extra) { return testing::minimal_flags(extra); }

TrainingArguments parse(std::vector<std::string> extra) { return parse_training_arguments(with(std::move(extra))); }

std::string error_for(std::vector<std::string> extra) {
  return testing::error_of([&] { parse(std::move(extra)); });
}

using testing::joined;

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// transformers' training_args.py from 4.40 to 5.x (renamed and removed fields included), and
// Seq2SeqTrainingArguments' own, as written in those sources.
const char* const kTransformersFields[] = {"output_dir",
                                           "overwrite_output_dir",
                                           "do_train",
                                           "do_eval",
                                           "do_predict",
                                           "eval_strategy",
                                           "evaluation_strategy",
                                           "prediction_loss_only",
                                           "per_device_train_batch_size",
                                           "per_device_eval_batch_size",
                                           "per_gpu_train_batch_size",
                                           "per_gpu_eval_batch_size",
                                           "gradient_accumulation_steps",
                                           "eval_accumulation_steps",
                                           "eval_delay",
                                           "torch_empty_cache_steps",
                                           "learning_rate",
                                           "weight_decay",
                                           "adam_beta1",
                                           "adam_beta2",
                                           "adam_epsilon",
                                           "max_grad_norm",
                                           "num_train_epochs",
                                           "max_steps",
                                           "lr_scheduler_type",
                                           "lr_scheduler_kwargs",
                                           "warmup_ratio",
                                           "warmup_steps",
                                           "log_level",
                                           "log_level_replica",
                                           "log_on_each_node",
                                           "logging_dir",
                                           "logging_strategy",
                                           "logging_first_step",
                                           "logging_steps",
                                           "logging_nan_inf_filter",
                                           "save_strategy",
                                           "save_steps",
                                           "save_total_limit",
                                           "save_safetensors",
                                           "save_on_each_node",
                                           "save_only_model",
                                           "restore_callback_states_from_checkpoint",
                                           "no_cuda",
                                           "use_cpu",
                                           "use_mps_device",
                                           "seed",
                                           "data_seed",
                                           "jit_mode_eval",
                                           "use_ipex",
                                           "bf16",
                                           "fp16",
                                           "fp16_opt_level",
                                           "half_precision_backend",
                                           "bf16_full_eval",
                                           "fp16_full_eval",
                                           "tf32",
                                           "local_rank",
                                           "ddp_backend",
                                           "tpu_num_cores",
                                           "tpu_metrics_debug",
                                           "debug",
                                           "dataloader_drop_last",
                                           "eval_steps",
                                           "dataloader_num_workers",
                                           "dataloader_prefetch_factor",
                                           "past_index",
                                           "run_name",
                                           "disable_tqdm",
                                           "remove_unused_columns",
                                           "label_names",
                                           "load_best_model_at_end",
                                           "metric_for_best_model",
                                           "greater_is_better",
                                           "ignore_data_skip",
                                           "fsdp",
                                           "fsdp_min_num_params",
                                           "fsdp_config",
                                           "tp_size",
                                           "fsdp_transformer_layer_cls_to_wrap",
                                           "accelerator_config",
                                           "parallelism_config",
                                           "deepspeed",
                                           "label_smoothing_factor",
                                           "optim",
                                           "optim_args",
                                           "adafactor",
                                           "group_by_length",
                                           "train_sampling_strategy",
                                           "length_column_name",
                                           "report_to",
                                           "project",
                                           "trackio_space_id",
                                           "ddp_find_unused_parameters",
                                           "ddp_bucket_cap_mb",
                                           "ddp_broadcast_buffers",
                                           "dataloader_pin_memory",
                                           "dataloader_persistent_workers",
                                           "skip_memory_metrics",
                                           "use_legacy_prediction_loop",
                                           "push_to_hub",
                                           "resume_from_checkpoint",
                                           "hub_model_id",
                                           "hub_strategy",
                                           "hub_token",
                                           "hub_private_repo",
                                           "hub_always_push",
                                           "hub_revision",
                                           "gradient_checkpointing",
                                           "gradient_checkpointing_kwargs",
                                           "include_inputs_for_metrics",
                                           "include_for_metrics",
                                           "eval_do_concat_batches",
                                           "fp16_backend",
                                           "push_to_hub_model_id",
                                           "push_to_hub_organization",
                                           "push_to_hub_token",
                                           "mp_parameters",
                                           "auto_find_batch_size",
                                           "full_determinism",
                                           "torchdynamo",
                                           "ray_scope",
                                           "ddp_timeout",
                                           "torch_compile",
                                           "torch_compile_backend",
                                           "torch_compile_mode",
                                           "dispatch_batches",
                                           "split_batches",
                                           "include_tokens_per_second",
                                           "include_num_input_tokens_seen",
                                           "neftune_noise_alpha",
                                           "optim_target_modules",
                                           "batch_eval_metrics",
                                           "eval_on_start",
                                           "use_liger_kernel",
                                           "liger_kernel_config",
                                           "eval_use_gather_object",
                                           "average_tokens_across_devices",
                                           "use_cache",
                                           "enable_jit_checkpoint",
                                           "sortish_sampler",
                                           "predict_with_generate",
                                           "generation_max_length",
                                           "generation_num_beams",
                                           "generation_config"};

TEST(TransformersFields, EveryFieldIsKnown) {
  for (const char* field : kTransformersFields) {
    // null keeps a field's default, as HfArgumentParser.parse_dict does: only the name is tested.
    const std::string text =
        std::string(R"({"model_name_or_path": "m", "output_dir": "o", "train_file": "t", ")") + field + R"(": null})";
    const std::string msg =
        testing::error_of([&] { parse_training_arguments_text(text, ArgumentsFileFormat::kJson, "args.json"); });
    EXPECT_EQ(msg.find("unknown option"), std::string::npos) << field << ": " << msg;
  }
}

TEST(TransformersFields, WithoutEffectTheyWarnOnceAndOnlyOffTheirDefault) {
  TrainingArguments args = parse({"--logging_dir", "runs/x", "--push_to_hub", "--remove_unused_columns", "false",
                                  "--ddp_find_unused_parameters", "false", "--dataloader_pin_memory", "false",
                                  "--logging_dir", "runs/y", "--save_safetensors", "false"});
  ASSERT_EQ(args.warnings.size(), 6u) << joined(args.warnings);
  const std::string all = joined(args.warnings);
  for (const char* part :
       {"--logging_dir runs/y has no effect without --report_to tensorboard", "--push_to_hub has no effect",
        "--remove_unused_columns has no effect", "--ddp_find_unused_parameters has no effect",
        "--save_safetensors has no effect in zerotune: zerotune writes safetensors only",
        "--dataloader_pin_memory has no effect"})
    EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
  EXPECT_EQ(count_of(all, "--logging_dir"), 1u);
  // Their HF defaults say nothing.
  args = parse({"--push_to_hub",
                "false",
                "--remove_unused_columns",
                "true",
                "--dataloader_pin_memory",
                "true",
                "--save_safetensors",
                "true",
                "--report_to",
                "none",
                "--log_level",
                "passive",
                "--torch_compile",
                "false",
                "--label_smoothing_factor",
                "0",
                "--tp_size",
                "0",
                "--half_precision_backend",
                "auto"});
  EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);
}

TEST(TransformersFields, WarningsArePrintedByRankZeroOnly) {
  ::testing::internal::CaptureStderr();
  parse({"--logging_dir", "runs/x", "--logging_dir", "runs/y"});
  std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(printed, "--logging_dir runs/y has no effect"), 1u) << printed;
  set_thread_rank({.rank = 1, .world_size = 2, .local_rank = 1, .distributed = true, .launcher = "torchrun"});
  ::testing::internal::CaptureStderr();
  parse({"--logging_dir", "runs/x"});
  printed = ::testing::internal::GetCapturedStderr();
  set_thread_rank({});
  EXPECT_EQ(printed.find("has no effect"), std::string::npos) << printed;
}

TEST(TransformersFields, RefusedWhereIgnoringWouldChangeTheResult) {
  const std::string msg = error_for({"--label_smoothing_factor", "0.1", "--neftune_noise_alpha", "5",
                                     "--load_best_model_at_end", "--dataloader_drop_last", "true", "--group_by_length",
                                     "--split_batches", "true", "--tp_size", "2", "--ignore_data_skip", "--adafactor"});
  for (const char* part : {"--label_smoothing_factor 0.1 is not supported: zerotune's loss is plain cross-entropy",
                           "--neftune_noise_alpha 5 is not supported", "--load_best_model_at_end true is not supported",
                           "--dataloader_drop_last true is not supported", "--group_by_length true is not supported",
                           "--split_batches true is not supported", "--tp_size 2 is not supported",
                           "--ignore_data_skip true", "--adafactor true is not supported"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << "\n" << msg;
  EXPECT_NE(msg.find("9 problems"), std::string::npos) << msg;
}

TEST(TransformersFields, OptimAcceptsAdamWNamesAndRefusesTheOthersByName) {
  for (const char* name : {"adamw_torch", "adamw_torch_fused", "adamw_hf", "adamw_apex_fused", "adamw_torch_xla"})
    EXPECT_EQ(parse({"--optim", name}).optim, name);
  const std::vector<std::pair<const char*, const char*>> refused = {
      {"adamw_bnb_8bit", "8 bits"},
      {"paged_adamw_32bit", "pages the optimizer state"},
      {"adafactor", "Adafactor factors"},
      {"sgd", "SGD keeps no second moment"},
      {"lion_32bit", "Lion"},
      {"galore_adamw", "GaLore"},
      {"adamw_torch_4bit", "4 bits"},
      {"schedule_free_adamw", "schedule-free"},
      {"no_such_optimizer", "not an optimizer name HF knows"}};
  for (const auto& [name, reason] : refused) {
    const std::string msg = error_for({"--optim", name});
    EXPECT_NE(msg.find(std::string("--optim ") + name), std::string::npos) << msg;
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
    EXPECT_NE(msg.find("AdamW with float32 state, which --optim adamw_torch"), std::string::npos) << msg;
  }
}

TEST(TransformersFields, HonouredRunFlags) {
  TrainingArguments args =
      parse({"--tf32", "--logging_strategy", "epoch", "--logging_first_step", "--disable_tqdm", "true", "--data_seed",
             "7", "--do_train", "--run_name", "first-try", "--full_determinism"});
  EXPECT_EQ(args.tf32, std::optional<bool>(true));
  EXPECT_TRUE(args.full_determinism);
  EXPECT_TRUE(args.warnings.empty());  // honoured, not a setting without effect
  EXPECT_FALSE(parse({}).full_determinism);
  EXPECT_EQ(args.logging_strategy, IntervalStrategy::kEpoch);
  EXPECT_TRUE(args.logging_first_step);
  EXPECT_EQ(args.disable_tqdm, std::optional<bool>(true));
  EXPECT_EQ(args.data_order_seed(), 7u);
  EXPECT_EQ(args.run_name, "first-try");
  EXPECT_FALSE(parse({}).tf32.has_value());  // HF's None: zerotune's default, fp32 products
  EXPECT_EQ(parse({}).data_order_seed(), 42u);
  EXPECT_EQ(parse({}).run_name, "out");  // output_dir names an unnamed run
  EXPECT_FALSE(parse({"--tf32", "false"}).tf32.value());
}

TEST(TransformersFields, DoTrainFalseTrainsAndEvaluationWithoutDataIsRefused) {
  // HF's default, in every TrainingArguments dump; Trainer.train() does not read it.
  EXPECT_TRUE(parse({"--do_train", "false"}).warnings.empty());
  std::string msg = error_for({"--do_eval", "--eval_on_start"});
  EXPECT_NE(msg.find("--do_eval needs evaluation data: --validation_file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--eval_on_start needs evaluation data"), std::string::npos) << msg;
  TrainingArguments args = parse({"--do_eval", "--validation_file", "v.json", "--eval_delay", "3"});
  EXPECT_TRUE(args.do_eval);
  EXPECT_EQ(args.eval_delay, 3.0);
  EXPECT_EQ(args.eval_strategy, IntervalStrategy::kNo);
}

TEST(TransformersFields, StepsAsSharesAndWholeNumbers) {
  TrainingArguments args = parse({"--logging_steps", "0.05", "--save_steps", "0.5", "--warmup_steps", "0.1"});
  EXPECT_EQ(args.logging_steps, 0.05);
  EXPECT_EQ(args.warmup_steps_for(100), 10);
  std::string msg = error_for({"--logging_steps", "2.5", "--warmup_steps", "1.5", "--save_steps", "0"});
  EXPECT_NE(msg.find("--logging_steps must be a whole number when >= 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--warmup_steps must be a whole number"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--save_steps must be > 0"), std::string::npos) << msg;
  // logging_steps 0 is fine when nothing logs by steps, as in HF.
  EXPECT_EQ(parse({"--logging_strategy", "no", "--logging_steps", "0"}).logging_strategy, IntervalStrategy::kNo);
}

TEST(TransformersFields, OldNamesAndTheScriptsNamesStillWork) {
  TrainingArguments args = parse({"--per_gpu_train_batch_size", "3", "--per_gpu_eval_batch_size", "5",
                                  "--evaluation_strategy", "no", "--no_cuda", "--model_max_length", "256"});
  EXPECT_EQ(args.per_device_train_batch_size, 3);
  EXPECT_EQ(args.per_device_eval_batch_size, 5);
  EXPECT_TRUE(args.use_cpu);
  EXPECT_EQ(args.device, "cpu");
  EXPECT_EQ(args.max_length, 256);
  EXPECT_EQ(parse({"--use_cpu"}).device, "cpu");
  args = parse_training_arguments(
      {"--model_name_or_path", "m", "--output_dir", "o", "--data_path", "a.json", "--eval_data_path", "b.json"});
  EXPECT_EQ(args.train_file, "a.json");
  EXPECT_EQ(args.validation_file, "b.json");
  args = parse({"--fp16_backend", "apex"});
  ASSERT_EQ(args.warnings.size(), 1u);
  EXPECT_NE(args.warnings[0].find("--half_precision_backend has no effect"), std::string::npos) << args.warnings[0];
  std::string msg = error_for({"--no_cuda", "--device", "cuda:1"});
  EXPECT_NE(msg.find("--use_cpu (or --no_cuda) asks for the CPU but --device is cuda:1"), std::string::npos) << msg;
}

TEST(TransformersFields, ListAndDictFieldsTakeTheirHfForms) {
  TrainingArguments args =
      parse({"--report_to", "wandb", "tensorboard", "--bf16", "--label_names", "labels",
             "--gradient_checkpointing_kwargs", R"({"use_reentrant": false})", "--fsdp", "full_shard auto_wrap"});
  EXPECT_TRUE(args.bf16);
  EXPECT_EQ(args.report_to, "wandb,tensorboard");
  EXPECT_EQ(args.other_arguments["gradient_checkpointing_kwargs"], json({{"use_reentrant", false}}));
  const std::string all = joined(args.warnings);
  for (const char* part : {"--report_to wandb has no effect in zerotune: it does not report to Weights & Biases",
                           "--gradient_checkpointing_kwargs has no effect", "use_reentrant",
                           "--fsdp has no effect in zerotune: zerotune shards with ZeRO through --deepspeed",
                           "--label_names has no effect"})
    EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
  EXPECT_TRUE(parse({"--report_to", "none"}).warnings.empty());
  EXPECT_NE(
      error_for({"--lr_scheduler_type", "cosine_with_min_lr", "--lr_scheduler_kwargs", R"({"min_lr_rate": "low"})"})
          .find("--lr_scheduler_kwargs for cosine_with_min_lr: min_lr_rate must be a number"),
      std::string::npos);
  const std::string msg = error_for({"--gradient_checkpointing_kwargs", "{use_reentrant: false}"});
  EXPECT_NE(msg.find("--gradient_checkpointing_kwargs looks like a JSON object but is not valid JSON"),
            std::string::npos)
      << msg;
}

TEST(TransformersFields, TrainingArgsJsonRecordsThemWithSecretsMasked) {
  TrainingArguments args = parse({"--hub_token", "hf_secret123", "--push_to_hub", "--run_name", "r1", "--tf32"});
  const json recorded = json::parse(training_arguments_json(args));
  EXPECT_EQ(recorded["hub_token"], "<HUB_TOKEN>");
  EXPECT_EQ(recorded["push_to_hub"], true);
  EXPECT_EQ(recorded["run_name"], "r1");
  EXPECT_EQ(recorded["tf32"], true);
  EXPECT_EQ(recorded["logging_steps"], 500);  // a whole number, as HF writes its default
  EXPECT_EQ(recorded["optim"], "adamw_torch");
  EXPECT_EQ(training_arguments_json(args).find("hf_secret123"), std::string::npos);
  EXPECT_EQ(joined(args.warnings).find("hf_secret123"), std::string::npos);
}

TEST(TransformersFields, HelpListsTheHonouredFlagsAndMentionsTheOthers) {
  const std::string help = training_arguments_help();
  for (const char* flag : {"--tf32", "--logging_strategy", "--optim", "--run_name", "--do_eval", "--dataset",
                           "--report_to", "--logging_dir"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  EXPECT_EQ(help.find("--push_to_hub"), std::string::npos);
  EXPECT_NE(help.find("Every other HF TrainingArguments field and LLaMA-Factory option is accepted"),
            std::string::npos);
  EXPECT_NE(help.find("[500]"), std::string::npos) << help;
}

}  // namespace
}  // namespace zt::train
