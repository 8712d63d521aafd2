// Every option of LLaMA-Factory's argument classes (src/llamafactory/hparams: ModelArguments
// and its parts, DataArguments, its TrainingArguments' own fields, MegatronBridgeArguments,
// FinetuningArguments and its parts, GeneratingArguments), in their order, with what
// `zerotune train` makes of it: honoured as one of its flags, without effect (why), or refused
// (the feature, and what to do instead). A few options of older releases follow their class.
// tests/train/args/llama_factory_options_test.cpp holds the names of LLaMA-Factory's source
// and fails when one is missing here.
#include "train/args/other_arguments.h"

namespace zt::train {
namespace {

using enum ValueKind;
using enum Verdict;
constexpr Origin kLf = Origin::kLlamaFactory;
constexpr Origin kShared = Origin::kShared;

// A LLaMA-Factory name read as zerotune's `flag` (its own name where they agree).
OtherArgument honoured(const char* name, const char* flag) { return {name, kText, "*", kHonoured, flag, kLf}; }

constexpr const char* kTextOnly = "zerotune trains text-only models";
constexpr const char* kInference = "it configures inference; `zerotune generate` and `zerotune chat` do that";
constexpr const char* kExport = "it configures export; `zerotune export` does that";
constexpr const char* kNoModelScope =
    "zerotune downloads from the Hugging Face hub (HF_ENDPOINT) only, not ModelScope or Modelers";
constexpr const char* kOtherStages = "it applies to the rm, ppo and kto stages, which zerotune does not run";
constexpr const char* kNoRay = "Ray is not used; `zerotune launch` starts the ranks";
constexpr const char* kNoProfiler =
    "zerotune has no torch profiler; --profile_steps times steps per op family and --zero_trace traces "
    "collectives";
constexpr const char* kTokens =
    "zerotune trains with the tokenizer's vocabulary as it is: drop the option, or use a model whose tokenizer "
    "already has the tokens";
constexpr const char* kInMemory = "the data is tokenised in memory before the first step, every run";
constexpr const char* kWholeData = "zerotune reads the whole data into memory";
constexpr const char* kConcatenated = "zerotune concatenates the datasets (mix_strategy concat): drop the option";
constexpr const char* kLossOnly = "evaluation computes the loss only";
constexpr const char* kOverlapComm = "ZeRO overlaps its communication as the DeepSpeed config's overlap_comm says";
constexpr const char* kPlainLoraInit = "LoRA starts from random A and zero B: drop the option";
constexpr const char* kAdamW =
    "zerotune trains with AdamW on every trained parameter: drop the option and its settings; for less optimizer "
    "memory train LoRA (finetuning_type lora) or offload the optimizer state (a DeepSpeed config with "
    "zero_optimization.offload_optimizer)";
constexpr const char* kCrossEntropy = "zerotune's loss is plain cross-entropy on the label tokens: drop the option";
constexpr const char* kDataParallel =
    "zerotune trains data parallel with ZeRO: drop the option, and shard the model over the GPUs with a DeepSpeed "
    "config (zero_optimization.stage 3, docs/ZERO.md)";
constexpr const char* kNoGalore = "it sets GaLore, which zerotune does not support (use_galore is refused)";
constexpr const char* kNoApollo = "it sets APOLLO, which zerotune does not support (use_apollo is refused)";
constexpr const char* kNoBadam = "it sets BAdam, which zerotune does not support (use_badam is refused)";
constexpr const char* kNoKt = "it sets KTransformers, which zerotune does not support (use_kt is refused)";
constexpr const char* kNoMegatron = "it configures Megatron, which zerotune does not use";
constexpr const char* kNoPipeline = "it splits pipeline stages; zerotune runs no pipeline parallelism";
constexpr const char* kNoExperts = "zerotune's models have no experts";
constexpr const char* kNoSwanlab =
    "zerotune does not report to SwanLab; --report_to tensorboard writes TensorBoard event files";
constexpr const char* kRecompute =
    "zerotune recomputes whole layers under gradient checkpointing, on in LLaMA-Factory's files unless "
    "disable_gradient_checkpointing";

}  // namespace

const std::vector<OtherArgument>& llama_factory_other_arguments() {
  static const std::vector<OtherArgument> table = {
      // ModelArguments: BaseModelArguments.
      honoured("model_name_or_path", "model_name_or_path"),
      {"adapter_name_or_path", kText, "[null]", kRefused,
       "zerotune train starts new adapters: merge the adapter first (`zerotune export --merge_lora`) and train on "
       "the merged model",
       kLf, "training an existing adapter further"},
      {"adapter_folder", kText, "[null]", kRefused, "zerotune train starts new adapters", kLf,
       "loading adapters from a folder"},
      // cache_dir, use_fast_tokenizer, low_cpu_mem_usage, trust_remote_code, streaming and overwrite_cache
      // are run_clm.py's options too: their warnings name no program.
      {"cache_dir", kText, "[null]", kNoEffect, "zerotune's hub cache is HF_HUB_CACHE (else HF_HOME/hub): set that",
       kShared},
      {"use_fast_tokenizer", kBool, "[true]", kNoEffect, "zerotune has one tokenizer per model, read from its files",
       kShared},
      {"resize_vocab", kBool, "[false]", kRefused, kTokens, kLf, "resizing the vocabulary"},
      {"split_special_tokens", kBool, "[false]", kRefused, kTokens, kLf, "splitting special tokens"},
      {"add_tokens", kText, "[null]", kRefused, kTokens, kLf, "adding tokens"},
      {"add_special_tokens", kText, "[null]", kRefused, kTokens, kLf, "adding special tokens"},
      {"new_special_tokens", kText, "[null]", kRefused, kTokens, kLf, "adding special tokens"},  // older releases
      {"new_special_tokens_config", kText, "[null]", kRefused, kTokens, kLf, "adding special tokens"},
      {"init_special_tokens", kText, "[\"noise_init\"]", kNoEffect, "no tokens are added", kLf},
      honoured("model_revision", "model_revision"),
      {"low_cpu_mem_usage", kBool, "[true, false]", kNoEffect, "zerotune maps the weights from their files", kShared},
      {"rope_scaling", kText, "[null]", kRefused,
       "zerotune uses the rotary embedding the model's config.json sets: drop the option", kLf, "RoPE scaling"},
      // Also a boolean, false by default, of FastChat's train_lora.py and many other scripts.
      {"flash_attn", kText, "[\"auto\", false, \"False\", \"false\"]", kNoEffect,
       "zerotune picks its attention kernels with --attn_impl (zerotune, cudnn)", kShared},
      {"shift_attn", kBool, "[false]", kRefused, "attention is plain causal attention: drop the option", kLf,
       "shift short attention (LongLoRA's S2-Attn)"},
      {"mixture_of_depths", kText, "[null]", kRefused, "every token runs through every layer: drop the option", kLf,
       "mixture of depths"},
      {"use_unsloth", kBool, "[false]", kNoEffect, kFusedKernelsAlwaysRun, kLf},
      {"use_unsloth_gc", kBool, "[false]", kNoEffect, kFusedKernelsAlwaysRun, kLf},
      {"enable_liger_kernel", kBool, "[false]", kNoEffect, kFusedKernelsAlwaysRun, kLf},
      {"moe_aux_loss_coef", kNumber, "[null]", kNoEffect, kNoExperts, kLf},
      honoured("disable_gradient_checkpointing", "disable_gradient_checkpointing"),
      {"use_reentrant_gc", kBool, "[true]", kNoEffect, "zerotune's checkpointing recomputes each layer in backward",
       kLf},
      {"upcast_layernorm", kBool, "[false]", kNoEffect, "zerotune's norms compute in float32 already", kLf},
      {"upcast_lmhead_output", kBool, "[false]", kNoEffect,
       "the fused LM head + cross-entropy computes the logits in float32 already", kLf},
      {"train_from_scratch", kBool, "[false]", kRefused,
       "zerotune fine-tunes the weights of model_name_or_path: drop the option", kLf, "training from random weights"},
      {"infer_backend", kText, "[\"huggingface\", \"hf\"]", kNoEffect, kInference, kLf},
      {"offload_folder", kText, "[\"offload\"]", kNoEffect, "zerotune offloads through the DeepSpeed config", kLf},
      {"use_kv_cache", kBool, "[true]", kNoEffect, kInference, kLf},
      {"use_v1_kernels", kBool, "[false, null]", kNoEffect, kFusedKernelsAlwaysRun, kLf},
      {"infer_dtype", kText, "[\"auto\"]", kNoEffect, kInference, kLf},
      {"hf_hub_token", kText, "[null]", kNoEffect, "zerotune reads the hub token from HF_TOKEN: set that", kLf},
      {"ms_hub_token", kText, "[null]", kNoEffect, kNoModelScope, kLf},
      {"om_hub_token", kText, "[null]", kNoEffect, kNoModelScope, kLf},
      {"print_param_status", kBool, "[false]", kNoEffect, "the log lists what trains anyway", kLf},
      {"trust_remote_code", kBool, "[false]", kNoEffect, "zerotune runs no code from the model folder", kShared},

      // ModelArguments: QuantizationArguments.
      honoured("quantization_method", "quantization_method"),
      honoured("quantization_bit", "quantization_bit"),
      honoured("quantization_type", "quantization_type"),
      honoured("double_quantization", "double_quantization"),
      {"quantization_device_map", kText, "[null]", kNoEffect,
       "it places a quantised model for inference; zerotune places every rank's copy on its own GPU", kLf},

      // ModelArguments: ProcessorArguments.
      {"image_max_pixels", kInteger, "[589824]", kNoEffect, kTextOnly, kLf},
      {"image_min_pixels", kInteger, "[1024]", kNoEffect, kTextOnly, kLf},
      {"image_do_pan_and_scan", kBool, "[false]", kNoEffect, kTextOnly, kLf},
      {"crop_to_patches", kBool, "[false]", kNoEffect, kTextOnly, kLf},
      {"video_max_pixels", kInteger, "[65536]", kNoEffect, kTextOnly, kLf},
      {"video_min_pixels", kInteger, "[256]", kNoEffect, kTextOnly, kLf},
      {"video_fps", kNumber, "[2.0]", kNoEffect, kTextOnly, kLf},
      {"video_maxlen", kInteger, "[128]", kNoEffect, kTextOnly, kLf},
      {"use_audio_in_video", kBool, "[false]", kNoEffect, kTextOnly, kLf},
      {"audio_sampling_rate", kInteger, "[16000]", kNoEffect, kTextOnly, kLf},

      // ModelArguments: ExportArguments, VllmArguments, SGLangArguments (other llamafactory-cli commands).
      {"export_dir", kText, "[null]", kNoEffect, kExport, kLf},
      {"export_size", kInteger, "[5]", kNoEffect, kExport, kLf},
      {"export_device", kText, "[\"cpu\"]", kNoEffect, kExport, kLf},
      {"export_quantization_bit", kInteger, "[null]", kNoEffect, kExport, kLf},
      {"export_quantization_dataset", kText, "[null]", kNoEffect, kExport, kLf},
      {"export_quantization_nsamples", kInteger, "[128]", kNoEffect, kExport, kLf},
      {"export_quantization_maxlen", kInteger, "[1024]", kNoEffect, kExport, kLf},
      {"export_legacy_format", kBool, "[false]", kNoEffect, kExport, kLf},
      {"export_hub_model_id", kText, "[null]", kNoEffect, kExport, kLf},
      {"vllm_maxlen", kInteger, "[4096]", kNoEffect, kInference, kLf},
      {"vllm_gpu_util", kNumber, "[0.7]", kNoEffect, kInference, kLf},
      {"vllm_enforce_eager", kBool, "[false]", kNoEffect, kInference, kLf},
      {"vllm_max_lora_rank", kInteger, "[32]", kNoEffect, kInference, kLf},
      {"vllm_config", kObject, "[null]", kNoEffect, kInference, kLf},
      {"sglang_maxlen", kInteger, "[4096]", kNoEffect, kInference, kLf},
      {"sglang_mem_fraction", kNumber, "[0.7]", kNoEffect, kInference, kLf},
      {"sglang_tp_size", kInteger, "[-1]", kNoEffect, kInference, kLf},
      {"sglang_config", kObject, "[null]", kNoEffect, kInference, kLf},
      {"sglang_lora_backend", kText, "[\"triton\"]", kNoEffect, kInference, kLf},
      {"vllm_dtype", kText, "[\"auto\"]", kNoEffect, kInference, kLf},  // 0.8.0 and 0.8.1

      // ModelArguments: KTransformersArguments.
      {"use_kt", kBool, "[false]", kRefused,
       "zerotune keeps every weight on the GPUs, or offloads them whole with ZeRO stage 3 (a DeepSpeed config with "
       "offload_param and offload_optimizer): drop use_kt and the kt_* options",
       kLf, "KTransformers (MoE experts computed on the CPU)"},
      {"kt_cpu_activation", kText, "[null]", kNoEffect, kNoKt, kLf},
      {"kt_weight_path", kText, "[null]", kNoEffect, kNoKt, kLf},
      {"kt_non_expert_weight_path", kText, "[null]", kNoEffect, kNoKt, kLf},
      {"kt_expert_checkpoint_path", kText, "[null]", kNoEffect, kNoKt, kLf},
      {"kt_use_lora_experts", kBool, "[null]", kNoEffect, kNoKt, kLf},
      {"kt_lora_expert_num", kInteger, "[null]", kNoEffect, kNoKt, kLf},
      {"kt_lora_expert_intermediate_size", kInteger, "[null]", kNoEffect, kNoKt, kLf},
      // parser.py's _KTransformersRuntimeArguments: KTransformers' own settings as one mapping,
      // which its training examples give beside use_kt.
      {"kt_config", kObject, "[null]", kNoEffect, kNoKt, kLf},
      // 0.9.4's KTransformersArguments, which its examples/ktransformers files give beside use_kt.
      {"kt_optimize_rule", kText, "[null]", kNoEffect, kNoKt, kLf},
      {"cpu_infer", kInteger, "[32]", kNoEffect, kNoKt, kLf},
      {"chunk_size", kInteger, "[8192]", kNoEffect, kNoKt, kLf},
      {"mode", kText, "[\"normal\"]", kNoEffect, kNoKt, kLf},
      {"kt_maxlen", kInteger, "[4096]", kNoEffect, kNoKt, kLf},
      {"kt_use_cuda_graph", kBool, "[true]", kNoEffect, kNoKt, kLf},
      {"kt_mode", kText, "[\"normal\"]", kNoEffect, kNoKt, kLf},
      {"kt_force_think", kBool, "[false]", kNoEffect, kNoKt, kLf},
      {"visual_inputs", kBool, "[false]", kRefused,  // 0.8: the model takes images (LLaVA)
       "zerotune trains text-only models: drop the option and name a text dataset", kLf, "visual inputs"},

      // DataArguments.
      honoured("template", "template"),
      honoured("dataset", "dataset"),
      honoured("eval_dataset", "eval_dataset"),
      honoured("dataset_dir", "dataset_dir"),
      {"media_dir", kText, "[null]", kNoEffect, kTextOnly, kLf},
      {"image_dir", kText, "[null]", kNoEffect, kTextOnly, kLf},              // older releases, to media_dir
      {"image_resolution", kInteger, "[262144]", kNoEffect, kTextOnly, kLf},  // older releases
      {"video_resolution", kInteger, "[16384]", kNoEffect, kTextOnly, kLf},   // older releases
      {"split", kText, "[\"train\"]", kNoEffect,                              // 0.6 and 0.7
       "zerotune reads each dataset's local file whole, which has the one split train", kLf},
      // 0.6 to 0.8: a floor under the labels' share of cutoff_len in the truncation 0.9 replaced.
      {"reserved_label_len", kInteger, "[1]", kNoEffect,
       "zerotune truncates as LLaMA-Factory 0.9 and later do, each turn keeping the start of its prompt and of its "
       "reply",
       kLf},
      honoured("cutoff_len", "max_length"),
      honoured("train_on_prompt", "train_on_prompt"),
      {"mask_history", kBool, "[false]", kRefused,
       "zerotune trains on every reply of a conversation: drop the option, or keep only the last turn in the data", kLf,
       "masking the earlier replies (mask_history)"},
      {"streaming", kBool, "[false]", kNoEffect, kWholeData, kShared},
      {"buffer_size", kInteger, "[16384]", kNoEffect, kWholeData, kLf},
      {"mix_strategy", kText, "[\"concat\"]", kRefused, kConcatenated, kLf, "interleaving datasets"},
      {"interleave_probs", kText, "[null]", kRefused, kConcatenated, kLf, "interleaving datasets"},
      {"overwrite_cache", kBool, "[false]", kNoEffect, kInMemory, kShared},
      honoured("preprocessing_batch_size", "preprocessing_batch_size"),
      honoured("preprocessing_num_workers", "preprocessing_num_workers"),
      honoured("max_samples", "max_samples"),
      {"eval_num_beams", kInteger, "[null]", kNoEffect, kLossOnly, kLf},
      {"ignore_pad_token_for_loss", kBool, "[true]", kRefused,
       "padding never reaches zerotune's loss, as true makes it", kLf, "training on padding tokens"},
      honoured("val_size", "val_size"),
      {"eval_on_each_dataset", kBool, "[false]", kNoEffect, "the evaluation datasets are evaluated together", kLf},
      honoured("packing", "packing"),
      honoured("neat_packing", "neat_packing"),
      {"tool_format", kText, "[null]", kRefused,
       "zerotune renders tools, calls and results in the chat template's own format: drop the option", kLf,
       "another tool format"},
      {"default_system", kText, "[null]", kRefused,
       "zerotune's templates keep their own default system prompt: put a system message in the data instead", kLf,
       "replacing the template's default system prompt in training"},
      honoured("enable_thinking", "enable_thinking"),
      {"preserve_thinking", kBool, "[false]", kRefused, "zerotune renders the template's thinking part as it is", kLf,
       "keeping earlier turns' thinking (preserve_thinking)"},
      {"tokenized_path", kText, "[null]", kRefused,
       "zerotune reads the data files and tokenises them itself: remove tokenized_path (dataset names the "
       "files)",
       kLf, "pre-tokenised datasets"},
      {"data_shared_file_system", kBool, "[false]", kNoEffect, kInMemory, kLf},
      honoured("sft_packing", "packing"),        // 0.5, packing later
      {"cache_path", kText, "[null]", kRefused,  // 0.5 and 0.6, tokenized_path later
       "zerotune reads the data files and tokenises them itself: remove cache_path (dataset names the files)", kLf,
       "pre-tokenised datasets"},

      // TrainingArguments' own fields (HF's are in transformers_arguments.cpp): Ray, profiler, FP8.
      honoured("overwrite_output_dir", "overwrite_output_dir"),
      {"ray_num_workers", kInteger, "[1]", kNoEffect, kNoRay, kLf},
      {"ray_init_kwargs", kObject, "[null]", kNoEffect, kNoRay, kLf},
      {"master_addr", kText, "[null]", kNoEffect, "`zerotune launch --master_addr` sets it", kLf},
      {"master_port", kText, "[null]", kNoEffect, "`zerotune launch --master_port` sets it", kLf},
      {"ray_run_name", kText, "[null]", kNoEffect, kNoRay, kLf},  // older releases, to placement_strategy
      {"ray_storage_path", kText, "[\"./saves\"]", kNoEffect, kNoRay, kLf},
      {"ray_storage_filesystem", kText, "[null]", kNoEffect, kNoRay, kLf},
      {"resources_per_worker", kObject, "[null, {\"GPU\": 1}]", kNoEffect, kNoRay, kLf},
      {"placement_strategy", kText, "[\"PACK\"]", kNoEffect, kNoRay, kLf},
      {"enable_torch_profiler", kBool, "[false]", kNoEffect, kNoProfiler, kLf},
      {"profiler_output_dir", kText, "[null]", kNoEffect, kNoProfiler, kLf},
      {"profiler_wait_steps", kInteger, "[1]", kNoEffect, kNoProfiler, kLf},
      {"profiler_warmup_steps", kInteger, "[1]", kNoEffect, kNoProfiler, kLf},
      {"profiler_active_steps", kInteger, "[1]", kNoEffect, kNoProfiler, kLf},
      {"profiler_repeat", kInteger, "[1]", kNoEffect, kNoProfiler, kLf},
      {"profiler_record_shapes", kBool, "[true]", kNoEffect, kNoProfiler, kLf},
      {"profiler_profile_memory", kBool, "[true]", kNoEffect, kNoProfiler, kLf},
      {"profiler_with_stack", kBool, "[true]", kNoEffect, kNoProfiler, kLf},
      {"profile_modules", kText, "[null]", kNoEffect, kNoProfiler, kLf},
      {"fp8", kBool, "[false]", kRefused, "train in bf16 (bf16 true) instead", kLf, "FP8 training"},
      {"fp8_backend", kText, "[\"auto\"]", kNoEffect, "fp8 is not used", kLf},
      {"fp8_enable_fsdp_float8_all_gather", kBool, "[false]", kNoEffect, "fp8 is not used", kLf},

      // MegatronBridgeArguments (USE_MEGATRON_BRIDGE=1); mcore_adapter's (USE_MCA=1) share these names.
      {"tensor_model_parallel_size", kInteger, "[1, null]", kRefused, kDataParallel, kLf, "tensor parallelism"},
      {"pipeline_model_parallel_size", kInteger, "[1, null]", kRefused, kDataParallel, kLf, "pipeline parallelism"},
      {"expert_model_parallel_size", kInteger, "[1, null]", kRefused,
       "zerotune's models have no experts: drop the option", kLf, "expert parallelism"},
      {"context_parallel_size", kInteger, "[1, null]", kRefused,
       "each sequence trains on one rank: drop the option; for long sequences use gradient checkpointing and ZeRO "
       "stage 3",
       kLf, "context parallelism"},
      {"virtual_pipeline_model_parallel_size", kInteger, "[null]", kRefused, kDataParallel, kLf,
       "interleaved pipeline parallelism"},
      {"sequence_parallel", kBool, "[false]", kNoEffect,
       "it splits tensor-parallel activations; zerotune runs no tensor parallelism", kLf},
      {"recompute_granularity", kText, "[null]", kNoEffect, kRecompute, kLf},
      {"recompute_method", kText, "[null]", kNoEffect, kRecompute, kLf},
      {"recompute_num_layers", kInteger, "[null]", kNoEffect, kRecompute, kLf},
      {"account_for_embedding_in_pipeline_split", kBool, "[null, false]", kNoEffect, kNoPipeline, kLf},
      {"account_for_loss_in_pipeline_split", kBool, "[null, false]", kNoEffect, kNoPipeline, kLf},
      {"bias_activation_fusion", kBool, "[null, true]", kNoEffect, kFusedKernelsAlwaysRun, kLf},
      {"apply_rope_fusion", kBool, "[null, true]", kNoEffect, kFusedKernelsAlwaysRun, kLf},
      {"masked_softmax_fusion", kBool, "[null, true]", kNoEffect, kFusedKernelsAlwaysRun, kLf},
      {"cross_entropy_loss_fusion", kBool, "[null, true]", kNoEffect, kFusedKernelsAlwaysRun, kLf},
      {"moe_grouped_gemm", kBool, "[null]", kNoEffect, kNoExperts, kLf},
      {"moe_token_dispatcher_type", kText, "[null]", kNoEffect, kNoExperts, kLf},
      {"calculate_per_token_loss", kBool, "[null, true]", kNoEffect,
       "zerotune divides the loss by the label tokens of the whole global batch, as true does", kLf},
      {"use_distributed_optimizer", kBool, "[true]", kNoEffect,
       "zerotune shards the optimizer state by the DeepSpeed config's ZeRO stage (--deepspeed)", kLf},
      {"overlap_param_gather", kBool, "[true]", kNoEffect, kOverlapComm, kLf},
      {"overlap_grad_reduce", kBool, "[true]", kNoEffect, kOverlapComm, kLf},
      {"use_packed_sequences", kBool, "[false]", kNoEffect, "zerotune packs samples with packing (or neat_packing)",
       kLf},
      {"mixed_precision", kText, "[\"bf16_mixed\"]", kNoEffect, "bf16 and fp16 set the precision", kLf},
      {"megatron_pretrained_checkpoint", kText, "[null]", kRefused,
       "zerotune loads the Hugging Face folder (config.json and *.safetensors) model_name_or_path names", kLf,
       "loading Megatron checkpoints"},
      {"export_hf_on_finish", kBool, "*", kNoEffect, "zerotune saves a Hugging Face folder in output_dir anyway", kLf},
      {"extra_config", kText, "[null]", kNoEffect, kNoMegatron, kLf},

      // FinetuningArguments: FreezeArguments, LoraArguments, OFTArguments.
      honoured("freeze_trainable_layers", "freeze_trainable_layers"),
      honoured("freeze_trainable_modules", "freeze_trainable_modules"),
      honoured("num_layer_trainable", "freeze_trainable_layers"),     // 0.6, same meaning and default
      honoured("name_module_trainable", "freeze_trainable_modules"),  // 0.6, same meaning and default
      {"freeze_extra_modules", kText, "[null]", kRefused,
       "freeze_trainable_modules names what trains in the chosen layers: drop the option", kLf,
       "training extra modules beside the unfrozen layers"},
      {"additional_target", kText, "[null]", kRefused, "LoRA trains the adapters alone: drop the option", kLf,
       "training whole modules beside the LoRA adapters"},
      honoured("lora_alpha", "lora_alpha"),
      honoured("lora_dropout", "lora_dropout"),
      honoured("lora_rank", "lora_rank"),
      honoured("lora_target", "lora_target"),
      {"loraplus_lr_ratio", kNumber, "[null]", kRefused, "every LoRA matrix learns at learning_rate: drop the option",
       kLf, "LoRA+"},
      {"loraplus_lr_embedding", kNumber, "[1e-6]", kNoEffect, "LoRA+ is not used", kLf},
      {"use_rslora", kBool, "[false]", kRefused, "LoRA scales by lora_alpha / lora_rank: drop the option", kLf,
       "rank-stabilised LoRA (rsLoRA)"},
      {"use_dora", kBool, "[false]", kRefused, "train plain LoRA: drop the option", kLf, "DoRA"},
      {"pissa_init", kBool, "[false]", kRefused, kPlainLoraInit, kLf, "PiSSA"},
      {"pissa_iter", kInteger, "[16]", kNoEffect, "PiSSA is not used", kLf},
      {"pissa_convert", kBool, "[false]", kRefused, kPlainLoraInit, kLf, "PiSSA"},
      {"create_new_adapter", kBool, "[false]", kNoEffect, "zerotune train always starts a new adapter", kLf},
      {"module_dropout", kNumber, "[0]", kNoEffect, "OFT is not used", kLf},
      {"oft_rank", kInteger, "[0]", kRefused, "train LoRA (finetuning_type lora) instead", kLf, "OFT"},
      {"oft_block_size", kInteger, "[32]", kNoEffect, "OFT is not used", kLf},
      {"oft_target", kText, "[\"all\"]", kNoEffect, "OFT is not used", kLf},

      // FinetuningArguments: RLHFArguments (stage sft ignores them in LLaMA-Factory too; --stage
      // dpo honours the preference options).
      honoured("pref_beta", "pref_beta"),
      honoured("pref_ftx", "pref_ftx"),
      honoured("pref_bco_weight", "pref_bco_weight"),
      honoured("pref_loss", "pref_loss"),
      honoured("dpo_label_smoothing", "dpo_label_smoothing"),
      honoured("dpo_beta", "pref_beta"),  // 0.6 and 0.7, renamed in 0.8
      honoured("dpo_loss", "pref_loss"),
      honoured("dpo_ftx", "pref_ftx"),
      {"orpo_beta", kNumber, "[0.1]", kNoEffect,
       "it sets LLaMA-Factory 0.7's stage orpo, which zerotune writes as --stage dpo --pref_loss orpo with pref_beta",
       kLf},
      {"kto_chosen_weight", kNumber, "[1.0]", kNoEffect, kOtherStages, kLf},
      {"kto_rejected_weight", kNumber, "[1.0]", kNoEffect, kOtherStages, kLf},
      honoured("simpo_gamma", "simpo_gamma"),
      {"ppo_buffer_size", kInteger, "[1]", kNoEffect, kOtherStages, kLf},
      {"ppo_epochs", kInteger, "[4]", kNoEffect, kOtherStages, kLf},
      {"ppo_score_norm", kBool, "[false]", kNoEffect, kOtherStages, kLf},
      {"ppo_target", kNumber, "[6.0]", kNoEffect, kOtherStages, kLf},
      {"ppo_whiten_rewards", kBool, "[false]", kNoEffect, kOtherStages, kLf},
      {"ref_model", kText, "[null]", kRefused,
       "--stage dpo's reference is the model being trained with its adapter switched off (LoRA, P-Tuning) or a "
       "frozen copy of its initial weights: drop the option",
       kLf, "a separate reference model"},
      {"ref_model_adapters", kText, "[null]", kRefused, "the reference model is the base model: drop the option", kLf,
       "adapters on the reference model"},
      {"ref_model_quantization_bit", kInteger, "[null]", kNoEffect, "the reference model is never quantised", kLf},
      {"reward_model", kText, "[null]", kNoEffect, kOtherStages, kLf},
      {"reward_model_adapters", kText, "[null]", kNoEffect, kOtherStages, kLf},
      {"reward_model_quantization_bit", kInteger, "[null]", kNoEffect, kOtherStages, kLf},
      {"reward_model_type", kText, "[\"lora\"]", kNoEffect, kOtherStages, kLf},
      {"ld_alpha", kNumber, "[null]", kRefused, "drop the option: answers are scored by all their tokens", kLf,
       "LD-DPO's down-weighting of the verbose part of longer answers"},

      // FinetuningArguments: GaloreArguments, ApolloArguments, BAdamArgument.
      {"use_galore", kBool, "[false]", kRefused, kAdamW, kLf, "GaLore (gradient low-rank projection)"},
      {"galore_target", kText, "[\"all\"]", kNoEffect, kNoGalore, kLf},
      {"galore_rank", kInteger, "[16]", kNoEffect, kNoGalore, kLf},
      {"galore_update_interval", kInteger, "[200]", kNoEffect, kNoGalore, kLf},
      {"galore_scale", kNumber, "[2.0]", kNoEffect, kNoGalore, kLf},
      {"galore_proj_type", kText, "[\"std\"]", kNoEffect, kNoGalore, kLf},
      {"galore_layerwise", kBool, "[false]", kNoEffect, kNoGalore, kLf},
      {"use_apollo", kBool, "[false]", kRefused, kAdamW, kLf, "APOLLO (the approximated-gradient-scaling optimizer)"},
      {"apollo_target", kText, "[\"all\"]", kNoEffect, kNoApollo, kLf},
      {"apollo_rank", kInteger, "[16]", kNoEffect, kNoApollo, kLf},
      {"apollo_update_interval", kInteger, "[200]", kNoEffect, kNoApollo, kLf},
      {"apollo_scale", kNumber, "[32.0]", kNoEffect, kNoApollo, kLf},
      {"apollo_proj", kText, "[\"random\"]", kNoEffect, kNoApollo, kLf},
      {"apollo_proj_type", kText, "[\"std\"]", kNoEffect, kNoApollo, kLf},
      {"apollo_scale_type", kText, "[\"channel\"]", kNoEffect, kNoApollo, kLf},
      {"apollo_layerwise", kBool, "[false]", kNoEffect, kNoApollo, kLf},
      {"apollo_scale_front", kBool, "[false]", kNoEffect, kNoApollo, kLf},
      {"use_badam", kBool, "[false]", kRefused, kAdamW, kLf, "BAdam (block-coordinate Adam)"},
      {"badam_mode", kText, "[\"layer\"]", kNoEffect, kNoBadam, kLf},
      {"badam_start_block", kInteger, "[null]", kNoEffect, kNoBadam, kLf},
      {"badam_switch_mode", kText, "[\"ascending\", null]", kNoEffect, kNoBadam, kLf},
      {"badam_switch_interval", kInteger, "[50, null]", kNoEffect, kNoBadam, kLf},
      {"badam_update_ratio", kNumber, "[0.05]", kNoEffect, kNoBadam, kLf},
      {"badam_mask_mode", kText, "[\"adjacent\"]", kNoEffect, kNoBadam, kLf},
      {"badam_verbose", kInteger, "[0]", kNoEffect, kNoBadam, kLf},
      {"badam_switch_block_every", kInteger, "[50]", kNoEffect, kNoBadam, kLf},  // 0.6 and 0.7, to the interval

      // FinetuningArguments: SwanLabArguments.
      {"use_swanlab", kBool, "[false]", kNoEffect, kNoSwanlab, kLf},
      {"swanlab_project", kText, "[\"llamafactory\"]", kNoEffect, kNoSwanlab, kLf},
      {"swanlab_workspace", kText, "[null]", kNoEffect, kNoSwanlab, kLf},
      {"swanlab_run_name", kText, "[null]", kNoEffect, kNoSwanlab, kLf},
      {"swanlab_mode", kText, "[\"cloud\"]", kNoEffect, kNoSwanlab, kLf},
      {"swanlab_api_key", kText, "[null]", kNoEffect, kNoSwanlab, kLf},
      {"swanlab_logdir", kText, "[null]", kNoEffect, kNoSwanlab, kLf},
      {"swanlab_lark_webhook_url", kText, "[null]", kNoEffect, kNoSwanlab, kLf},
      {"swanlab_lark_secret", kText, "[null]", kNoEffect, kNoSwanlab, kLf},

      // FinetuningArguments' own fields.
      {"pure_bf16", kBool, "[false]", kRefused,
       "zerotune keeps fp32 master weights under bf16: drop the option (bf16 true trains in mixed precision)", kLf,
       "pure bf16 training"},
      honoured("stage", "stage"),
      honoured("finetuning_type", "finetuning_type"),
      {"use_llama_pro", kBool, "[false]", kRefused, "train the model's own layers: drop the option", kLf,
       "LLaMA Pro's block expansion"},
      {"lora_bf16_mode", kBool, "[false]", kRefused,  // 0.5: the trained LoRA weights left in bf16
       "zerotune keeps the trained weights in fp32 (bf16 true computes in bf16): drop the option", kLf,
       "LoRA weights in bf16"},
      {"ppo_logger", kText, "[null]", kNoEffect, kOtherStages, kLf},  // 0.5 and 0.6
      {"disable_version_checking", kBool, "[false]", kNoEffect,       // 0.5
       "zerotune checks no Python library versions", kLf},
      {"use_adam_mini", kBool, "[false]", kRefused, kAdamW, kLf, "Adam-mini"},
      {"use_mca", kBool, "[false]", kRefused, kDataParallel, kLf, "Megatron-Core training (mcore_adapter)"},
      {"use_megatron_bridge", kBool, "[false]", kRefused, kDataParallel, kLf, "Megatron Bridge training"},
      {"megatron_bridge_args", kObject, "[null]", kNoEffect, kNoMegatron, kLf},
      {"use_hyper_parallel", kBool, "[false]", kRefused, kDataParallel, kLf, "HyperParallel training"},
      {"hyper_parallel_args", kText, "[null]", kNoEffect, "HyperParallel is not used", kLf},
      {"hyper_parallel_cp_size", kInteger, "[1]", kRefused, "each sequence trains on one rank: drop the option", kLf,
       "context parallelism"},
      {"use_muon", kBool, "[false]", kRefused, kAdamW, kLf, "the Muon optimizer"},
      {"use_dft_loss", kBool, "[false]", kRefused, kCrossEntropy, kLf, "the DFT loss"},
      {"use_asft_loss", kBool, "[false]", kRefused, kCrossEntropy, kLf, "the ASFT loss"},
      {"asft_alpha", kNumber, "[0.1]", kNoEffect, "the ASFT loss is not used", kLf},
      {"use_eaft_loss", kBool, "[false]", kRefused, kCrossEntropy, kLf, "the EAFT loss"},
      {"eaft_alpha", kNumber, "[1.0]", kNoEffect, "the EAFT loss is not used", kLf},
      {"freeze_vision_tower", kBool, "[true]", kNoEffect, kTextOnly, kLf},
      {"freeze_multi_modal_projector", kBool, "[true]", kNoEffect, kTextOnly, kLf},
      {"freeze_language_model", kBool, "[false]", kRefused,
       "a text-only model would have nothing left to train: drop the option", kLf, "freezing the language model"},
      {"train_mm_proj_only", kBool, "[false]", kNoEffect, kTextOnly, kLf},  // older releases
      {"compute_accuracy", kBool, "[false]", kNoEffect, kLossOnly, kLf},
      {"disable_shuffling", kBool, "[false]", kRefused,
       "zerotune trains the samples in an order shuffled by seed: drop the option", kLf,
       "training the samples in file order"},
      {"early_stopping_steps", kInteger, "[null]", kRefused,
       "zerotune trains to max_steps or num_train_epochs: drop the option", kLf, "early stopping"},
      {"plot_loss", kBool, "*", kNoEffect, "zerotune draws training_loss.png and training_lr.png anyway", kLf},
      {"include_effective_tokens_per_second", kBool, "*", kNoEffect, kTokensPerSecondLogged, kLf},

      // GeneratingArguments (`llamafactory-cli chat` and prediction). max_length is also
      // zerotune's sample length: beside cutoff_len in one file it is read as this generation
      // limit and warned about (argument_reader.cpp).
      {"do_sample", kBool, "[true]", kNoEffect, kInference, kLf},
      {"temperature", kNumber, "[0.95]", kNoEffect, kInference, kLf},
      {"top_p", kNumber, "[0.7]", kNoEffect, kInference, kLf},
      {"top_k", kInteger, "[50]", kNoEffect, kInference, kLf},
      {"num_beams", kInteger, "[1]", kNoEffect, kInference, kLf},
      honoured("max_length", "max_length"),
      {"max_new_tokens", kInteger, "[1024]", kNoEffect, kInference, kLf},
      {"repetition_penalty", kNumber, "[1.0]", kNoEffect, kInference, kLf},
      {"length_penalty", kNumber, "[1.0]", kNoEffect, kInference, kLf},
      {"skip_special_tokens", kBool, "[true]", kNoEffect, kInference, kLf},
  };
  return table;
}

}  // namespace zt::train
