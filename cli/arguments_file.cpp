#include "cli/arguments_file.h"

#include <algorithm>
#include <string_view>

#include "train/args/argument_reader.h"
#include "train/args/other_arguments.h"
#include "train/args/training_arguments.h"

namespace zt::cli {
namespace {

using nlohmann::json;
using train::Judgement;
using train::OtherArgument;
using enum train::ValueKind;
using enum train::Verdict;
constexpr train::Origin kLf = train::Origin::kLlamaFactory;

constexpr const char* kOwnEngine =
    "zerotune runs every model on its own engine (continuous batching over a paged KV cache, as vLLM and SGLang "
    "do)";
constexpr const char* kGptqOnly = "it calibrates GPTQ, which zerotune does not run";
constexpr const char* kVocabulary =
    "zerotune runs the tokenizer's vocabulary as it is: use a model whose tokenizer already has the tokens";

// LLaMA-Factory's options that mean something else to a command that runs or exports a model than
// to training, with that meaning; a name the command has a flag for never gets here.
const std::vector<OtherArgument>& inference_options() {
  static const std::vector<OtherArgument> table = {
      {"infer_backend", kText, "[\"huggingface\", \"hf\"]", kNoEffect, kOwnEngine, kLf},
      {"use_kv_cache", kBool, "[true]", kNoEffect, "zerotune's engine always decodes from its KV cache", kLf},
      {"vllm_maxlen", kInteger, "[4096]", kNoEffect, kOwnEngine, kLf},
      {"vllm_gpu_util", kNumber, "[0.7]", kNoEffect, kOwnEngine, kLf},
      {"vllm_enforce_eager", kBool, "[false]", kNoEffect, kOwnEngine, kLf},
      {"vllm_max_lora_rank", kInteger, "[32]", kNoEffect, kOwnEngine, kLf},
      {"vllm_config", kObject, "[null]", kNoEffect, kOwnEngine, kLf},
      {"sglang_maxlen", kInteger, "[4096]", kNoEffect, kOwnEngine, kLf},
      {"sglang_mem_fraction", kNumber, "[0.7]", kNoEffect, kOwnEngine, kLf},
      {"sglang_tp_size", kInteger, "[-1]", kNoEffect, kOwnEngine, kLf},
      {"sglang_config", kObject, "[null]", kNoEffect, kOwnEngine, kLf},
      {"sglang_lora_backend", kText, "[\"triton\"]", kNoEffect, kOwnEngine, kLf},
      {"offload_folder", kText, "[\"offload\"]", kNoEffect, "zerotune keeps the whole model on its device", kLf},
      {"print_param_status", kBool, "[false]", kNoEffect, "nothing trains", kLf},
      {"quantization_method", kText, "[\"bnb\", \"bitsandbytes\"]", kRefused,
       "quantization_bit 4 holds the base in bitsandbytes' 4 bits: drop the option", kLf, "that quantization method"},
      {"adapter_folder", kText, "[null]", kRefused, "name each adapter with adapter_name_or_path", kLf,
       "loading adapters from a folder"},
      {"resize_vocab", kBool, "[false]", kRefused, kVocabulary, kLf, "resizing the vocabulary"},
      {"split_special_tokens", kBool, "[false]", kRefused, kVocabulary, kLf, "splitting special tokens"},
      {"add_tokens", kText, "[null]", kRefused, kVocabulary, kLf, "adding tokens"},
      {"add_special_tokens", kText, "[null]", kRefused, kVocabulary, kLf, "adding special tokens"},
      {"new_special_tokens", kText, "[null]", kRefused, kVocabulary, kLf, "adding special tokens"},
      {"new_special_tokens_config", kText, "[null]", kRefused, kVocabulary, kLf, "adding special tokens"},
      {"finetuning_type", kText, "[\"lora\", \"full\", \"freeze\"]", kRefused,
       "an adapter folder's adapter_config.json says which method made it: drop the option", kLf,
       "that fine-tuning method"},
      {"stage", kText, "*", kNoEffect, "a trained model runs the same whichever stage trained it", kLf},
      {"default_system", kText, "[null]", kRefused,
       "the template's own default system prompt is used: put a system message in the conversation (zerotune "
       "chat takes --system)",
       kLf, "replacing the template's default system prompt"},
      {"tool_format", kText, "[null]", kRefused,
       "zerotune renders tools in the chat template's own format: drop the option", kLf, "another tool format"},
      {"num_beams", kInteger, "[1]", kRefused, "zerotune samples or decodes greedily: drop the option", kLf,
       "beam search"},
      {"length_penalty", kNumber, "[1.0]", kNoEffect, "it scores beams, and zerotune runs no beam search", kLf},
      {"max_length", kInteger, "[1024, null]", kNoEffect,
       "LLaMA-Factory's max_new_tokens (1024 unless given) replaces it: give max_new_tokens", kLf},
      {"skip_special_tokens", kBool, "[true]", kNoEffect, "answers are written without special tokens", kLf},
  };
  return table;
}

// `zerotune export`'s meaning of LLaMA-Factory's export options (export_dir and export_size are
// its flags).
const std::vector<OtherArgument>& export_options() {
  static const std::vector<OtherArgument> table = {
      {"export_device", kText, "[\"cpu\"]", kNoEffect,
       "zerotune merges on the CPU in float32 and rounds once to the saved dtype", kLf},
      {"export_legacy_format", kBool, "[false]", kRefused,
       "zerotune writes safetensors, which transformers loads: drop the option", kLf,
       "PyTorch .bin weights (export_legacy_format)"},
      {"export_quantization_bit", kInteger, "[null]", kRefused,
       "zerotune exports dense weights: export without it and quantize the folder with a GPTQ tool (such as "
       "GPTQModel), or keep a 4-bit base at run time with --quantization_bit 4",
       kLf, "GPTQ quantization at export"},
      {"export_quantization_dataset", kText, "[null]", kNoEffect, kGptqOnly, kLf},
      {"export_quantization_nsamples", kInteger, "[128]", kNoEffect, kGptqOnly, kLf},
      {"export_quantization_maxlen", kInteger, "[1024]", kNoEffect, kGptqOnly, kLf},
      {"export_hub_model_id", kText, "[null]", kRefused,
       "upload the exported folder yourself (`huggingface-cli upload ID OUT`): drop the option", kLf,
       "uploading to the Hugging Face hub"},
      {"template", kText, "[null]", kNoEffect,
       "the exported folder keeps the model's tokenizer files and chat template as they are (no Ollama Modelfile "
       "is written)",
       kLf},
      {"enable_thinking", kBool, "[true, null]", kNoEffect, "the exported folder keeps the model's chat template", kLf},
  };
  return table;
}

// Model options train refuses that a run or an export cannot honour either.
constexpr std::string_view kRefusedAsInTraining[] = {"rope_scaling", "shift_attn", "mixture_of_depths", "use_kt"};

// A name the file gives in another of the command's words (its value translated; `quiet` means
// the command's default, so no flag is set).
struct RenamedOption {
  std::string_view name, flag, quiet;
};
constexpr RenamedOption kRenamed[] = {{"infer_dtype", "--dtype", "auto"}};

const OtherArgument* find_in(const std::vector<OtherArgument>& table, std::string_view name) {
  const auto found =
      std::find_if(table.begin(), table.end(), [&](const OtherArgument& option) { return option.name == name; });
  return found == table.end() ? nullptr : &*found;
}

// Reads one file into the command's words, judging the names that are not its flags.
class FileReader {
 public:
  FileReader(const FlagTable& table, ArgumentsFile& file, std::vector<std::string>& problems)
      : table_(table), file_(file), problems_(problems) {}

  void read(const std::string& name, const json& value) {
    if (value.is_null()) return;  // null keeps the default, as train reads it
    for (const RenamedOption& renamed : kRenamed)
      if (name == renamed.name) {
        const Flag* flag = table_.find(std::string(renamed.flag));
        if (flag != nullptr && value != json(std::string(renamed.quiet))) add(*flag, name, value);
        return;
      }
    if (const Flag* flag = table_.find("--" + name)) return add(*flag, name, value);
    if (const OtherArgument* option = own_meaning(name)) return judge(*option, value);
    const OtherArgument* in_training = find_in(train::llama_factory_other_arguments(), name);
    if (in_training == nullptr) {
      problems_.push_back(file_.path + ": " + unknown_flag_message("--" + name, table_));
      return;
    }
    const bool refused_here = std::find(std::begin(kRefusedAsInTraining), std::end(kRefusedAsInTraining), name) !=
                              std::end(kRefusedAsInTraining);
    if (in_training->verdict == kNoEffect || refused_here) return judge(*in_training, value);
    training_names_.push_back(name);
  }

  // One warning for the training options the file gives, which LLaMA-Factory ignores here too.
  void finish() {
    if (training_names_.empty()) return;
    std::string names;
    for (const std::string& name : training_names_) names.append(names.empty() ? "--" : ", --").append(name);
    const bool one = training_names_.size() == 1;
    file_.warnings.push_back(names + " (LLaMA-Factory) " + (one ? "has" : "have") + " no effect in zerotune " +
                             table_.command + ": " + (one ? "it configures" : "they configure") +
                             " training (zerotune train)");
  }

 private:
  const OtherArgument* own_meaning(const std::string& name) const {
    if (table_.command == "export")
      if (const OtherArgument* option = find_in(export_options(), name)) return option;
    return find_in(inference_options(), name);
  }

  void add(const Flag& flag, const std::string& name, const json& value) {
    file_.flags.push_back({.name = "--" + name, .flag = &flag, .value = train::flag_text_of(value)});
  }

  void judge(const OtherArgument& option, const json& value) {
    Judgement judgement = train::judge(option, value);
    if (judgement.kind == Judgement::kRefusal) problems_.push_back(file_.path + ": " + judgement.message);
    if (judgement.kind != Judgement::kWarning) return;
    const std::string in_zerotune = " in zerotune";  // "has no effect in zerotune: ...", said of this command
    std::string& message = judgement.message;
    const std::size_t at = message.find(in_zerotune);
    if (at != std::string::npos) message.insert(at + in_zerotune.size(), " " + table_.command);
    file_.warnings.push_back(message);
  }

  const FlagTable& table_;
  ArgumentsFile& file_;
  std::vector<std::string>& problems_;
  std::vector<std::string> training_names_;
};

}  // namespace

std::optional<ArgumentsFile> read_arguments_file(const std::vector<std::string>& args, const FlagTable& table,
                                                 std::vector<std::string>& problems) {
  if (args.empty() || !train::arguments_file_format(args[0])) return std::nullopt;
  ArgumentsFile file{.path = args[0]};
  FileReader reader(table, file, problems);
  const json object = train::read_arguments_object(file.path);
  if (const std::string benchmark = train::llama_factory_benchmark_layout(object); !benchmark.empty()) {
    problems.push_back(file.path + benchmark);
    return file;
  }
  for (const auto& [name, value] : object.items()) reader.read(name, value);
  reader.finish();
  return file;
}

}  // namespace zt::cli
