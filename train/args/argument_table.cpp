#include "train/args/argument_table.h"

#include <cmath>
#include <sstream>

#include "text/chat_template/chat_template.h"
#include "text/chat_template/template_names.h"
#include "train/optim/lr_scheduler.h"

namespace zt::train {
namespace {

// --template's help, its names read from the chat-template registry; kept for the table's life.
const std::string& template_help() {
  static const std::string help = "chat template: LLaMA-Factory's " + models::llama_factory_template_names() +
                                  " (rendered as LLaMA-Factory renders them) or a model family's own " +
                                  models::model_family_template_names() + " (default: the model's own template)";
  return help;
}

using OrderedJson = nlohmann::ordered_json;

// Whole numbers as integers, as HF writes its defaults (500, not 500.0).
OrderedJson number(double value) {
  if (value == std::floor(value) && std::abs(value) < 1e15) return static_cast<std::int64_t>(value);
  return value;
}

// HF's dict fields: given as an object in a file (or '{...}' as a flag), recorded as one.
OrderedJson text_or_object(const std::string& name, const std::string& text) {
  if (name != "deepspeed" && name != "lr_scheduler_kwargs") return text;
  OrderedJson parsed = OrderedJson::parse(text, nullptr, false);  // a path does not parse
  return parsed.is_object() ? parsed : OrderedJson(text);
}

// A list member as HF records it: one name as a string, several as a list.
OrderedJson list_or_text(const std::string& text) {
  if (text.find(',') == std::string::npos) return text;
  OrderedJson items = OrderedJson::array();
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

}  // namespace

const std::vector<ArgumentSection>& argument_sections() {
  using A = TrainingArguments;
  static const std::vector<ArgumentSection> sections = {
      {"Model and output",
       {
           {"model_name_or_path",
            &A::model_name_or_path,
            {},
            "HF model folder to fine-tune, or a hub id (Org/Name) found in or downloaded to the hub cache (required)"},
           {"model_revision", &A::model_revision, {}, "branch, tag or commit of a hub id's model"},
           {"output_dir", &A::output_dir, {}, "where checkpoints and the final model go (required)"},
           {"overwrite_output_dir", &A::overwrite_output_dir, {}, "allow a non-empty output_dir"},
           {"run_name", &A::run_name, {}, "the run's name in training_args.json and the log (default: output_dir)"},
           {"attn_impl",
            &A::attn_impl,
            {"zerotune", "cudnn"},
            "attention kernels: zerotune's (the Hopper kernels on H100/H200) or cuDNN's (GPU, bf16/fp16, no prefix)"},
       }},
      {"Data",
       {
           {"train_file",
            &A::train_file,
            {},
            "training data: alpaca, ShareGPT or plain-text JSON/JSONL, several separated by commas (required, "
            "or --dataset)"},
           {"validation_file", &A::validation_file, {}, "evaluation data, same formats"},
           {"dataset", &A::dataset, {}, "LLaMA-Factory: dataset names in dataset_dir/dataset_info.json, or files"},
           {"dataset_dir", &A::dataset_dir, {}, "LLaMA-Factory: the folder of dataset_info.json and the data"},
           {"eval_dataset", &A::eval_dataset, {}, "LLaMA-Factory: evaluation dataset names, or files"},
           {"val_size", &A::val_size, {}, "evaluate on this share of the training data (>= 1: that many samples)"},
           {"max_samples", &A::max_samples, {}, "train on the first N samples of each data file"},
           {"prompt_column", &A::prompt_column, {}, "ChatGLM's main.py: the record key of the prompt"},
           {"response_column", &A::response_column, {}, "ChatGLM's main.py: the record key of the answer"},
           {"history_column",
            &A::history_column,
            {},
            "ChatGLM's main.py: the record key of the earlier turns, [[prompt, answer], ...]"},
           {"max_source_length",
            &A::max_source_length,
            {},
            "ChatGLM's main.py: with --max_target_length, --max_length is their sum + 1 unless given"},
           {"max_target_length", &A::max_target_length, {}, "ChatGLM's main.py: see --max_source_length"},
           {"block_size",
            &A::block_size,
            {},
            "run_clm.py: chain the plain texts and cut them into blocks of N tokens, every token trained (default: "
            "the tokenizer's model_max_length, else min(1024, max_position_embeddings))"},
           {"validation_split_percentage",
            &A::validation_split_percentage,
            {},
            "run_clm.py: without --validation_file, the first N % of the training texts evaluate instead"},
           {"keep_linebreaks", &A::keep_linebreaks, {}, "run_clm.py: .txt lines keep their line break"},
           {"max_train_samples", &A::max_train_samples, {}, "run_clm.py: train on the first N blocks"},
           {"max_eval_samples", &A::max_eval_samples, {}, "run_clm.py: evaluate on the first N blocks"},
           {"preprocessing_num_workers",
            &A::preprocessing_num_workers,
            {},
            "run_clm.py: datasets' num_proc (the texts are chained per shard of that many) and tokenizing threads"},
           {"preprocessing_batch_size",
            &A::preprocessing_batch_size,
            {},
            "LLaMA-Factory: --stage pt with packing chains this many texts at a time (datasets' map batch_size) "
            "before cutting blocks"},
           {"template", &A::template_name, {}, template_help().c_str()},
           {"enable_thinking",
            &A::enable_thinking,
            {},
            "LLaMA-Factory: false trains qwen3 (and a Qwen3 model's own template) without thinking, every "
            "answer's thought removed and the empty one put in the prompt; null (in a file) keeps the data's "
            "thinking (default true)"},
           {"max_length", &A::max_length, {}, "longest sample in tokens; see --overlong_samples"},
           {"overlong_samples",
            &A::overlong_samples,
            {},
            "samples over max_length: truncate (each turn's prompt and reply cut in order, as LLaMA-Factory's "
            "cutoff_len does) or skip; both counted in the log"},
           {"train_on_prompt", &A::train_on_prompt, {}, "compute the loss on prompt tokens too"},
           {"packing", &A::packing, {}, "pack samples into full-length rows (no cross-attention)"},
           {"neat_packing", &A::neat_packing, {}, "LLaMA-Factory: packing without cross-attention (--packing)"},
           {"padding",
            &A::padding,
            {},
            "none: a micro-batch's samples back to back, nothing padded; longest: each padded with the pad token to "
            "the longest of its micro-batch (attention stays inside each sample either way)"},
           {"dataloader_num_workers",
            &A::dataloader_num_workers,
            {},
            "threads tokenising the data; 0: the main thread"},
       }},
      {"Training",
       {
           {"stage",
            &A::stage,
            {},
            "LLaMA-Factory's stage: sft (supervised fine-tuning on conversations through the chat template) or pt "
            "(pre-training on plain text: no template, every token trained, packed unless --packing false) or dpo "
            "(preference training on chosen and rejected answers: see Preference training); rm, ppo and kto are "
            "refused"},
           {"do_train",
            &A::do_train,
            {},
            "zerotune train always trains, as HF's Trainer.train() does whatever it says (false, its default, is in "
            "every TrainingArguments dump); zerotune evaluate evaluates"},
           {"do_eval", &A::do_eval, {}, "evaluate once more at the end of training"},
           {"num_train_epochs", &A::num_train_epochs, {}, "epochs to train (max_steps > 0 overrides)"},
           {"max_steps", &A::max_steps, {}, "optimizer steps to train; -1: from num_train_epochs"},
           {"per_device_train_batch_size", &A::per_device_train_batch_size, {}, "micro-batch per device"},
           {"per_device_eval_batch_size", &A::per_device_eval_batch_size, {}, "evaluation batch per device"},
           {"gradient_accumulation_steps", &A::gradient_accumulation_steps, {}, "micro-batches per optimizer step"},
           {"seed", &A::seed, {}, "random seed"},
           {"data_seed", &A::data_seed, {}, "seed of the data order (default: seed)"},
           {"full_determinism",
            &A::full_determinism,
            {},
            "bitwise repeatable runs on the GPU: the attention backward sums dQ in a fixed order (slower)"},
           {"device", &A::device, {}, "auto, cpu, cuda or cuda:N"},
           {"use_cpu", &A::use_cpu, {}, "train on the CPU (--device cpu)"},
       }},
      {"Optimizer and learning-rate schedule",
       {
           {"optim",
            &A::optim,
            {},
            "optimizer: AdamW under any of HF's names for it (adamw_torch, adamw_torch_fused, adamw_hf, "
            "adamw_apex_fused, adamw_torch_xla, adamw_torch_npu_fused); other optimizers are refused"},
           {"learning_rate", &A::learning_rate, {}, "peak learning rate"},
           {"weight_decay", &A::weight_decay, {}, "decoupled weight decay (not on biases and norms)"},
           {"adam_beta1", &A::adam_beta1, {}, "AdamW beta1"},
           {"adam_beta2", &A::adam_beta2, {}, "AdamW beta2"},
           {"adam_epsilon", &A::adam_epsilon, {}, "AdamW epsilon"},
           {"max_grad_norm", &A::max_grad_norm, {}, "gradient clipping norm; 0 disables"},
           {"lr_scheduler_type", &A::lr_scheduler_type, hf_schedule_names(),
            "learning-rate schedule, as transformers' get_scheduler computes it (docs/TRAINING.md, Schedules)"},
           {"lr_scheduler_kwargs",
            &A::lr_scheduler_kwargs,
            {},
            "JSON object of the schedule's options, e.g. {\"min_lr_rate\": 0.1} (cosine_with_min_lr), "
            "{\"num_cycles\": 3} (cosine_with_restarts), {\"lr_end\": 1e-7, \"power\": 2} (polynomial), "
            "{\"num_decay_steps\": 100} (warmup_stable_decay), {\"patience\": 2} (reduce_lr_on_plateau)"},
           {"warmup_ratio", &A::warmup_ratio, {}, "share of the steps spent warming up"},
           {"warmup_steps",
            &A::warmup_steps,
            {},
            "warmup steps, or a share of the steps when < 1 (overrides warmup_ratio)"},
       }},
      {"Precision and memory",
       {
           {"bf16", &A::bf16, {}, "train in bfloat16 (fp32 master weights)"},
           {"fp16", &A::fp16, {}, "train in float16 with dynamic loss scaling"},
           {"tf32", &A::tf32, {}, "TF32 tensor-op math for float32 matrix products on the GPU"},
           {"gradient_checkpointing", &A::gradient_checkpointing, {}, "recompute activations in backward"},
           {"disable_gradient_checkpointing",
            &A::disable_gradient_checkpointing,
            {},
            "LLaMA-Factory: no gradient checkpointing (its files turn it on by default)"},
       }},
      {"Fine-tuning method",
       {
           {"finetuning_type",
            &A::finetuning_type,
            {},
            "what is trained: every weight (full), the last layers (freeze), LoRA adapters (lora) or a P-Tuning v2 "
            "prefix (ptuning)"},
           {"freeze_trainable_layers", &A::freeze_trainable_layers, {}, "freeze: train the last N layers"},
           {"freeze_trainable_modules", &A::freeze_trainable_modules, {}, "freeze: module names to train, or all"},
           {"lora_rank", &A::lora_rank, {}, "LoRA rank r"},
           {"lora_alpha", &A::lora_alpha, {}, "LoRA alpha (default 2 * lora_rank)"},
           {"lora_dropout", &A::lora_dropout, {}, "LoRA dropout"},
           {"lora_target", &A::lora_target, {}, "module names (comma-separated, or words), or all", true},
           {"pre_seq_len", &A::pre_seq_len, {}, "P-Tuning v2 prefix length"},
           {"prefix_projection", &A::prefix_projection, {}, "P-Tuning v2 with the MLP reparameterisation"},
           {"use_lora",
            &A::use_lora,
            {},
            "Qwen's finetune.py: true trains LoRA (finetuning_type lora), false every weight (full)"},
       }},
      {"Quantization (QLoRA: LoRA on a 4-bit base; transformers' BitsAndBytesConfig names in brackets)",
       {
           {"quantization_bit", &A::quantization_bit, {}, "4: the frozen base linears in bitsandbytes' 4 bits"},
           {"quantization_method", &A::quantization_method, {"bnb", "bitsandbytes"}, "bitsandbytes (the only one)"},
           {"quantization_type",
            &A::quantization_type,
            {"nf4", "fp4"},
            "[bnb_4bit_quant_type] the 4-bit code book (default nf4; fp4 under load_in_4bit)"},
           {"double_quantization",
            &A::double_quantization,
            {},
            "[bnb_4bit_use_double_quant] quantize the block scales too (default true; false under load_in_4bit)"},
           {"load_in_4bit", &A::load_in_4bit, {}, "[transformers] as --quantization_bit 4, with its defaults"},
           {"load_in_8bit", &A::load_in_8bit, {}, "[transformers] 8-bit bitsandbytes: refused"},
           {"bnb_4bit_compute_dtype",
            &A::bnb_4bit_compute_dtype,
            {},
            "[transformers] the dtype the layers compute in: the training dtype (bf16 with --bf16)"},
           {"bnb_4bit_quant_storage",
            &A::bnb_4bit_quant_storage,
            {"uint8", "bfloat16", "float16", "float32"},
            "[transformers] the dtype the packed codes are viewed as (the bytes are the same)"},
           {"q_lora",
            &A::q_lora,
            {},
            "FastChat's train_lora.py and Qwen's finetune.py: as --quantization_bit 4 (nf4, double quantization)"},
       }},
      {"Preference training (--stage dpo; TRL's DPOConfig names in brackets)",
       {
           {"pref_beta", &A::pref_beta, {}, "[beta] the preference loss's beta (inverse temperature)"},
           {"pref_loss",
            &A::pref_loss,
            {},
            "[loss_type] sigmoid (DPO), hinge, ipo, kto_pair, orpo or simpo (the last two need no reference model)"},
           {"pref_ftx", &A::pref_ftx, {}, "add this times the chosen answer's mean token loss (an SFT term)"},
           {"simpo_gamma", &A::simpo_gamma, {}, "simpo: the target reward margin"},
           {"dpo_label_smoothing",
            &A::dpo_label_smoothing,
            {},
            "[label_smoothing] sigmoid: the probability that a pair's preference is flipped (conservative DPO)"},
           {"pref_bco_weight", &A::pref_bco_weight, {}, "BCO's share of the loss: only 0 is accepted"},
           {"rpo_alpha",
            &A::rpo_alpha,
            {},
            "TRL: add this times the chosen answers' token-mean NLL (RPO); unset: none"},
           {"reference_free",
            &A::reference_free,
            {},
            "TRL: no reference model, its log-probabilities taken as 0 (sigmoid, hinge, ipo, kto_pair)"},
           {"precompute_ref_log_probs",
            &A::precompute_ref_log_probs,
            {},
            "TRL: the reference's log-probabilities of every pair in a first pass, so no reference is held while "
            "training"},
       }},
      {"DeepSpeed and distributed",
       {
           {"deepspeed", &A::deepspeed, {}, "path of a DeepSpeed ds_config.json, or the config as a JSON object"},
           {"ddp_timeout", &A::ddp_timeout, {}, "seconds a collective may take before every rank stops"},
           {"inprocess_ranks", &A::inprocess_ranks, {}, "run N data-parallel ranks as threads of this process"},
           {"offload_delayed_update",
            &A::offload_delayed_update,
            {},
            "with offload_optimizer: ZeRO-Offload's one-step delayed parameter update; each step's "
            "CPU Adam runs beside the next step's forward and backward, which use the weights one update older"},
           {"zero_trace",
            &A::zero_trace,
            {},
            "trace every collective (op, label, bytes, start, duration) to output_dir/zero_trace_rank{R}.jsonl and "
            "the log"},
       }},
      {"Evaluation",
       {
           {"eval_strategy", &A::eval_strategy, {}, "when to evaluate"},
           {"eval_steps", &A::eval_steps, {}, "evaluate every N steps (default: logging_steps; < 1: a share)"},
           {"eval_delay", &A::eval_delay, {}, "steps (epochs with eval_strategy epoch) before the first evaluation"},
           {"eval_on_start", &A::eval_on_start, {}, "evaluate before the first step"},
       }},
      {"Logging and saving",
       {
           {"logging_strategy", &A::logging_strategy, {}, "when to log the training loss"},
           {"logging_steps", &A::logging_steps, {}, "log every N optimizer steps (< 1: a share of max_steps)"},
           {"logging_first_step", &A::logging_first_step, {}, "log the first step too"},
           {"disable_tqdm", &A::disable_tqdm, {}, "no progress bar (it shows only on a terminal anyway)"},
           {"report_to",
            &A::report_to,
            {},
            "where log entries also go: tensorboard (or all) writes TensorBoard event files into --logging_dir, "
            "none nowhere; HF's other integrations (wandb, mlflow, comet_ml, ...) are warned about and ignored",
            true},
           {"logging_dir",
            &A::logging_dir,
            {},
            "folder of the TensorBoard event files (default: output_dir/runs/<date>_<hostname>, or "
            "TENSORBOARD_LOGGING_DIR when set)"},
           {"save_strategy", &A::save_strategy, {}, "when to save checkpoints"},
           {"save_steps", &A::save_steps, {}, "save every N steps (save_strategy steps; < 1: a share of max_steps)"},
           {"save_total_limit", &A::save_total_limit, {}, "keep at most N checkpoints"},
           {"save_only_model", &A::save_only_model, {}, "checkpoints without optimizer state (cannot resume)"},
           {"resume_from_checkpoint", &A::resume_from_checkpoint, {}, "a checkpoint folder, or true for the latest"},
           {"profile_steps",
            &A::profile_steps,
            {},
            "time N steps (after one warm-up step) per op family: a table in the log and "
            "output_dir/step_profile.json"},
       }},
  };
  return sections;
}

const std::vector<ArgumentSpec>& argument_table() {
  static const std::vector<ArgumentSpec> table = [] {
    std::vector<ArgumentSpec> flat;
    for (const ArgumentSection& section : argument_sections())
      flat.insert(flat.end(), section.specs.begin(), section.specs.end());
    return flat;
  }();
  return table;
}

const ArgumentSpec* find_argument_spec(const std::string& name) {
  for (const ArgumentSpec& spec : argument_table())
    if (name == spec.name) return &spec;
  return nullptr;
}

OrderedJson argument_json(const TrainingArguments& args, const ArgumentSpec& spec) {
  return std::visit(
      [&](auto member) -> OrderedJson {
        const auto& field = args.*member;
        using Field = std::remove_cvref_t<decltype(field)>;
        if constexpr (std::is_same_v<Field, std::optional<double>>)
          return field ? number(*field) : OrderedJson(nullptr);
        else if constexpr (std::is_same_v<Field, std::optional<std::int64_t>> ||
                           std::is_same_v<Field, std::optional<bool>>)
          return field ? OrderedJson(*field) : OrderedJson(nullptr);
        else if constexpr (std::is_enum_v<Field>)
          return OrderedJson(name_of(field));
        else if constexpr (std::is_same_v<Field, double>)
          return number(field);
        else if constexpr (std::is_same_v<Field, std::string>)
          return spec.list ? list_or_text(field) : text_or_object(spec.name, field);
        else
          return OrderedJson(field);
      },
      spec.member);
}

const std::vector<std::pair<std::string, std::string>>& argument_aliases() {
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"evaluation_strategy", "eval_strategy"},
      {"per_gpu_train_batch_size", "per_device_train_batch_size"},
      {"per_gpu_eval_batch_size", "per_device_eval_batch_size"},
      {"no_cuda", "use_cpu"},
      {"fp16_backend", "half_precision_backend"},
      {"revision", "model_revision"},
      // The training scripts' own names (stanford_alpaca, FastChat, Qwen's finetune.py).
      {"data_path", "train_file"},
      {"eval_data_path", "validation_file"},
      {"model_max_length", "max_length"},
      // Their LoraArguments (FastChat's train_lora.py, Qwen's finetune.py).
      {"lora_r", "lora_rank"},
      {"lora_target_modules", "lora_target"},
      // TRL's DPOConfig names for LLaMA-Factory's.
      {"beta", "pref_beta"},
      {"loss_type", "pref_loss"},
      {"label_smoothing", "dpo_label_smoothing"},
      // transformers' BitsAndBytesConfig names for LLaMA-Factory's.
      {"bnb_4bit_quant_type", "quantization_type"},
      {"bnb_4bit_use_double_quant", "double_quantization"},
  };
  return aliases;
}

}  // namespace zt::train
