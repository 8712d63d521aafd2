// Every option of LLaMA-Factory's argument classes has a disposition in zerotune's table
// (train/args/llama_factory_arguments.cpp): honoured as one of its flags, without effect with a
// warning, or refused naming the feature; a GaLore, APOLLO, BAdam, KTransformers or Megatron
// file gets the feature's name and a usage error, not "unknown option".
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/usage_error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/training_arguments_test_util.h"
#include "train/args/argument_table.h"
#include "train/args/other_arguments.h"
#include "train/args/training_arguments.h"

namespace zt::train {
namespace {

using nlohmann::json;

// The init fields of LLaMA-Factory's hparams dataclasses (model_args.py, data_args.py,
// training_args.py, megatron_bridge_args.py, finetuning_args.py, generating_args.py, and
// parser.py's _KTransformersRuntimeArguments) at hiyouga/LLaMA-Factory ff6d4d12, by class; HF's own TrainingArguments
// fields are transformers_fields_test.cpp's. A name LLaMA-Factory adds goes here and into the table.
// clang-format off
const char* const kLlamaFactoryOptions[] = {
    // DataArguments
    "template", "dataset", "eval_dataset", "dataset_dir", "media_dir", "cutoff_len", "train_on_prompt",
    "mask_history", "streaming", "buffer_size", "mix_strategy", "interleave_probs", "overwrite_cache",
    "preprocessing_batch_size", "preprocessing_num_workers", "max_samples", "eval_num_beams",
    "ignore_pad_token_for_loss", "val_size", "eval_on_each_dataset", "packing", "neat_packing", "tool_format",
    "default_system", "enable_thinking", "preserve_thinking", "tokenized_path", "data_shared_file_system",
    // FreezeArguments
    "freeze_trainable_layers", "freeze_trainable_modules", "freeze_extra_modules",
    // LoraArguments
    "additional_target", "lora_alpha", "lora_dropout", "lora_rank", "lora_target", "loraplus_lr_ratio",
    "loraplus_lr_embedding", "use_rslora", "use_dora", "pissa_init", "pissa_iter", "pissa_convert",
    "create_new_adapter",
    // OFTArguments
    "additional_target", "module_dropout", "oft_rank", "oft_block_size", "oft_target", "create_new_adapter",
    // RLHFArguments
    "pref_beta", "pref_ftx", "pref_bco_weight", "pref_loss", "dpo_label_smoothing", "kto_chosen_weight",
    "kto_rejected_weight", "simpo_gamma", "ppo_buffer_size", "ppo_epochs", "ppo_score_norm", "ppo_target",
    "ppo_whiten_rewards", "ref_model", "ref_model_adapters", "ref_model_quantization_bit", "reward_model",
    "reward_model_adapters", "reward_model_quantization_bit", "reward_model_type", "ld_alpha",
    // GaloreArguments
    "use_galore", "galore_target", "galore_rank", "galore_update_interval", "galore_scale", "galore_proj_type",
    "galore_layerwise",
    // ApolloArguments
    "use_apollo", "apollo_target", "apollo_rank", "apollo_update_interval", "apollo_scale", "apollo_proj",
    "apollo_proj_type", "apollo_scale_type", "apollo_layerwise", "apollo_scale_front",
    // BAdamArgument
    "use_badam", "badam_mode", "badam_start_block", "badam_switch_mode", "badam_switch_interval",
    "badam_update_ratio", "badam_mask_mode", "badam_verbose",
    // SwanLabArguments
    "use_swanlab", "swanlab_project", "swanlab_workspace", "swanlab_run_name", "swanlab_mode", "swanlab_api_key",
    "swanlab_logdir", "swanlab_lark_webhook_url", "swanlab_lark_secret",
    // FinetuningArguments
    "pure_bf16", "stage", "finetuning_type", "use_llama_pro", "use_adam_mini", "use_mca", "use_megatron_bridge",
    "use_hyper_parallel", "hyper_parallel_args", "hyper_parallel_cp_size", "use_muon", "use_dft_loss",
    "use_asft_loss", "asft_alpha", "use_eaft_loss", "eaft_alpha", "freeze_vision_tower",
    "freeze_multi_modal_projector", "freeze_language_model", "compute_accuracy", "disable_shuffling",
    "early_stopping_steps", "plot_loss", "include_effective_tokens_per_second",
    // GeneratingArguments
    "do_sample", "temperature", "top_p", "top_k", "num_beams", "max_length", "max_new_tokens", "repetition_penalty",
    "length_penalty", "skip_special_tokens",
    // MegatronBridgeArguments
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "expert_model_parallel_size",
    "context_parallel_size", "virtual_pipeline_model_parallel_size", "sequence_parallel", "recompute_granularity",
    "recompute_method", "recompute_num_layers", "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split", "bias_activation_fusion", "apply_rope_fusion", "masked_softmax_fusion",
    "cross_entropy_loss_fusion", "moe_grouped_gemm", "moe_token_dispatcher_type", "calculate_per_token_loss",
    "use_distributed_optimizer", "overlap_param_gather", "overlap_grad_reduce", "use_packed_sequences",
    "mixed_precision", "megatron_pretrained_checkpoint", "export_hf_on_finish", "extra_config",
    // BaseModelArguments
    "model_name_or_path", "adapter_name_or_path", "adapter_folder", "cache_dir", "use_fast_tokenizer",
    "resize_vocab", "split_special_tokens", "add_tokens", "add_special_tokens", "new_special_tokens_config",
    "init_special_tokens", "model_revision", "low_cpu_mem_usage", "rope_scaling", "flash_attn", "shift_attn",
    "mixture_of_depths", "use_unsloth", "use_unsloth_gc", "enable_liger_kernel", "moe_aux_loss_coef",
    "disable_gradient_checkpointing", "use_reentrant_gc", "upcast_layernorm", "upcast_lmhead_output",
    "train_from_scratch", "infer_backend", "offload_folder", "use_kv_cache", "use_v1_kernels", "infer_dtype",
    "hf_hub_token", "ms_hub_token", "om_hub_token", "print_param_status", "trust_remote_code",
    // QuantizationArguments
    "quantization_method", "quantization_bit", "quantization_type", "double_quantization", "quantization_device_map",
    // ProcessorArguments
    "image_max_pixels", "image_min_pixels", "image_do_pan_and_scan", "crop_to_patches", "video_max_pixels",
    "video_min_pixels", "video_fps", "video_maxlen", "use_audio_in_video", "audio_sampling_rate",
    // ExportArguments
    "export_dir", "export_size", "export_device", "export_quantization_bit", "export_quantization_dataset",
    "export_quantization_nsamples", "export_quantization_maxlen", "export_legacy_format", "export_hub_model_id",
    // VllmArguments
    "vllm_maxlen", "vllm_gpu_util", "vllm_enforce_eager", "vllm_max_lora_rank", "vllm_config",
    // SGLangArguments
    "sglang_maxlen", "sglang_mem_fraction", "sglang_tp_size", "sglang_config", "sglang_lora_backend",
    // KTransformersArguments
    "use_kt", "kt_cpu_activation", "kt_weight_path", "kt_non_expert_weight_path", "kt_expert_checkpoint_path",
    "kt_use_lora_experts", "kt_lora_expert_num", "kt_lora_expert_intermediate_size",
    // parser.py's _KTransformersRuntimeArguments (a training file gives it too)
    "kt_config",
    // RayArguments
    "ray_num_workers", "ray_init_kwargs", "master_addr", "master_port",
    // ProfilerArguments
    "enable_torch_profiler", "profiler_output_dir", "profiler_wait_steps", "profiler_warmup_steps",
    "profiler_active_steps", "profiler_repeat", "profiler_record_shapes", "profiler_profile_memory",
    "profiler_with_stack", "profile_modules",
    // Fp8Arguments
    "fp8", "fp8_backend", "fp8_enable_fsdp_float8_all_gather",
    // TrainingArguments
    "overwrite_output_dir",
};
// clang-format on

// Init fields of earlier releases' classes that ff6d4d12 dropped or renamed, by the releases that
// have them; files written for those releases still give them.
// clang-format off
const char* const kOlderReleaseOptions[] = {
    // 0.9.4's KTransformersArguments (its examples/ktransformers files)
    "kt_optimize_rule", "cpu_infer", "chunk_size", "mode", "kt_maxlen", "kt_use_cuda_graph", "kt_mode",
    "kt_force_think",
    // 0.8.0 and 0.8.1's VllmArguments
    "vllm_dtype",
    // 0.6.3 and 0.7.0's BAdamArgument (badam_switch_interval later)
    "badam_switch_block_every",
    // 0.5 and 0.6's DataArguments and FinetuningArguments
    "sft_packing", "cache_path", "lora_bf16_mode", "ppo_logger", "disable_version_checking",
};
// clang-format on

constexpr const char* kFile = "model_name_or_path: m\noutput_dir: o\nstage: sft\ndataset: a.json\n";

using testing::joined;
using testing::yaml;
using testing::yaml_error;

const OtherArgument* table_entry(std::string_view name) {
  for (const OtherArgument& entry : llama_factory_other_arguments())
    if (name == entry.name) return &entry;
  return nullptr;
}

TEST(LlamaFactoryOptions, EveryOptionHasADispositionAndIsAccepted) {
  for (const char* name : kLlamaFactoryOptions) {
    EXPECT_NE(table_entry(name), nullptr) << name << " is missing from llama_factory_arguments.cpp";
    // null keeps the default, as HfArgumentParser does: only the name is tested.
    const std::string msg = yaml_error(std::string(kFile) + name + ": null\n");
    EXPECT_EQ(msg.find("unknown option"), std::string::npos) << name << ": " << msg;
  }
}

TEST(LlamaFactoryOptions, OptionsOfOlderReleasesAreKnown) {
  for (const char* name : kOlderReleaseOptions) {
    EXPECT_NE(table_entry(name), nullptr) << name << " is missing from llama_factory_arguments.cpp";
    const std::string msg = yaml_error(std::string(kFile) + name + ": null\n");
    EXPECT_EQ(msg.find("unknown option"), std::string::npos) << name << ": " << msg;
  }
}

// 0.5's sft_packing is packing; its cache_path and lora_bf16_mode change the run, so they are refused.
TEST(LlamaFactoryOptions, OptionsOfRelease05AreReadAsThen) {
  EXPECT_TRUE(yaml(std::string(kFile) + "sft_packing: true\n").packing);
  const std::string msg = yaml_error(std::string(kFile) + "cache_path: cache/sft\nlora_bf16_mode: true\n");
  EXPECT_NE(msg.find("--cache_path cache/sft (LLaMA-Factory): pre-tokenised datasets is not supported"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("--lora_bf16_mode true (LLaMA-Factory): LoRA weights in bf16 is not supported by zerotune"),
            std::string::npos)
      << msg;
}

// 0.9.4's examples/ktransformers/train_lora/deepseek2_lora_sft_kt.yaml section: the run is
// refused for use_kt, its settings are part of it, not unknown options (chunk_size is not
// block_size).
TEST(LlamaFactoryOptions, KTransformersOfRelease094IsRefusedByName) {
  const std::string msg =
      yaml_error(std::string(kFile) +
                 "use_kt: true # use KTransformers as LoRA sft backend\n"
                 "kt_optimize_rule: examples/ktransformers/kt_optimize_rules/DeepSeek-V2-Lite-Chat-sft-amx.yaml\n"
                 "cpu_infer: 32\nchunk_size: 8192\n");
  EXPECT_NE(msg.find("--use_kt true (LLaMA-Factory): KTransformers (MoE experts computed on the CPU) is not "
                     "supported by zerotune"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("problems"), std::string::npos) << msg;  // use_kt alone
}

TEST(LlamaFactoryOptions, TheTableIsConsistent) {
  std::set<std::string> flags, seen;
  for (const ArgumentSpec& spec : argument_table()) flags.insert(spec.name);
  for (const OtherArgument& entry : llama_factory_other_arguments()) {
    EXPECT_TRUE(seen.insert(entry.name).second) << entry.name << " is listed twice";
    EXPECT_NE(entry.origin, Origin::kTransformers) << entry.name;
    if (entry.verdict == Verdict::kHonoured) {
      EXPECT_TRUE(flags.count(entry.reason))
          << entry.name << " is honoured as --" << entry.reason << ", which argument_table.cpp does not have";
      EXPECT_EQ(find_other_argument(entry.name), nullptr) << entry.name;
      continue;
    }
    EXPECT_FALSE(flags.count(entry.name)) << entry.name << " is a zerotune flag, so its entry is never read";
    EXPECT_EQ(find_other_argument(entry.name), &entry) << entry.name << " is shadowed by an HF field's entry";
    if (entry.verdict == Verdict::kRefused) {
      EXPECT_NE(entry.feature, nullptr) << "the refusal of " << entry.name << " names no feature";
    }
    if (std::string_view(entry.quiet) != "*") {
      EXPECT_TRUE(json::parse(entry.quiet, nullptr, false).is_array()) << entry.name << ": " << entry.quiet;
    }
  }
}

TEST(LlamaFactoryOptions, HonouredNamesSetZerotunesFlags) {
  const TrainingArguments args =
      yaml(std::string(kFile) + "cutoff_len: 512\nlora_rank: 16\nneat_packing: true\noverwrite_output_dir: true\n");
  EXPECT_EQ(args.max_length, 512);
  EXPECT_EQ(args.lora_rank, 16);
  EXPECT_TRUE(args.packing);
  EXPECT_TRUE(args.overwrite_output_dir);
  EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);
}

// examples/extras/galore, apollo and badam/llama3_full_sft.yaml's method sections.
TEST(LlamaFactoryOptions, OptimizerMethodsAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"use_galore: true\ngalore_layerwise: true\ngalore_target: all\ngalore_rank: 128\ngalore_scale: 2.0\n",
       "--use_galore true (LLaMA-Factory): GaLore (gradient low-rank projection) is not supported by zerotune; "
       "zerotune trains with AdamW on every trained parameter"},
      {"use_apollo: true\napollo_layerwise: true\napollo_rank: 128\napollo_scale: 32.0\napollo_scale_type: channel\n",
       "--use_apollo true (LLaMA-Factory): APOLLO"},
      {"use_badam: true\nbadam_mode: layer\nbadam_switch_mode: ascending\nbadam_switch_interval: 50\n"
       "badam_verbose: 2\n",
       "--use_badam true (LLaMA-Factory): BAdam (block-coordinate Adam) is not supported by zerotune"}};
  for (const auto& [method, part] : files) {
    const std::string text = std::string(kFile) + "finetuning_type: full\n" + method + "pure_bf16: true\n";
    EXPECT_THROW(yaml(text), UsageError);
    const std::string msg = yaml_error(text);
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
    EXPECT_NE(msg.find("offload the optimizer state"), std::string::npos) << msg;  // what to do instead
    EXPECT_NE(msg.find("--pure_bf16 true (LLaMA-Factory): pure bf16 training is not supported"), std::string::npos)
        << msg;
    EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 problems"), std::string::npos) << msg;  // the method's settings are no problem
  }
}

TEST(LlamaFactoryOptions, KTransformersAndMegatronAreRefusedByName) {
  std::string msg = yaml_error(std::string(kFile) + "use_kt: true\nkt_weight_path: /w\nkt_cpu_activation: retain\n");
  EXPECT_NE(msg.find("--use_kt true (LLaMA-Factory): KTransformers (MoE experts computed on the CPU) is not "
                     "supported by zerotune"),
            std::string::npos)
      << msg;
  // examples/ktransformers/train_lora/deepseek_v3_lora_sft_kt.yaml's advanced settings: part of
  // the refused KTransformers run, not an unknown option.
  msg = yaml_error(std::string(kFile) +
                   "use_kt: true\nkt_config:\n  kt_expert_weight_format: bf16\n  kt_backend: AMXBF16\n"
                   "  kt_num_threads: 96\n  kt_tp_enabled: true\n");
  EXPECT_NE(msg.find("--use_kt true (LLaMA-Factory)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
  // examples/megatron/qwen3_moe_full.yaml's "mcore speed up" section.
  msg = yaml_error(std::string(kFile) +
                   "tensor_model_parallel_size: 1\nsequence_parallel: false\npipeline_model_parallel_size: 4\n"
                   "bias_activation_fusion: true\napply_rope_fusion: true\nuse_distributed_optimizer: true\n"
                   "overlap_param_gather: true\noverlap_grad_reduce: true\nmoe_grouped_gemm: true\n"
                   "moe_token_dispatcher_type: alltoall\nexpert_model_parallel_size: 2\nrecompute_granularity: full\n"
                   "context_parallel_size: 2\n");
  for (const char* part : {"--pipeline_model_parallel_size 4 (LLaMA-Factory): pipeline parallelism is not supported "
                           "by zerotune; zerotune trains data parallel with ZeRO",
                           "zero_optimization.stage 3",
                           "--expert_model_parallel_size 2 (LLaMA-Factory): expert "
                           "parallelism is not supported",
                           "--context_parallel_size 2 (LLaMA-Factory): context parallelism", "3 problems"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << "\n" << msg;
  msg = yaml_error(std::string(kFile) + "use_mca: true\ntensor_model_parallel_size: 4\n");
  EXPECT_NE(msg.find("Megatron-Core training (mcore_adapter) is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--tensor_model_parallel_size 4 (LLaMA-Factory): tensor parallelism"), std::string::npos) << msg;
}

TEST(LlamaFactoryOptions, SettingsOfUnusedFeaturesWarnOnceAndOnlyOffTheirDefault) {
  TrainingArguments args = yaml(std::string(kFile) +
                                "galore_rank: 128\napollo_scale: 16\nbadam_verbose: 2\nkt_cpu_activation: retain\n"
                                "sequence_parallel: true\nrecompute_granularity: full\nbias_activation_fusion: false\n"
                                "mixed_precision: fp16_mixed\nuse_packed_sequences: true\n");
  const std::string all = joined(args.warnings);
  EXPECT_EQ(args.warnings.size(), 9u) << all;
  for (const char* part :
       {"--galore_rank (LLaMA-Factory) has no effect in zerotune: it sets GaLore, which zerotune does not support",
        "--apollo_scale (LLaMA-Factory) has no effect", "--badam_verbose (LLaMA-Factory) has no effect",
        "--kt_cpu_activation (LLaMA-Factory) has no effect in zerotune: it sets KTransformers",
        "--sequence_parallel (LLaMA-Factory) has no effect", "--recompute_granularity (LLaMA-Factory) has no effect",
        "--bias_activation_fusion (LLaMA-Factory) has no effect", "--mixed_precision (LLaMA-Factory) has no effect",
        "--use_packed_sequences (LLaMA-Factory) has no effect in zerotune: zerotune packs samples with packing"})
    EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
  // examples/megatron_bridge/llama3_sft.yaml's Megatron settings are all defaults: nothing to say.
  args = yaml(std::string(kFile) +
              "tensor_model_parallel_size: 1\npipeline_model_parallel_size: 1\ncontext_parallel_size: 1\n"
              "expert_model_parallel_size: 1\nsequence_parallel: false\nuse_distributed_optimizer: true\n"
              "overlap_param_gather: true\noverlap_grad_reduce: true\nmixed_precision: bf16_mixed\n"
              "use_packed_sequences: false\nexport_hf_on_finish: false\ngalore_rank: 16\n");
  EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);
}

// GeneratingArguments' max_length limits generation in LLaMA-Factory; beside cutoff_len it is
// read as that, so the sample length stays cutoff_len's.
TEST(LlamaFactoryOptions, MaxLengthBesideCutoffLenIsTheGenerationLimit) {
  TrainingArguments args = yaml(std::string(kFile) + "cutoff_len: 512\nmax_length: 64\n");
  EXPECT_EQ(args.max_length, 512);
  ASSERT_EQ(args.warnings.size(), 1u);
  EXPECT_NE(args.warnings[0].find("--max_length (LLaMA-Factory) has no effect in zerotune: beside cutoff_len it is "
                                  "LLaMA-Factory's generation limit"),
            std::string::npos)
      << args.warnings[0];
  args = yaml(std::string(kFile) + "max_length: 64\n");  // alone: zerotune's own flag
  EXPECT_EQ(args.max_length, 64);
  EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);
}

// examples/train_lora/qwen3_lora_sft_ray.yaml's dataset lines: a dataset list in a hub
// repository (REMOTE:), or dataset names as hub ids (ONLINE), refused naming what to download.
TEST(LlamaFactoryOptions, HubDatasetDirectoriesAreRefusedByName) {
  const std::string ray =
      "model_name_or_path: m\noutput_dir: o\nstage: sft\ndataset: identity,alpaca_en_demo\n"
      "dataset_dir: REMOTE:llamafactory/demo_data  # or use local absolute path\n";
  std::string msg = yaml_error(ray);
  EXPECT_NE(msg.find("--dataset_dir REMOTE:llamafactory/demo_data (LLaMA-Factory): a dataset list in a hub "
                     "repository is not supported by zerotune, which reads local files: download the repository "
                     "llamafactory/demo_data (its dataset_info.json and data files) and set --dataset_dir to that "
                     "folder"),
            std::string::npos)
      << msg;
  msg = yaml_error(std::string(kFile) + "dataset_dir: ONLINE\n");
  EXPECT_NE(msg.find("--dataset_dir ONLINE (LLaMA-Factory): datasets named by their hub ids is not supported"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace zt::train
