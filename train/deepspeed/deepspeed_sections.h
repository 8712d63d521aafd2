// What zerotune does with each section of a ds_config.json that DeepSpeed reads besides the
// batch, optimizer, scheduler, precision and ZeRO blocks (runtime/config.py and the config
// classes it builds), and the keys DeepSpeed reads in each. Read by deepspeed_features.cpp;
// private to train/deepspeed/.
#pragma once

#include <string>
#include <vector>

namespace zt::train {

enum class Effect {
  kNone,    // changes nothing in a zerotune run: accepted silently
  kWarn,    // a feature zerotune does not have: one warning while on, and the run goes on
  kRefuse,  // on, it would train otherwise than the config says: an error
  kHonour,  // zerotune does what it asks (read elsewhere): no word, and a near miss of its key is an error
};

struct Section {
  const char* key;
  Effect effect;
  const char* what;  // what the section asks for while on
  const char* why;   // why it has no effect (kWarn), or what to do instead (kRefuse)
  // The keys that turn it on (any of them not false, 0 or null); none: on by being present.
  std::vector<std::string> switches;
  // The other keys DeepSpeed reads in it; {"*"}: DeepSpeed hands the block on whole (to apex,
  // a checkpoint engine, a model-specific parser), so any key may be one it reads.
  std::vector<std::string> fields;
  bool nested_switches = false;  // on while any "enabled" inside it, at any depth, is on
};

inline const char* const kMonitorWhy = "it writes train_log.jsonl and loss-curve PNGs in --output_dir";
inline const char* const kPrecisionWhy = "the precision is fp16's or bf16's (their blocks, or --fp16/--bf16)";
inline const char* const kCheckpointWhy = "zerotune writes its own checkpoints";

inline const Section kSections[] = {
    // Honoured: train/report/tensorboard_destination.h reads its folder.
    {"tensorboard",
     Effect::kHonour,
     "DeepSpeed's TensorBoard monitor",
     "zerotune writes TensorBoard event files into output_path/job_name",
     {"enabled"},
     {"output_path", "job_name"}},
    {"wandb",
     Effect::kWarn,
     "DeepSpeed's Weights & Biases monitor",
     kMonitorWhy,
     {"enabled"},
     {"group", "team", "project"}},
    {"csv_monitor", Effect::kWarn, "DeepSpeed's CSV monitor", kMonitorWhy, {"enabled"}, {"output_path", "job_name"}},
    {"comet",
     Effect::kWarn,
     "DeepSpeed's Comet monitor",
     kMonitorWhy,
     {"enabled"},
     {"samples_log_interval", "project", "workspace", "api_key", "experiment_name", "experiment_key", "online",
      "mode"}},
    {"flops_profiler",
     Effect::kWarn,
     "DeepSpeed's FLOPs profiler",
     "it logs tokens/s and MFU itself",
     {"enabled"},
     {"recompute_fwd_factor", "profile_step", "module_depth", "top_modules", "detailed", "output_file"}},
    {"comms_logger",
     Effect::kWarn,
     "DeepSpeed's communication logger",
     "--zero_trace logs every collective",
     {"enabled"},
     {"prof_all", "prof_ops", "verbose", "debug"}},
    {"autotuning",
     Effect::kWarn,
     "DeepSpeed's autotuner",
     "`zerotune estimate` recommends a ZeRO stage, offload and micro-batch",
     {"enabled"},
     {"fast",
      "results_dir",
      "exps_dir",
      "overwrite",
      "start_profile_step",
      "end_profile_step",
      "metric",
      "metric_path",
      "tuner_type",
      "tuner_early_stopping",
      "tuner_num_trials",
      "arg_mappings",
      "model_info",
      "model_info_path",
      "mp_size",
      "max_train_batch_size",
      "min_train_batch_size",
      "max_train_micro_batch_size_per_gpu",
      "min_train_micro_batch_size_per_gpu",
      "num_tuning_micro_batch_sizes"}},
    // At the top level in DeepSpeed releases before quantize_training took it in.
    {"eigenvalue",
     Effect::kWarn,
     "DeepSpeed's Hessian eigenvalue estimate",
     "nothing in zerotune reads it",
     {"enabled"},
     {"verbose", "max_iter", "tol", "stability", "gas_boundary_resolution", "layer_name", "layer_num"}},
    {"progressive_layer_drop",
     Effect::kWarn,
     "progressive layer dropping",
     "every layer trains at every step",
     {"enabled"},
     {"theta", "gamma"}},
    {"curriculum_learning",
     Effect::kWarn,
     "DeepSpeed's sequence-length curriculum",
     "every sample trains at its full length",
     {"enabled"},
     {"curriculum_type", "min_difficulty", "max_difficulty", "schedule_type", "schedule_config"}},
    {"data_efficiency",
     Effect::kWarn,
     "DeepSpeed's data sampling and routing",
     "the Trainer's sampler orders the data and every token reaches every layer",
     {"enabled"},
     {"seed", "data_sampling", "data_routing"}},
    {"nebula",
     Effect::kWarn,
     "Nebula checkpointing",
     kCheckpointWhy,
     {"enabled"},
     {"enable_nebula_load", "nebula_load_path", "persistent_storage_path", "persistent_time_interval",
      "num_of_version_in_retention"}},
    {"datastates_ckpt", Effect::kWarn, "DataStates checkpointing", kCheckpointWhy, {}, {"*"}},
    {"hybrid_engine",
     Effect::kWarn,
     "DeepSpeed's hybrid engine, for generation inside RLHF training",
     "`zerotune train` trains only",
     {"enabled"},
     {"max_out_tokens", "inference_tp_size", "release_inference_cache", "pin_parameters", "tp_gather_partition_size",
      "enable_cuda_graph"}},
    {"amp", Effect::kWarn, "apex AMP", kPrecisionWhy, {"enabled"}, {"*"}},
    {"torch_autocast",
     Effect::kWarn,
     "torch.autocast",
     kPrecisionWhy,
     {"enabled"},
     {"dtype", "lower_precision_safe_modules"}},
    // DeepCompile today; torch.compile ("enabled", "backend", "kwargs") in DeepSpeed 0.13-0.14.3.
    {"compile",
     Effect::kWarn,
     "compiling the model",
     "its kernels are built ahead of time",
     {"deepcompile", "enabled"},
     {"free_activation", "free_activation_threshold", "offload_activation", "offload_activation_pin_memory",
      "offload_opt_states", "double_buffer", "symmetric_memory", "debug_log", "offload_parameters",
      "sync_before_reduce", "sync_after_reduce", "sync_before_allgather", "sync_after_allgather",
      "keep_int_input_tensors", "keep_all_input_tensors", "passes", "backend", "kwargs"}},
    {"activation_checkpointing",
     Effect::kWarn,
     "deepspeed.checkpointing's settings, which the models do not call",
     "pass --gradient_checkpointing",
     {"partition_activations", "contiguous_memory_optimization", "cpu_checkpointing", "number_checkpoints",
      "synchronize_checkpoint_boundary", "profile"},
     {}},
    {"sparse_attention",
     Effect::kWarn,
     "DeepSpeed's sparse attention kernels",
     "attention is dense",
     {},
     {"mode", "block", "different_layout_per_head", "num_local_blocks", "num_global_blocks", "attention",
      "horizontal_global_attention", "num_different_global_patterns", "num_random_blocks", "local_window_blocks",
      "global_block_indices", "global_block_end_indices", "num_sliding_window_blocks"}},
    {"compression_training",
     Effect::kWarn,
     "DeepSpeed's compression: quantization, pruning, layer reduction",
     "the weights stay whole, in the working dtype",
     {},
     {"weight_quantization", "activation_quantization", "sparse_pruning", "row_pruning", "head_pruning",
      "channel_pruning", "layer_reduction"},
     true},
    {"weight_quantization",
     Effect::kWarn,
     "DeepSpeed's weight quantization",
     "the weights stay in the working dtype",
     {},
     {"enabled", "num_bits", "q_type", "q_groups", "quantized_initialization", "post_init_quant"}},
    {"quantize_training",
     Effect::kWarn,
     "DeepSpeed's quantization-aware training (MoQ)",
     "the weights stay in the working dtype",
     {},
     {"*"}},
    // Elastic training picks the batch sizes for the number of GPUs: running without it would
    // train on other batches than those the config was written for.
    {"elasticity",
     Effect::kRefuse,
     "DeepSpeed's elastic training, which picks the batch sizes for the GPU count",
     "remove the block or set \"enabled\": false, and give the batch sizes (train_micro_batch_size_per_gpu, "
     "gradient_accumulation_steps) instead",
     {"enabled"},
     {"max_train_batch_size", "micro_batch_sizes", "min_gpus", "max_gpus", "num_gpus_per_node", "model_parallel_size",
      "min_time", "prefer_larger_batch", "ignore_non_elastic_batch_info", "version"}},
    {"expert_parallel",
     Effect::kRefuse,
     "DeepSpeed's AutoEP expert parallelism",
     "remove the block or set \"enabled\": false to train data-parallel, with ZeRO to shard the experts",
     {"enabled"},
     {"*"}},
    // Sections that change nothing here, whatever they hold.
    {"checkpoint",
     Effect::kNone,
     "how DeepSpeed writes its own checkpoints",
     kCheckpointWhy,
     {},
     {"tag_validation", "load_universal", "use_node_local_storage", "parallel_write", "checkpoint_serialization",
      "writer"}},
    {"aio",
     Effect::kNone,
     "NVMe offload's I/O",
     "zerotune offloads to host memory only",
     {},
     {"block_size", "queue_depth", "intra_op_parallelism", "single_submit", "overlap_events", "use_gds"}},
    {"timers", Effect::kNone, "DeepSpeed's throughput timers", "zerotune times its steps itself", {}, {"throughput"}},
    {"pipeline", Effect::kNone, "the pipeline engine's settings", "HF Trainer never builds a pipeline", {}, {"*"}},
};

// Top-level keys with no bearing on a run under HF Trainer, or whose every value zerotune honours.
inline const char* const kInertKeys[] = {
    "zero_allow_untested_optimizer",  // zerotune's optimizers are its own
    "zero_force_ds_cpu_optimizer",    // offload always steps zerotune's CPU Adam
    "dataloader_drop_last",           // the Trainer, not DeepSpeed, loads the data
    "vocabulary_size",                // DeepSpeed only warns about its alignment
    "log_level",                      // ZT_LOG_LEVEL sets zerotune's
    "use_data_before_expert_parallelism",
    "graph_harvesting",
    "dump_state",
    "disable_allgather",
    "managed_gradient_accumulation",
};

// tensor_parallel's keys besides autotp_size (TPTrainingConfig): the layout AutoTP would use.
inline const char* const kTensorParallelFields[] = {
    "dtype",
    "tp_overlap_comm",
    "tensor_parallel",
    "tp",
    "injection_policy_tuple",
    "partition_config",
    "preset_model",
    "keep_module_on_host",
    "replace_with_kernel_inject",
    "kernel_inject",
};

}  // namespace zt::train
