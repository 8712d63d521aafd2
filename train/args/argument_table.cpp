#include "train/args/argument_table.h"

#include "train/optim/lr_scheduler.h"

namespace zt::train {

const std::vector<ArgumentSpec>& argument_table() {
  using A = TrainingArguments;
  static const std::vector<ArgumentSpec> table = {
      {"model_name_or_path", &A::model_name_or_path, {}, "HF model folder to fine-tune (required)"},
      {"output_dir", &A::output_dir, {}, "where checkpoints and the final model go (required)"},
      {"overwrite_output_dir", &A::overwrite_output_dir, {}, "allow a non-empty output_dir"},
      {"deepspeed", &A::deepspeed, {}, "path of a DeepSpeed ds_config.json"},
      {"num_train_epochs", &A::num_train_epochs, {}, "epochs to train (max_steps > 0 overrides)"},
      {"max_steps", &A::max_steps, {}, "optimizer steps to train; -1: from num_train_epochs"},
      {"per_device_train_batch_size", &A::per_device_train_batch_size, {}, "micro-batch per device"},
      {"per_device_eval_batch_size", &A::per_device_eval_batch_size, {}, "evaluation batch per device"},
      {"gradient_accumulation_steps", &A::gradient_accumulation_steps, {}, "micro-batches per optimizer step"},
      {"learning_rate", &A::learning_rate, {}, "peak learning rate"},
      {"weight_decay", &A::weight_decay, {}, "decoupled weight decay (not on biases and norms)"},
      {"adam_beta1", &A::adam_beta1, {}, "AdamW beta1"},
      {"adam_beta2", &A::adam_beta2, {}, "AdamW beta2"},
      {"adam_epsilon", &A::adam_epsilon, {}, "AdamW epsilon"},
      {"max_grad_norm", &A::max_grad_norm, {}, "gradient clipping norm; 0 disables"},
      {"lr_scheduler_type", &A::lr_scheduler_type, hf_schedule_names(), "learning-rate schedule"},
      {"lr_scheduler_kwargs",
       &A::lr_scheduler_kwargs,
       {},
       "JSON object of schedule options, e.g. {\"min_lr_rate\": 0.1}"},
      {"warmup_ratio", &A::warmup_ratio, {}, "share of the steps spent warming up"},
      {"warmup_steps", &A::warmup_steps, {}, "warmup steps (overrides warmup_ratio when > 0)"},
      {"logging_steps", &A::logging_steps, {}, "log every N optimizer steps"},
      {"save_strategy", &A::save_strategy, {}, "when to save checkpoints"},
      {"save_steps", &A::save_steps, {}, "save every N steps (save_strategy steps)"},
      {"save_total_limit", &A::save_total_limit, {}, "keep at most N checkpoints"},
      {"save_only_model", &A::save_only_model, {}, "checkpoints without optimizer state (cannot resume)"},
      {"eval_strategy", &A::eval_strategy, {}, "when to evaluate"},
      {"eval_steps", &A::eval_steps, {}, "evaluate every N steps (default: logging_steps)"},
      {"report_to",
       &A::report_to,
       {"none"},
       "integrations: none (no tensorboard or wandb); metrics go to train_log.jsonl, trainer_state.json and the log"},
      {"bf16", &A::bf16, {}, "train in bfloat16 (fp32 master weights)"},
      {"fp16", &A::fp16, {}, "train in float16 with dynamic loss scaling"},
      {"gradient_checkpointing", &A::gradient_checkpointing, {}, "recompute activations in backward"},
      {"dataloader_num_workers", &A::dataloader_num_workers, {}, "threads tokenising the data; 0: the main thread"},
      {"resume_from_checkpoint", &A::resume_from_checkpoint, {}, "a checkpoint folder, or true for the latest"},
      {"seed", &A::seed, {}, "random seed"},
      {"device", &A::device, {}, "auto, cpu, cuda or cuda:N"},
      {"attn_impl", &A::attn_impl, {"zerotune", "cudnn"}, "attention kernels: zerotune's or cuDNN's (GPU, bf16/fp16)"},
      {"train_file", &A::train_file, {}, "training data: alpaca, ShareGPT or plain-text JSON/JSONL (required)"},
      {"validation_file", &A::validation_file, {}, "evaluation data, same formats"},
      {"template", &A::template_name, {}, "chat template: qwen, chatglm3, glm4, chatglm2, none"},
      {"max_length", &A::max_length, {}, "longest sample in tokens; see --overlong_samples"},
      {"overlong_samples",
       &A::overlong_samples,
       {},
       "samples over max_length: truncate (cut the prompt first, keeping the last reply) or skip; both counted in the "
       "log"},
      {"train_on_prompt", &A::train_on_prompt, {}, "compute the loss on prompt tokens too"},
      {"packing", &A::packing, {}, "pack samples into full-length rows (no cross-attention)"},
      {"padding",
       &A::padding,
       {},
       "none: a micro-batch's samples back to back, nothing padded; longest: each padded with the pad token to the "
       "longest of its micro-batch (attention stays inside each sample either way)"},
      {"finetuning_type", &A::finetuning_type, {}, "what is trained"},
      {"freeze_trainable_layers", &A::freeze_trainable_layers, {}, "freeze: train the last N layers"},
      {"freeze_trainable_modules", &A::freeze_trainable_modules, {}, "freeze: module names to train, or all"},
      {"lora_rank", &A::lora_rank, {}, "LoRA rank r"},
      {"lora_alpha", &A::lora_alpha, {}, "LoRA alpha (default 2 * lora_rank)"},
      {"lora_dropout", &A::lora_dropout, {}, "LoRA dropout"},
      {"lora_target", &A::lora_target, {}, "comma-separated module names, or all"},
      {"pre_seq_len", &A::pre_seq_len, {}, "P-Tuning v2 prefix length"},
      {"prefix_projection", &A::prefix_projection, {}, "P-Tuning v2 with the MLP reparameterisation"},
      {"ddp_timeout", &A::ddp_timeout, {}, "seconds a collective may take before every rank stops"},
      {"inprocess_ranks", &A::inprocess_ranks, {}, "run N data-parallel ranks as threads of this process"},
      {"zero_trace",
       &A::zero_trace,
       {},
       "trace every collective (op, label, bytes, start, duration) to output_dir/zero_trace_rank{R}.jsonl and the log"},
  };
  return table;
}

const std::vector<std::pair<std::string, std::string>>& argument_aliases() {
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"evaluation_strategy", "eval_strategy"},
  };
  return aliases;
}

}  // namespace zt::train
