#include "train/args/argument_reader.h"

#include <algorithm>

#include "runtime/flags/flag_words.h"
#include "runtime/usage_error.h"
#include "train/args/argument_table.h"
#include "train/args/other_arguments.h"

namespace zt::train {
namespace {

using nlohmann::json;

// Sets one argument from its text, checked by its flag's kind as every command's values are;
// returns the problem, empty on success.
std::string assign(TrainingArguments& args, const ArgumentSpec& spec, const std::string& value) {
  const std::string flag = std::string("--") + spec.name;
  try {
    check_flag_value(*train_flag_table().find(flag), value);
    std::visit(
        [&](auto member) {
          using Field = std::remove_reference_t<decltype(args.*member)>;
          if constexpr (std::is_enum_v<Field>)
            args.*member = *enum_from_name<Field>(value);
          else if constexpr (std::is_same_v<Field, bool> || std::is_same_v<Field, std::optional<bool>>)
            args.*member = *flag_bool(value);
          else if constexpr (std::is_same_v<Field, std::int64_t> || std::is_same_v<Field, std::optional<std::int64_t>>)
            args.*member = integer_flag(flag, value);
          else if constexpr (std::is_same_v<Field, double> || std::is_same_v<Field, std::optional<double>>)
            args.*member = number_flag(flag, value);
          else
            args.*member = value;
        },
        spec.member);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// A file's null for `spec`: an optional member becomes none; any other keeps its value.
void clear_optional(TrainingArguments& args, const ArgumentSpec& spec) {
  std::visit(
      [&](auto member) {
        using Field = std::remove_reference_t<decltype(args.*member)>;
        if constexpr (std::is_same_v<Field, std::optional<bool>> ||
                      std::is_same_v<Field, std::optional<std::int64_t>> ||
                      std::is_same_v<Field, std::optional<double>>)
          args.*member = std::nullopt;
      },
      spec.member);
}

// A file's null given after it: `spec`'s member back to its default, as before the file set it.
void reset_to_default(TrainingArguments& args, const ArgumentSpec& spec) {
  std::visit([&](auto member) { args.*member = TrainingArguments{}.*member; }, spec.member);
}

// LLaMA-Factory's max_length (GeneratingArguments) limits generation, and its cutoff_len is the
// sample length zerotune calls max_length: in a file that has both, max_length is the former.
bool is_generation_max_length(const json& object, const std::string& name, const json& value) {
  return name == "max_length" && !value.is_null() && object.contains("cutoff_len") &&
         !object.at("cutoff_len").is_null();
}

}  // namespace

std::string llama_factory_benchmark_layout(const json& object) {
  // EvaluationArguments: `task` names the exam, the others set how it is asked; none of them is
  // a training or inference option.
  const bool benchmark = object.contains("task") && (object.contains("n_shot") || object.contains("lang") ||
                                                     object.contains("save_dir") || object.contains("task_dir"));
  if (!benchmark) return "";
  return " is a LLaMA-Factory benchmark file (`llamafactory-cli eval`: task, n_shot, lang, save_dir), which "
         "scores a model's answers to the multiple-choice exams MMLU, C-Eval or CMMLU; zerotune runs no such "
         "benchmark: score the model's loss on a dataset with `zerotune evaluate --model_name_or_path MODEL "
         "[--adapter_name_or_path ADAPTER] --validation_file FILE`, or write its answers with `zerotune generate "
         "--input_file FILE --output_file OUT`";
}

namespace {

// Files written for another program's own argument layout, which no name of theirs would map
// one by one: what they are and how to write them; empty for any other file.
std::string foreign_layout(const json& object) {
  if (std::string benchmark = llama_factory_benchmark_layout(object); !benchmark.empty()) return benchmark;
  const bool v1 = object.contains("model") && !object.contains("model_name_or_path") &&
                  (object.contains("train_dataset") || object.contains("micro_batch_size") ||
                   object.contains("peft_config") || object.contains("dist_config"));
  if (v1)
    return " is in LLaMA-Factory's v1 layout (USE_V1=1: model, train_dataset, micro_batch_size, peft_config, "
           "dist_config), which zerotune does not read: write it with LLaMA-Factory's names, as its "
           "examples/train_lora files do (model_name_or_path, dataset with dataset_dir, "
           "per_device_train_batch_size, finetuning_type with lora_rank, lora_alpha, lora_target, deepspeed)";
  // axolotl names the model base_model and lists its datasets as objects; its other keys
  // (adapter, sequence_len, micro_batch_size, num_epochs) have names of their own too.
  const bool axolotl = object.contains("base_model") && !object.contains("model_name_or_path") &&
                       (object.contains("datasets") || object.contains("adapter") || object.contains("sequence_len") ||
                        object.contains("micro_batch_size") || object.contains("num_epochs"));
  if (axolotl)
    return " is an axolotl config (`axolotl train`: base_model, datasets, adapter, sequence_len, "
           "micro_batch_size), whose schema zerotune does not read: write it with HF's and LLaMA-Factory's names, "
           "model_name_or_path for base_model, dataset with dataset_dir (a dataset_info.json entry per local file) "
           "or train_file for datasets, val_size for val_set_size, finetuning_type lora for adapter lora (with "
           "quantization_bit 4 for qlora), lora_rank for lora_r, lora_target for lora_target_modules (all for "
           "lora_target_linear), cutoff_len for sequence_len, packing for sample_packing, "
           "per_device_train_batch_size for micro_batch_size, num_train_epochs for num_epochs, optim for optimizer "
           "and lr_scheduler_type for lr_scheduler (docs/TRAINING.md, TrainingArguments fields)";
  if (object.contains("compute_environment") && object.contains("distributed_type"))
    return " is an Accelerate config (`accelerate launch --config_file`: compute_environment, distributed_type, "
           "num_processes, num_machines), which says how to start the processes, not what to train: start them "
           "with `zerotune launch --nproc_per_node N [--nnodes M --node_rank R --master_addr A] zerotune train "
           "ARGS.yaml` (or torchrun), give train the training arguments file, and put ZeRO settings in a DeepSpeed "
           "config given as deepspeed (FSDP's sharding is ZeRO-3's: docs/ZERO.md)";
  if (object.contains("training_args") && object.contains("data_config"))
    return " is in ChatGLM3's finetune_demo layout (data_config, training_args, peft_config), which zerotune "
           "does not read: put the training_args entries at the top level, with model_name_or_path, train_file "
           "and validation_file for data_config's train_file and val_file, max_length for max_input_length + "
           "max_output_length, and finetuning_type lora with lora_rank, lora_alpha, lora_dropout for a LORA "
           "peft_config, and lora_target for its target_modules (without them PEFT takes the model's own: "
           "query_key_value for ChatGLM, q_proj,v_proj for Qwen2; zerotune's default is all) (ptuning with "
           "pre_seq_len for PREFIX_TUNING's num_virtual_tokens)";
  return "";
}

}  // namespace

std::string flag_text_of(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array() && std::none_of(value.begin(), value.end(), [](const json& v) { return v.is_structured(); })) {
    std::string joined;
    for (const json& item : value) joined.append(joined.empty() ? "" : ",").append(flag_text_of(item));
    return joined;
  }
  return value.dump();
}

void ArgumentReader::read_flags(const std::vector<std::string>& tokens) {
  for (const GivenFlag& given : read_flag_words(tokens, train_flag_table(), errors_)) {
    if (given.flag == nullptr) {
      errors_.push_back("unexpected argument '" + given.name +
                        (arguments_file_format(given.name)
                             ? "': an arguments file comes first, before the flags that override it, and only one "
                               "is read: zerotune train args.json|args.yaml [--name value | name=value ...]"
                             : "': arguments are --name value pairs"));
      continue;
    }
    const std::string name = given.flag->name.substr(2);
    if (given.unsets()) {  // resume_from_checkpoint=null: as the file's null
      if (const ArgumentSpec* spec = find_argument_spec(name)) reset_to_default(args_, *spec);
      args_.other_arguments.erase(name);
      args_.given.erase(name);
      args_.given.erase(given.name.substr(2));
      continue;
    }
    args_.given.insert(given.name.substr(2));  // an alias too, for the defaults its program implies
    if (find_argument_spec(name)) {
      set_member(name, given.value, "");
      continue;
    }
    const OtherArgument& other = *find_other_argument(name);
    if (other.kind == ValueKind::kList && !given.words.empty()) {
      set_other(name, json(given.words));
      continue;
    }
    std::string error;
    json parsed = value_from_text(other, given.value, error);
    if (!error.empty())
      errors_.push_back(error);
    else
      set_other(name, std::move(parsed));
  }
}

void ArgumentReader::read_object(const json& object, const std::string& source) {
  if (const std::string layout = foreign_layout(object); !layout.empty()) {
    errors_.push_back(source + layout);
    return;
  }
  for (const auto& [given_name, value] : object.items()) {
    if (is_generation_max_length(object, given_name, value)) {
      args_.warnings.push_back(
          "--max_length (LLaMA-Factory) has no effect in zerotune: beside cutoff_len it is LLaMA-Factory's "
          "generation limit; cutoff_len sets the sample length");
      continue;
    }
    const Flag* flag = train_flag_table().find("--" + given_name);
    if (flag == nullptr) {
      errors_.push_back(source + ": " + unknown_flag_message("--" + given_name, train_flag_table()));
      continue;
    }
    const std::string name = flag->name.substr(2);
    if (!value.is_null()) args_.given.insert(given_name);  // an alias too, as on the command line
    const OtherArgument* other = find_other_argument(name);
    if (const ArgumentSpec* spec = find_argument_spec(name)) {
      if (!value.is_null())
        set_member(spec->name, flag_text_of(value), source + ": ");
      else
        clear_optional(args_, *spec);
    } else {
      if (value.is_null()) continue;
      const bool typed =
          other->kind == ValueKind::kBool || other->kind == ValueKind::kInteger || other->kind == ValueKind::kNumber;
      if (!value.is_string() || !typed) {
        set_other(name, value);
        continue;
      }
      std::string error;
      json parsed = value_from_text(*other, value.get<std::string>(), error);
      if (!error.empty())
        errors_.push_back(source + ": " + error);
      else
        set_other(name, std::move(parsed));
    }
  }
}

void ArgumentReader::set_member(const std::string& name, const std::string& text, const std::string& where) {
  if (std::string error = assign(args_, *find_argument_spec(name), text); !error.empty())
    errors_.push_back(where + error);
  args_.given.insert(name);
}

void ArgumentReader::set_other(const std::string& name, json value) {
  if (is_secret(name)) {
    std::string placeholder = name;
    std::transform(placeholder.begin(), placeholder.end(), placeholder.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    value = "<" + placeholder + ">";
  }
  args_.other_arguments[name] = std::move(value);
  args_.given.insert(name);
}

}  // namespace zt::train
