// HF TrainingArguments' fields (transformers 4.40 to 5.x, and Seq2SeqTrainingArguments') that
// `zerotune train` accepts without honouring: each with its default and why it has no effect,
// or why a value other than its default is refused. The honoured ones are in argument_table.cpp.
#include "train/args/other_arguments.h"

namespace zt::train {
namespace {

using enum ValueKind;
using enum Verdict;

constexpr const char* kNoHub = "zerotune uploads nothing; the model and checkpoints are in output_dir";
constexpr const char* kNoTrackio =
    "only Trackio reads it, and zerotune reports to TensorBoard alone (--report_to tensorboard); every metric is in "
    "output_dir/train_log.jsonl, trainer_state.json and the log";
constexpr const char* kLossOnly = "evaluation computes the loss only (eval_loss)";
constexpr const char* kNoCompile = "zerotune's kernels are compiled ahead of time; there is nothing to compile";
constexpr const char* kNoFsdp =
    "zerotune shards with ZeRO through --deepspeed (stage 3 shards parameters as full_shard does); without a "
    "DeepSpeed config every rank holds the whole model";
constexpr const char* kInMemory =
    "the data is tokenised in memory before the first step; nothing loads during training";
constexpr const char* kGenerate = "evaluation computes the loss only; `zerotune generate` generates";
constexpr const char* kNoTpu = "zerotune runs on CUDA GPUs and CPUs";
constexpr const char* kNoBestCheckpoint = "zerotune keeps no best checkpoint (load_best_model_at_end is not supported)";
constexpr const char* kEvaluationPrecision =
    "evaluation runs in the training precision; only eval_loss's last digits could differ";
// Accelerate's options as zerotune trains anyway: each rank its own micro-batches of a fixed
// size from one seeded order (dispatch_batches false is what it does too).
constexpr const char* kDefaultAcceleratorConfig =
    R"([null, {"split_batches": [false], "dispatch_batches": [null, false], "even_batches": [true],
    "use_seedable_sampler": [true], "non_blocking": [false], "gradient_accumulation_kwargs": [null],
    "use_configured_state": [false]}])";
constexpr const char* kPairCut =
    "zerotune cuts each pair to --max_length as LLaMA-Factory's cutoff_len does (the prompt and the longer answer "
    "share it), not the prompt and the answers to limits of their own";

}  // namespace

const std::vector<OtherArgument>& transformers_other_arguments() {
  static const std::vector<OtherArgument> table = {
      // Evaluation and prediction.
      {"do_predict", kBool, "[false]", kNoEffect, "zerotune train predicts nothing; `zerotune generate` does"},
      {"prediction_loss_only", kBool, "*", kNoEffect, kLossOnly},
      {"eval_accumulation_steps", kInteger, "[null]", kNoEffect, kLossOnly},
      {"eval_do_concat_batches", kBool, "[true]", kNoEffect, kLossOnly},
      {"eval_use_gather_object", kBool, "[false]", kNoEffect, kLossOnly},
      {"batch_eval_metrics", kBool, "[false]", kNoEffect, kLossOnly},
      {"include_for_metrics", kList, "[[], null]", kNoEffect, kLossOnly},
      {"include_inputs_for_metrics", kBool, "[false]", kNoEffect, kLossOnly},
      {"label_names", kList, "[null]", kNoEffect,
       "the labels are made from the data (the replies, or every token of a text), not read from a column"},
      {"metric_for_best_model", kText, "[null, \"loss\", \"eval_loss\"]", kNoEffect, kNoBestCheckpoint},
      {"greater_is_better", kBool, "[null, false]", kNoEffect, kNoBestCheckpoint},
      {"load_best_model_at_end", kBool, "[false]", kRefused,
       "zerotune's final model is the last step's; export another step's with `zerotune export --checkpoint "
       "output_dir/checkpoint-N`"},
      {"predict_with_generate", kBool, "[false]", kNoEffect, kGenerate},
      {"generation_max_length", kInteger, "[null]", kNoEffect, kGenerate},
      {"generation_num_beams", kInteger, "[null]", kNoEffect, kGenerate},
      {"generation_config", kText, "[null]", kNoEffect, kGenerate},
      {"use_legacy_prediction_loop", kBool, "[false]", kNoEffect, "zerotune has one evaluation loop"},
      {"past_index", kInteger, "[-1]", kNoEffect, "only models with mems (Transformer-XL, XLNet) use it"},

      // Logging and reporting.
      {"log_level", kText, "[\"passive\"]", kNoEffect, "set ZT_LOG_LEVEL=debug|info|warn|error instead"},
      {"log_level_replica", kText, "[\"warning\", \"passive\"]", kNoEffect,
       "ranks other than 0 print warnings and errors; ZT_LOG_ALL_RANKS=1 makes them print everything"},
      {"log_on_each_node", kBool, "[true]", kNoEffect, "rank 0 prints the log; ZT_LOG_ALL_RANKS=1 makes every rank"},
      {"logging_nan_inf_filter", kBool, "[true]", kNoEffect,
       "it changes only what is logged; zerotune logs each step's loss as computed"},
      {"project", kText, "[\"huggingface\"]", kNoEffect, kNoTrackio},
      {"trackio_space_id", kText, "[\"trackio\", null]", kNoEffect, kNoTrackio},
      {"ray_scope", kText, "[\"last\"]", kNoEffect, "hyperparameter search is not part of zerotune train"},
      {"include_tokens_per_second", kBool, "*", kNoEffect, kTokensPerSecondLogged},
      {"include_num_input_tokens_seen", kText, "*", kNoEffect, "num_input_tokens_seen is in trainer_state.json anyway"},
      {"skip_memory_metrics", kBool, "*", kNoEffect,
       "GPU memory (memory_allocated_gib, memory_peak_gib) is in every log entry anyway"},
      {"debug", kText, "[\"\", [], null]", kNoEffect,
       "HF's debug options have no counterpart; fp16 overflows are logged as skipped steps"},
      {"tpu_metrics_debug", kBool, "[false]", kNoEffect, kNoTpu},

      // Saving and the Hub.
      {"save_safetensors", kBool, "[true]", kNoEffect, "zerotune writes safetensors only"},
      {"save_on_each_node", kBool, "[false]", kNoEffect,
       "rank 0 writes the model and the trainer state, each rank its optimizer state; put output_dir where "
       "every node reads it"},
      {"restore_callback_states_from_checkpoint", kBool, "[false]", kNoEffect, "zerotune has no callbacks"},
      {"enable_jit_checkpoint", kBool, "[false]", kNoEffect,
       "zerotune saves by --save_strategy only; a stopped run resumes from its last checkpoint"},
      {"push_to_hub", kBool, "[false]", kNoEffect, kNoHub},
      {"hub_model_id", kText, "[null]", kNoEffect, kNoHub},
      {"hub_strategy", kText, "[\"every_save\"]", kNoEffect, kNoHub},
      {"hub_token", kText, "[null]", kNoEffect, kNoHub},
      {"hub_private_repo", kBool, "[null, false]", kNoEffect, kNoHub},
      {"hub_always_push", kBool, "[false]", kNoEffect, kNoHub},
      {"hub_revision", kText, "[null]", kNoEffect, kNoHub},
      {"push_to_hub_model_id", kText, "[null]", kNoEffect, kNoHub},
      {"push_to_hub_organization", kText, "[null]", kNoEffect, kNoHub},
      {"push_to_hub_token", kText, "[null]", kNoEffect, kNoHub},

      // Data loading.
      {"remove_unused_columns", kBool, "[true]", kNoEffect, "zerotune reads only the columns of its data formats"},
      {"dataloader_pin_memory", kBool, "[true]", kNoEffect, kInMemory},
      {"dataloader_persistent_workers", kBool, "[false]", kNoEffect, kInMemory},
      {"dataloader_prefetch_factor", kInteger, "[null]", kNoEffect, kInMemory},
      {"dispatch_batches", kBool, "[null]", kNoEffect,
       "each rank builds its own micro-batches from the same shuffled order"},
      {"dataloader_drop_last", kBool, "[false]", kRefused,
       "zerotune trains the last, short batch of every epoch; dropping it would train on other data"},
      {"group_by_length", kBool, "[false]", kRefused,
       "zerotune trains the samples in an order shuffled by --seed; grouping them by length would change it"},
      {"train_sampling_strategy", kText, "[\"random\"]", kRefused,
       "zerotune trains the samples in an order shuffled by --seed (random); another order would change the run"},
      {"length_column_name", kText, "[\"length\"]", kNoEffect, "only group_by_length reads it"},
      {"sortish_sampler", kBool, "[false]", kRefused,
       "zerotune trains the samples in an order shuffled by --seed; sorting them would change it"},
      {"ignore_data_skip", kBool, "[false]", kRefused,
       "zerotune resumes at the sample the checkpoint stopped at; restarting the epoch would train on other "
       "data"},

      // Precision, kernels, compilation.
      {"half_precision_backend", kText, "[\"auto\"]", kNoEffect,
       "zerotune has one half-precision path: fp32 master weights, dynamic loss scaling for fp16"},
      {"fp16_opt_level", kText, "[\"O1\"]", kNoEffect,
       "only apex AMP reads it; zerotune keeps fp32 master weights and scales the fp16 loss dynamically"},
      {"bf16_full_eval", kBool, "[false]", kNoEffect, kEvaluationPrecision},
      {"fp16_full_eval", kBool, "[false]", kNoEffect, kEvaluationPrecision},
      {"torch_compile", kBool, "[false]", kNoEffect, kNoCompile},
      {"torch_compile_backend", kText, "[null]", kNoEffect, kNoCompile},
      {"torch_compile_mode", kText, "[null]", kNoEffect, kNoCompile},
      {"torchdynamo", kText, "[null]", kNoEffect, kNoCompile},
      {"jit_mode_eval", kBool, "[false]", kNoEffect, kNoCompile},
      {"use_ipex", kBool, "[false]", kNoEffect, "zerotune's CPU kernels are its own; Intel's extension is PyTorch's"},
      {"use_liger_kernel", kBool, "[false]", kNoEffect, kFusedKernelsAlwaysRun},
      {"liger_kernel_config", kObject, "[null]", kNoEffect, kFusedKernelsAlwaysRun},
      {"use_cache", kBool, "[false]", kNoEffect, "training keeps no KV cache"},
      {"torch_empty_cache_steps", kInteger, "[null]", kNoEffect,
       "zerotune's caching allocator reuses its blocks; nothing needs emptying"},
      {"auto_find_batch_size", kBool, "[false]", kNoEffect,
       "zerotune does not retry with a smaller batch; `zerotune estimate` tells what fits"},
      {"gradient_checkpointing_kwargs", kObject, "[null, {}]", kNoEffect,
       "zerotune's checkpointing recomputes each layer in backward; use_reentrant and torch.utils.checkpoint's "
       "other options do not apply"},
      {"use_mps_device", kBool, "[false]", kNoEffect, kNoTpu},
      {"tpu_num_cores", kInteger, "[null]", kNoEffect, kNoTpu},

      // Optimizer and loss.
      {"optim_args", kText, "[null, \"\"]", kNoEffect,
       "only optimizers zerotune does not offer read it; AdamW takes adam_beta1, adam_beta2, adam_epsilon and "
       "weight_decay"},
      {"optim_target_modules", kList, "[null]", kNoEffect,
       "only GaLore and APOLLO read it, and zerotune does not offer them"},
      {"adafactor", kBool, "[false]", kRefused, "Adafactor is another optimizer; zerotune's is AdamW"},
      {"label_smoothing_factor", kNumber, "[0]", kRefused,
       "zerotune's loss is plain cross-entropy (fused with the LM head); smoothing the labels would change it"},
      {"neftune_noise_alpha", kNumber, "[null]", kRefused,
       "NEFTune's noise on the embeddings is not implemented; training without it gives another model"},
      {"average_tokens_across_devices", kBool, "[true]", kNoEffect,
       "zerotune divides the loss by the label tokens of the whole global batch, as true does; false differs "
       "only with several devices"},

      // Distributed training.
      {"local_rank", kInteger, "[-1]", kNoEffect, "the rank comes from the launcher's environment (RANK, LOCAL_RANK)"},
      {"ddp_backend", kText, "[null]", kNoEffect, "zerotune uses NCCL between GPUs and Gloo between CPU processes"},
      {"ddp_find_unused_parameters", kBool, "[null]", kNoEffect,
       "no DistributedDataParallel wraps the model; zerotune reduces gradients itself"},
      {"ddp_bucket_cap_mb", kInteger, "[null]", kNoEffect,
       "gradients are reduced in ZeRO buckets of reduce_bucket_size (the DeepSpeed config)"},
      {"ddp_broadcast_buffers", kBool, "[null]", kNoEffect,
       "the models have no buffers; every rank loads the same weights"},
      {"fsdp", kText, "[\"\", false, null, []]", kNoEffect, kNoFsdp},
      {"fsdp_config", kObject, "[null]", kNoEffect, kNoFsdp},
      {"fsdp_min_num_params", kInteger, "[0]", kNoEffect, kNoFsdp},
      {"fsdp_transformer_layer_cls_to_wrap", kText, "[null]", kNoEffect, kNoFsdp},
      // The default AcceleratorConfig, as TrainingArguments.to_json_string() writes it out.
      {"accelerator_config", kObject, kDefaultAcceleratorConfig, kNoEffect,
       "Accelerate is not used (its split_batches would change the batch, and is refused)"},
      {"split_batches", kBool, "[null, false]", kRefused,
       "it makes per_device_train_batch_size the size of the whole batch; zerotune's is per device (divide it by "
       "the number of ranks)"},
      {"tp_size", kInteger, "[0, 1]", kRefused,
       "tensor-parallel training would shrink the data-parallel size and so the global batch; zerotune trains "
       "data parallel (tensor parallelism is `zerotune generate --tp`)"},
      {"parallelism_config", kObject, "[null]", kRefused,
       "Accelerate's tensor, context and sharded parallelism change how the batch is split; zerotune trains "
       "data parallel with ZeRO (--deepspeed)"},
      {"mp_parameters", kText, "[\"\"]", kNoEffect, "SageMaker model parallelism is not used"},

      // The training scripts' own (stanford_alpaca, FastChat, Qwen's finetune.py), beside data_path,
      // model_max_length and the LoRA names they share (lora_r, lora_target_modules, q_lora, use_lora).
      {"lazy_preprocess", kBool, "[false]", kNoEffect,
       "zerotune tokenises the data once, before the first step (--dataloader_num_workers threads)"},
      {"lora_bias", kText, "[\"none\"]", kRefused,
       "LoRA trains the adapters alone, no bias (lora_bias none): drop the option"},
      {"lora_weight_path", kText, "[\"\"]", kNoEffect,
       "FastChat's train_lora.py and Qwen's finetune.py declare it but never read it: their adapters start new, "
       "as zerotune's do"},

      // TRL's DPOConfig (a TrainingArguments of its own) beside the names --stage dpo honours
      // (beta, loss_type, label_smoothing, rpo_alpha, reference_free, precompute_ref_log_probs).
      {"max_prompt_length", kInteger, "[null]", kNoEffect, kPairCut},
      {"max_completion_length", kInteger, "[null]", kNoEffect, kPairCut},
      {"truncation_mode", kText, "[\"keep_end\", \"keep_start\"]", kNoEffect,
       "zerotune cuts each pair to --max_length as LLaMA-Factory's cutoff_len does"},
      {"disable_dropout", kBool, "[true]", kRefused,
       "--stage dpo trains without dropout (LoRA's too), as TRL's default disable_dropout does: drop the option",
       Origin::kTransformers, "preference training with dropout"},
      {"sync_ref_model", kBool, "[false]", kRefused, "the reference stays the initial model: drop the option",
       Origin::kTransformers, "TR-DPO's reference updates"},
      {"use_weighting", kBool, "[false]", kRefused, "drop the option", Origin::kTransformers,
       "WPO's weighting of the pairs"},
      {"f_divergence_type", kText, "[\"reverse_kl\"]", kRefused, "drop the option (reverse KL is DPO's)",
       Origin::kTransformers, "f-DPO's other divergences"},
      {"generate_during_eval", kBool, "[false]", kNoEffect, "zerotune generates nothing while training"},
      {"padding_value", kInteger, "[null]", kNoEffect, "pairs are packed without padding, or padded with --padding"},
      {"label_pad_token_id", kInteger, "[-100]", kNoEffect, "the answers' labels are the only ones scored"},
  };
  return table;
}

}  // namespace zt::train
