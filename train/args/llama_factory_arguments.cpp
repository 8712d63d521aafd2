// LLaMA-Factory's options (src/llamafactory/hparams: model, data, fine-tuning, generating and
// its training extras) that `zerotune train` accepts without honouring, with why; the ones it
// refuses say why too. Those that name a zerotune flag (cutoff_len, dataset, lora_rank, ...)
// are in argument_table.cpp.
#include "train/args/other_arguments.h"

namespace zt::train {
namespace {

constexpr ValueKind kBool = ValueKind::kBool, kInt = ValueKind::kInteger, kNumber = ValueKind::kNumber,
                    kText = ValueKind::kText, kObject = ValueKind::kObject;
constexpr Verdict kNoEffect = Verdict::kNoEffect, kRefused = Verdict::kRefused;
constexpr Origin kLf = Origin::kLlamaFactory;

constexpr const char* kTextOnly = "zerotune trains text-only models";
constexpr const char* kInference = "it configures inference; `zerotune generate` and `zerotune chat` do that";
constexpr const char* kExport = "it configures export; `zerotune export` does that";
constexpr const char* kNoModelScope =
    "zerotune downloads from the Hugging Face hub (HF_ENDPOINT) only, not ModelScope or Modelers";
constexpr const char* kOtherStages = "it applies to the rm, ppo, dpo and kto stages, which zerotune does not run";
constexpr const char* kOwnKernels =
    "zerotune's fused RMSNorm, RoPE, SwiGLU and linear + cross-entropy kernels always run";
constexpr const char* kNoRay = "Ray is not used; `zerotune launch` starts the ranks";
constexpr const char* kNoProfiler =
    "zerotune has no torch profiler; --profile_steps times steps per op family and --zero_trace traces "
    "collectives";
constexpr const char* kOptimizer = "zerotune's optimizer is AdamW on every trained parameter";
constexpr const char* kLoss = "zerotune's loss is plain cross-entropy on the label tokens";
constexpr const char* kTokens = "zerotune trains with the tokenizer's vocabulary as it is";
constexpr const char* kInMemory = "the data is tokenised in memory before the first step, every run";

}  // namespace

const std::vector<OtherArgument>& llama_factory_other_arguments() {
  static const std::vector<OtherArgument> table = {
      // Model loading.
      {"trust_remote_code", kBool, "[false]", kNoEffect, "zerotune runs no code from the model folder", kLf},
      {"adapter_name_or_path", kText, "[null]", kRefused,
       "zerotune train starts new adapters; merge an adapter first (`zerotune export --merge_lora`) and train on "
       "the merged model",
       kLf},
      {"adapter_folder", kText, "[null]", kRefused, "zerotune train starts new adapters", kLf},
      {"create_new_adapter", kBool, "[false]", kNoEffect, "zerotune train always starts a new adapter", kLf},
      {"cache_dir", kText, "[null]", kNoEffect, "zerotune's hub cache is HF_HUB_CACHE (else HF_HOME/hub): set that",
       kLf},
      {"hf_hub_token", kText, "[null]", kNoEffect, "zerotune reads the hub token from HF_TOKEN: set that", kLf},
      {"ms_hub_token", kText, "[null]", kNoEffect, kNoModelScope, kLf},
      {"om_hub_token", kText, "[null]", kNoEffect, kNoModelScope, kLf},
      {"use_fast_tokenizer", kBool, "[true]", kNoEffect, "zerotune has one tokenizer per model, read from its files",
       kLf},
      {"low_cpu_mem_usage", kBool, "[true]", kNoEffect, "zerotune maps the weights from their files", kLf},
      {"print_param_status", kBool, "[false]", kNoEffect, "the log lists what trains anyway", kLf},
      {"train_from_scratch", kBool, "[false]", kRefused, "zerotune fine-tunes the model's weights", kLf},
      {"resize_vocab", kBool, "[false]", kRefused, kTokens, kLf},
      {"split_special_tokens", kBool, "[false]", kRefused, kTokens, kLf},
      {"add_tokens", kText, "[null]", kRefused, kTokens, kLf},
      {"add_special_tokens", kText, "[null]", kRefused, kTokens, kLf},
      {"new_special_tokens", kText, "[null]", kRefused, kTokens, kLf},
      {"new_special_tokens_config", kText, "[null]", kRefused, kTokens, kLf},
      {"init_special_tokens", kText, "[\"noise_init\"]", kNoEffect, "no tokens are added", kLf},
      {"rope_scaling", kText, "[null]", kRefused, "zerotune uses the model's rotary embedding as configured", kLf},
      {"shift_attn", kBool, "[false]", kRefused, "shift short attention (LongLoRA) is not implemented", kLf},
      {"mixture_of_depths", kText, "[null]", kRefused, "mixture of depths is not implemented", kLf},
      {"moe_aux_loss_coef", kNumber, "[null]", kNoEffect, "zerotune's models have no experts", kLf},
      {"quantization_bit", kInt, "[null]", kRefused,
       "zerotune trains on unquantised weights (bf16, fp16 or fp32), not QLoRA's quantised ones", kLf},
      {"quantization_method", kText, "[\"bnb\", \"bitsandbytes\"]", kNoEffect, "nothing is quantised", kLf},
      {"quantization_type", kText, "[\"nf4\"]", kNoEffect, "nothing is quantised", kLf},
      {"double_quantization", kBool, "[true]", kNoEffect, "nothing is quantised", kLf},
      {"quantization_device_map", kText, "[null]", kNoEffect, "nothing is quantised", kLf},

      // Kernels and memory.
      {"flash_attn", kText, "[\"auto\"]", kNoEffect,
       "zerotune picks its attention kernels with --attn_impl (zerotune, cudnn)", kLf},
      {"use_unsloth", kBool, "[false]", kNoEffect, kOwnKernels, kLf},
      {"use_unsloth_gc", kBool, "[false]", kNoEffect, kOwnKernels, kLf},
      {"enable_liger_kernel", kBool, "[false]", kNoEffect, kOwnKernels, kLf},
      {"use_v1_kernels", kBool, "[false, null]", kNoEffect, kOwnKernels, kLf},
      {"use_reentrant_gc", kBool, "[true]", kNoEffect, "zerotune's checkpointing recomputes each layer in backward",
       kLf},
      {"upcast_layernorm", kBool, "[false]", kNoEffect, "zerotune's norms compute in float32 already", kLf},
      {"upcast_lmhead_output", kBool, "[false]", kNoEffect,
       "the fused LM head + cross-entropy computes the logits in float32 already", kLf},
      {"offload_folder", kText, "[\"offload\"]", kNoEffect, "zerotune offloads through the DeepSpeed config", kLf},

      // Data.
      {"preprocessing_num_workers", kInt, "[null]", kNoEffect, "zerotune tokenises on --dataloader_num_workers threads",
       kLf},
      {"preprocessing_batch_size", kInt, "[1000]", kNoEffect, kInMemory, kLf},
      {"overwrite_cache", kBool, "[false]", kNoEffect, kInMemory, kLf},
      {"tokenized_path", kText, "[null]", kRefused, "zerotune reads the data files and tokenises them itself", kLf},
      {"data_shared_file_system", kBool, "[false]", kNoEffect, kInMemory, kLf},
      {"streaming", kBool, "[false]", kNoEffect, "zerotune reads the whole data into memory", kLf},
      {"buffer_size", kInt, "[16384]", kNoEffect, "zerotune reads the whole data into memory", kLf},
      {"mix_strategy", kText, "[\"concat\"]", kRefused,
       "zerotune concatenates the datasets (concat); interleaving them would train on other samples", kLf},
      {"interleave_probs", kText, "[null]", kRefused, "zerotune concatenates the datasets (mix_strategy concat)", kLf},
      {"mask_history", kBool, "[false]", kRefused,
       "zerotune trains on every reply of a conversation; masking the earlier ones would change the labels", kLf},
      {"ignore_pad_token_for_loss", kBool, "[true]", kRefused,
       "padding never reaches zerotune's loss, as true makes it", kLf},
      {"eval_on_each_dataset", kBool, "[false]", kNoEffect, "the evaluation datasets are evaluated together", kLf},
      {"eval_num_beams", kInt, "[null]", kNoEffect, "evaluation computes the loss only", kLf},
      {"tool_format", kText, "[null]", kRefused,
       "zerotune renders tools, calls and results in the chat template's own format; another format is not "
       "supported",
       kLf},
      {"default_system", kText, "[null]", kRefused,
       "zerotune's templates keep their own default system prompt; put a system message in the data instead", kLf},
      {"enable_thinking", kBool, "[true, null]", kRefused,
       "zerotune does not rewrite the thinking part; use --template qwen3_nothink for a template without it", kLf},
      {"preserve_thinking", kBool, "[false]", kRefused, "zerotune does not rewrite the thinking part", kLf},
      {"media_dir", kText, "[null]", kNoEffect, kTextOnly, kLf},

      // Multimodal.
      {"image_max_pixels", kInt, "[589824]", kNoEffect, kTextOnly, kLf},
      {"image_min_pixels", kInt, "[1024]", kNoEffect, kTextOnly, kLf},
      {"image_do_pan_and_scan", kBool, "[false]", kNoEffect, kTextOnly, kLf},
      {"crop_to_patches", kBool, "[false]", kNoEffect, kTextOnly, kLf},
      {"video_max_pixels", kInt, "[65536]", kNoEffect, kTextOnly, kLf},
      {"video_min_pixels", kInt, "[256]", kNoEffect, kTextOnly, kLf},
      {"video_fps", kNumber, "[2.0]", kNoEffect, kTextOnly, kLf},
      {"video_maxlen", kInt, "[128]", kNoEffect, kTextOnly, kLf},
      {"use_audio_in_video", kBool, "[false]", kNoEffect, kTextOnly, kLf},
      {"audio_sampling_rate", kInt, "[16000]", kNoEffect, kTextOnly, kLf},
      {"freeze_vision_tower", kBool, "[true]", kNoEffect, kTextOnly, kLf},
      {"freeze_multi_modal_projector", kBool, "[true]", kNoEffect, kTextOnly, kLf},
      {"freeze_language_model", kBool, "[false]", kRefused,
       "freezing the language model of a text-only model leaves nothing to train", kLf},
      {"train_mm_proj_only", kBool, "[false]", kNoEffect, kTextOnly, kLf},

      // Methods and optimizers zerotune does not offer.
      {"pure_bf16", kBool, "[false]", kRefused,
       "zerotune keeps fp32 master weights under --bf16; pure bf16 training would round every update to bf16", kLf},
      {"use_llama_pro", kBool, "[false]", kRefused, "LLaMA Pro's block expansion is not implemented", kLf},
      {"freeze_extra_modules", kText, "[null]", kRefused,
       "--freeze_trainable_modules names what trains in the chosen layers; extra modules outside them are not "
       "supported",
       kLf},
      {"additional_target", kText, "[null]", kRefused,
       "LoRA trains the adapters alone; training whole modules beside them is not supported", kLf},
      {"loraplus_lr_ratio", kNumber, "[null]", kRefused, "every LoRA matrix learns at --learning_rate", kLf},
      {"loraplus_lr_embedding", kNumber, "[1e-6]", kNoEffect, "LoRA+ is not used", kLf},
      {"use_rslora", kBool, "[false]", kRefused,
       "LoRA scales by lora_alpha / lora_rank (rank-stabilised LoRA is not implemented)", kLf},
      {"use_dora", kBool, "[false]", kRefused, "DoRA is not implemented", kLf},
      {"pissa_init", kBool, "[false]", kRefused, "LoRA starts from random A and zero B (PiSSA is not implemented)",
       kLf},
      {"pissa_iter", kInt, "[16]", kNoEffect, "PiSSA is not used", kLf},
      {"pissa_convert", kBool, "[false]", kRefused, "PiSSA is not implemented", kLf},
      {"oft_rank", kInt, "[0]", kRefused, "OFT is not implemented", kLf},
      {"oft_block_size", kInt, "[32]", kNoEffect, "OFT is not used", kLf},
      {"oft_target", kText, "[\"all\"]", kNoEffect, "OFT is not used", kLf},
      {"module_dropout", kNumber, "[0]", kNoEffect, "OFT is not used", kLf},
      {"use_galore", kBool, "[false]", kRefused, kOptimizer, kLf},
      {"use_apollo", kBool, "[false]", kRefused, kOptimizer, kLf},
      {"use_badam", kBool, "[false]", kRefused, kOptimizer, kLf},
      {"use_adam_mini", kBool, "[false]", kRefused, kOptimizer, kLf},
      {"use_muon", kBool, "[false]", kRefused, kOptimizer, kLf},
      {"use_dft_loss", kBool, "[false]", kRefused, kLoss, kLf},
      {"use_asft_loss", kBool, "[false]", kRefused, kLoss, kLf},
      {"use_eaft_loss", kBool, "[false]", kRefused, kLoss, kLf},
      {"asft_alpha", kNumber, "[0.1]", kNoEffect, "the ASFT loss is not used", kLf},
      {"eaft_alpha", kNumber, "[1.0]", kNoEffect, "the EAFT loss is not used", kLf},
      {"disable_shuffling", kBool, "[false]", kRefused,
       "zerotune trains the samples in an order shuffled by --seed; training them in file order would change the "
       "run",
       kLf},
      {"early_stopping_steps", kInt, "[null]", kRefused, "zerotune trains to max_steps or num_train_epochs", kLf},
      {"use_mca", kBool, "[false]", kRefused, "Megatron is not used; zerotune trains data parallel with ZeRO", kLf},
      {"use_megatron_bridge", kBool, "[false]", kRefused,
       "Megatron is not used; zerotune trains data parallel with ZeRO", kLf},
      {"megatron_bridge_args", kObject, "[null]", kNoEffect, "Megatron is not used", kLf},
      {"use_hyper_parallel", kBool, "[false]", kRefused, "zerotune trains data parallel with ZeRO", kLf},
      {"hyper_parallel_args", kText, "[null]", kNoEffect, "hyper parallelism is not used", kLf},
      {"hyper_parallel_cp_size", kInt, "[1]", kRefused, "context parallelism is not implemented", kLf},
      {"use_kt", kBool, "[false]", kRefused, "KTransformers is not used", kLf},
      {"fp8", kBool, "[false]", kRefused, "zerotune trains in bf16, fp16 or fp32, not fp8", kLf},
      {"fp8_backend", kText, "[\"auto\"]", kNoEffect, "fp8 is not used", kLf},
      {"fp8_enable_fsdp_float8_all_gather", kBool, "[false]", kNoEffect, "fp8 is not used", kLf},
      {"compute_accuracy", kBool, "[false]", kNoEffect, "evaluation computes the loss only", kLf},
      {"plot_loss", kBool, "*", kNoEffect, "zerotune draws training_loss.png and training_lr.png anyway", kLf},
      {"include_effective_tokens_per_second", kBool, "*", kNoEffect, "tokens_per_second is in every log entry anyway",
       kLf},

      // Preference and RL stages (stage sft ignores them in LLaMA-Factory too).
      {"pref_beta", kNumber, "[0.1]", kNoEffect, kOtherStages, kLf},
      {"pref_ftx", kNumber, "[0]", kNoEffect, kOtherStages, kLf},
      {"pref_bco_weight", kNumber, "[0]", kNoEffect, kOtherStages, kLf},
      {"pref_loss", kText, "[\"sigmoid\"]", kNoEffect, kOtherStages, kLf},
      {"dpo_label_smoothing", kNumber, "[0]", kNoEffect, kOtherStages, kLf},
      {"kto_chosen_weight", kNumber, "[1.0]", kNoEffect, kOtherStages, kLf},
      {"kto_rejected_weight", kNumber, "[1.0]", kNoEffect, kOtherStages, kLf},
      {"simpo_gamma", kNumber, "[0.5]", kNoEffect, kOtherStages, kLf},
      {"ld_alpha", kNumber, "[null]", kNoEffect, kOtherStages, kLf},
      {"ppo_buffer_size", kInt, "[1]", kNoEffect, kOtherStages, kLf},
      {"ppo_epochs", kInt, "[4]", kNoEffect, kOtherStages, kLf},
      {"ppo_score_norm", kBool, "[false]", kNoEffect, kOtherStages, kLf},
      {"ppo_target", kNumber, "[6.0]", kNoEffect, kOtherStages, kLf},
      {"ppo_whiten_rewards", kBool, "[false]", kNoEffect, kOtherStages, kLf},
      {"ref_model", kText, "[null]", kNoEffect, kOtherStages, kLf},
      {"ref_model_adapters", kText, "[null]", kNoEffect, kOtherStages, kLf},
      {"ref_model_quantization_bit", kInt, "[null]", kNoEffect, kOtherStages, kLf},
      {"reward_model", kText, "[null]", kNoEffect, kOtherStages, kLf},
      {"reward_model_adapters", kText, "[null]", kNoEffect, kOtherStages, kLf},
      {"reward_model_quantization_bit", kInt, "[null]", kNoEffect, kOtherStages, kLf},
      {"reward_model_type", kText, "[\"lora\"]", kNoEffect, kOtherStages, kLf},

      // Reporting, launching, profiling.
      {"use_swanlab", kBool, "[false]", kNoEffect, "zerotune reports to no integration", kLf},
      {"swanlab_project", kText, "[\"llamafactory\"]", kNoEffect, "zerotune reports to no integration", kLf},
      {"swanlab_workspace", kText, "[null]", kNoEffect, "zerotune reports to no integration", kLf},
      {"swanlab_run_name", kText, "[null]", kNoEffect, "zerotune reports to no integration", kLf},
      {"swanlab_mode", kText, "[\"cloud\"]", kNoEffect, "zerotune reports to no integration", kLf},
      {"swanlab_api_key", kText, "[null]", kNoEffect, "zerotune reports to no integration", kLf},
      {"swanlab_logdir", kText, "[null]", kNoEffect, "zerotune reports to no integration", kLf},
      {"swanlab_lark_webhook_url", kText, "[null]", kNoEffect, "zerotune reports to no integration", kLf},
      {"swanlab_lark_secret", kText, "[null]", kNoEffect, "zerotune reports to no integration", kLf},
      {"ray_run_name", kText, "[null]", kNoEffect, kNoRay, kLf},
      {"ray_storage_path", kText, "[\"./saves\"]", kNoEffect, kNoRay, kLf},
      {"ray_storage_filesystem", kText, "[null]", kNoEffect, kNoRay, kLf},
      {"ray_num_workers", kInt, "[1]", kNoEffect, kNoRay, kLf},
      {"resources_per_worker", kObject, "[null, {\"GPU\": 1}]", kNoEffect, kNoRay, kLf},
      {"placement_strategy", kText, "[\"PACK\"]", kNoEffect, kNoRay, kLf},
      {"ray_init_kwargs", kObject, "[null]", kNoEffect, kNoRay, kLf},
      {"master_addr", kText, "[null]", kNoEffect, "`zerotune launch --master_addr` sets it", kLf},
      {"master_port", kText, "[null]", kNoEffect, "`zerotune launch --master_port` sets it", kLf},
      {"enable_torch_profiler", kBool, "[false]", kNoEffect, kNoProfiler, kLf},
      {"profiler_output_dir", kText, "[null]", kNoEffect, kNoProfiler, kLf},
      {"profiler_wait_steps", kInt, "[1]", kNoEffect, kNoProfiler, kLf},
      {"profiler_warmup_steps", kInt, "[1]", kNoEffect, kNoProfiler, kLf},
      {"profiler_active_steps", kInt, "[1]", kNoEffect, kNoProfiler, kLf},
      {"profiler_repeat", kInt, "[1]", kNoEffect, kNoProfiler, kLf},
      {"profiler_record_shapes", kBool, "[true]", kNoEffect, kNoProfiler, kLf},
      {"profiler_profile_memory", kBool, "[true]", kNoEffect, kNoProfiler, kLf},
      {"profiler_with_stack", kBool, "[true]", kNoEffect, kNoProfiler, kLf},
      {"profile_modules", kText, "[null]", kNoEffect, kNoProfiler, kLf},

      // Generation, export and inference engines (other llamafactory-cli commands).
      {"do_sample", kBool, "[true]", kNoEffect, kInference, kLf},
      {"temperature", kNumber, "[0.95]", kNoEffect, kInference, kLf},
      {"top_p", kNumber, "[0.7]", kNoEffect, kInference, kLf},
      {"top_k", kInt, "[50]", kNoEffect, kInference, kLf},
      {"num_beams", kInt, "[1]", kNoEffect, kInference, kLf},
      {"max_new_tokens", kInt, "[1024]", kNoEffect, kInference, kLf},
      {"repetition_penalty", kNumber, "[1.0]", kNoEffect, kInference, kLf},
      {"length_penalty", kNumber, "[1.0]", kNoEffect, kInference, kLf},
      {"skip_special_tokens", kBool, "[true]", kNoEffect, kInference, kLf},
      {"infer_backend", kText, "[\"huggingface\", \"hf\"]", kNoEffect, kInference, kLf},
      {"infer_dtype", kText, "[\"auto\"]", kNoEffect, kInference, kLf},
      {"use_kv_cache", kBool, "[true]", kNoEffect, kInference, kLf},
      {"vllm_maxlen", kInt, "[4096]", kNoEffect, kInference, kLf},
      {"vllm_gpu_util", kNumber, "[0.7]", kNoEffect, kInference, kLf},
      {"vllm_enforce_eager", kBool, "[false]", kNoEffect, kInference, kLf},
      {"vllm_max_lora_rank", kInt, "[32]", kNoEffect, kInference, kLf},
      {"vllm_config", kObject, "[null]", kNoEffect, kInference, kLf},
      {"sglang_maxlen", kInt, "[4096]", kNoEffect, kInference, kLf},
      {"sglang_mem_fraction", kNumber, "[0.7]", kNoEffect, kInference, kLf},
      {"sglang_tp_size", kInt, "[-1]", kNoEffect, kInference, kLf},
      {"sglang_config", kObject, "[null]", kNoEffect, kInference, kLf},
      {"sglang_lora_backend", kText, "[\"triton\"]", kNoEffect, kInference, kLf},
      {"export_dir", kText, "[null]", kNoEffect, kExport, kLf},
      {"export_size", kInt, "[5]", kNoEffect, kExport, kLf},
      {"export_device", kText, "[\"cpu\"]", kNoEffect, kExport, kLf},
      {"export_quantization_bit", kInt, "[null]", kNoEffect, kExport, kLf},
      {"export_quantization_dataset", kText, "[null]", kNoEffect, kExport, kLf},
      {"export_quantization_nsamples", kInt, "[128]", kNoEffect, kExport, kLf},
      {"export_quantization_maxlen", kInt, "[1024]", kNoEffect, kExport, kLf},
      {"export_legacy_format", kBool, "[false]", kNoEffect, kExport, kLf},
      {"export_hub_model_id", kText, "[null]", kNoEffect, kExport, kLf},
  };
  return table;
}

}  // namespace zt::train
