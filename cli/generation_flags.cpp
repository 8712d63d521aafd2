#include "cli/generation_flags.h"

#include <algorithm>

#include "cli/four_bit_base.h"
#include "models/peft/lora.h"
#include "models/tensor_parallel.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/usage_error.h"
#include "text/chat_template/template_names.h"

namespace zt::cli {

std::string template_usage(const std::string& head) {
  const std::string pad(head.size(), ' ');
  return head + "chat template (default: the model's own template):\n" + pad + "LLaMA-Factory's " +
         models::llama_factory_template_names() + "\n" + pad + "or the model family's own " +
         models::model_family_template_names() + "\n";
}

std::string generation_usage() {
  return std::string(
             "  --max_new_tokens N, --min_new_tokens N   new tokens per answer (defaults from\n"
             "                           generation_config.json, else up to 2048, fewer where the model's\n"
             "                           context or the file's max_length leaves less; and 0)\n"
             "  --do_sample [true|false] --temperature T --top_k K --top_p P --repetition_penalty R --seed S\n"
             "                           transformers' sampling settings; unset ones come from\n"
             "                           generation_config.json (greedy when it has none)\n"
             "  --merge_lora [true|false]  merge --adapter_name_or_path's LoRA into the weights at load\n"
             "                           (the same tokens up to rounding, no extra work per token)\n"
             "  --fused_decode [true|false]  decode steps through one-launch linears with the norms, biases,\n"
             "                           SwiGLU and residual adds folded in (the same tokens; off by default\n"
             "                           until its GPU kernels are measured; not with LoRA kept apart or --tp)\n") +
         template_usage("  --template NAME          ") +
         "                           given to generate: plain prompts become a user's turn in it\n"
         "  --enable_thinking [true|false]  false: Qwen3's templates (qwen3, a Qwen3 model's own) end the\n"
         "                           prompt with the empty thought, so the model answers without thinking\n"
         "                           (LLaMA-Factory's and transformers' enable_thinking; default true)\n"
         "  --max_batch N            sequences decoding together (default 32)\n"
         "  --block_size N           tokens per KV-cache block (default 16)\n"
         "  --tp N                   tensor parallelism: heads and MLP split over N ranks (Megatron's scheme).\n"
         "                           Under a launcher (zerotune launch --nproc_per_node N, torchrun, mpirun,\n"
         "                           srun) one rank per process and GPU; without one, N in-process ranks on\n"
         "                           --device: the same tokens as --tp 1, no faster (for tests and learning)\n";
}

int run_generation_command(const std::vector<std::string>& args, FlagSpec spec, const char* usage,
                           const std::function<int(Flags&)>& body) {
  spec.value_flags.insert(kModelFlags.begin(), kModelFlags.end());
  spec.value_flags.insert(kGenerationFlags.begin(), kGenerationFlags.end());
  spec.bool_flags.insert(kGenerationBoolFlags.begin(), kGenerationBoolFlags.end());
  spec.required.push_back("--model_name_or_path");
  spec.integer_flags.insert(
      {"--max_new_tokens", "--min_new_tokens", "--top_k", "--seed", "--max_batch", "--block_size", "--tp"});
  spec.number_flags.insert({"--temperature", "--top_p", "--repetition_penalty"});
  spec.positive_flags.insert({"--max_batch", "--block_size", "--tp"});
  add_four_bit_flags(spec);
  const std::string full_usage = std::string(usage) + generation_usage() + kFourBitUsage + kHubModelUsage;
  return run_with_flags(args, spec, full_usage.c_str(), [&body](Flags& flags) {
    ZT_REQUIRE_USAGE(
        !flags.count("--merge_lora") || flags.at("--merge_lora") != "true" || flags.count("--adapter_name_or_path"),
        "--merge_lora merges a LoRA adapter into the weights: add --adapter_name_or_path with a LoRA "
        "adapter");
    resolve_model_flag(flags);
    return body(flags);
  });
}

models::GenerationOptions generation_options_from(const Flags& flags, const std::string& model_dir,
                                                  const models::CausalLM& model, const models::Tokenizer& tokenizer,
                                                  const models::ChatTemplate* chat_template) {
  models::GenerationOptions options = models::load_generation_options(model_dir, model.config());
  auto flag = [&](const char* name) { return flags.count(name) ? &flags.at(name) : nullptr; };
  if (auto v = flag("--max_new_tokens")) {
    options.max_new_tokens = integer_flag("--max_new_tokens", *v);
    options.max_new_tokens_set = true;
  }
  if (auto v = flag("--min_new_tokens")) options.min_new_tokens = integer_flag("--min_new_tokens", *v);
  if (auto v = flag("--do_sample")) options.do_sample = *v == "true";
  if (auto v = flag("--temperature")) options.temperature = number_flag("--temperature", *v);
  if (auto v = flag("--top_k")) options.top_k = integer_flag("--top_k", *v);
  if (auto v = flag("--top_p")) options.top_p = number_flag("--top_p", *v);
  if (auto v = flag("--repetition_penalty")) options.repetition_penalty = number_flag("--repetition_penalty", *v);
  if (auto v = flag("--seed")) options.seed = static_cast<std::uint64_t>(integer_flag("--seed", *v));
  std::vector<std::int64_t>& stops = options.eos_token_ids;
  auto add_stop = [&](std::optional<models::TokenId> id) {
    if (id && std::find(stops.begin(), stops.end(), *id) == stops.end()) stops.push_back(*id);
  };
  if (stops.empty()) add_stop(tokenizer.special_ids().eos);
  if (chat_template != nullptr)
    for (const std::string& token : chat_template->end_of_turn_tokens()) add_stop(tokenizer.token_to_id(token));
  // generation_config.json was checked as it was read: what fails now, the flags brought.
  try {
    models::check_generation_options(options);
  } catch (const Error& e) {
    fail_usage(std::string("the sampling flags: ") + e.what());
  }
  return options;
}

models::FittedAnswer answer_options(const models::GenerationOptions& options, const models::CausalLM& model,
                                    std::size_t prompt_tokens) {
  const auto tokens = static_cast<std::int64_t>(prompt_tokens);
  return models::fit_answer_length(options, tokens, infer::answer_room(model, tokens));
}

bool cut_at_limit(const models::GenerationOptions& options, const std::vector<std::int64_t>& generated) {
  const auto& stops = options.eos_token_ids;
  const bool stopped = !generated.empty() && std::find(stops.begin(), stops.end(), generated.back()) != stops.end();
  return !stopped && static_cast<std::int64_t>(generated.size()) >= options.max_new_tokens;
}

std::string limit_reason(const models::FittedAnswer& fitted, const Flags& flags, const models::CausalLM& model) {
  const std::string raise = "; a larger --max_new_tokens allows more";
  switch (fitted.limit) {
    case models::AnswerLimit::kSet:
      return flags.count("--max_new_tokens") ? "--max_new_tokens " + flags.at("--max_new_tokens") + raise
                                             : "generation_config.json's max_new_tokens" + raise;
    case models::AnswerLimit::kDefault:
      return "zerotune's default of " + std::to_string(models::kDefaultMaxNewTokens) + " new tokens" + raise;
    case models::AnswerLimit::kMaxLength:
      return "generation_config.json's max_length of " + std::to_string(fitted.options.max_length) +
             " tokens, which counts the prompt too" + raise;
    case models::AnswerLimit::kContext:
      break;
  }
  return "the prompt and answer fill the model's context of " + std::to_string(models::context_length(model.config())) +
         " tokens (" + model.config().source + ")";
}

namespace {

// --merge_lora and --fused_decode, applied to the loaded model.
models::CausalLM as_asked(const Flags& flags, models::CausalLM model) {
  model.set_small_m_layers(flags.count("--fused_decode") && flags.at("--fused_decode") == "true");
  if (!flags.count("--merge_lora") || flags.at("--merge_lora") != "true") return model;
  if (model.lora().empty())
    fail("--merge_lora merges a LoRA adapter into the weights, but --adapter_name_or_path " +
         flags.at("--adapter_name_or_path") + " holds no LoRA matrices (a prefix-tuning adapter?)");
  models::merge_lora(model);
  return model;
}

}  // namespace

Device check_run_device(const Flags& flags) {
  const Device device = device_from_flags(flags);
  if (device.is_cuda()) {
    require_supported_gpu(device.index);
    return device;
  }
  const DType dtype = dtype_from_flags(flags, device);
  if (dtype == DType::kBF16 || dtype == DType::kF16)
    ZT_LOG(kInfo, "--dtype " << dtype_name(dtype) << " on the CPU: " << cpu_arithmetic(dtype));
  return device;
}

models::CausalLM load_generation_model(Flags& flags) {
  const Device device = check_run_device(flags);
  models::ModelOptions options{.device = device, .dtype = dtype_from_flags(flags, device)};
  plan_four_bit_base(flags, models::load_config(flags.at("--model_name_or_path")), options);
  models::CausalLM model = load_model_from_flags(flags, options);
  if (const std::string held = four_bit_base_line(model); !held.empty()) ZT_LOG(kInfo, held);
  return as_asked(flags, std::move(model));
}

models::CausalLM load_generation_model(Flags& flags, Device device, DType dtype) {
  return as_asked(flags, load_model_from_flags(flags, device, dtype));
}

infer::EngineOptions engine_options_from(const Flags& flags) {
  infer::EngineOptions options;
  if (flags.count("--max_batch")) options.max_batch = integer_flag("--max_batch", flags.at("--max_batch"));
  if (flags.count("--block_size")) options.block_size = integer_flag("--block_size", flags.at("--block_size"));
  return options;
}

int tensor_parallel_size(const Flags& flags) {
  if (!flags.count("--tp")) return 1;
  const std::int64_t size = integer_flag("--tp", flags.at("--tp"));
  ZT_REQUIRE_USAGE(size <= 1024, "--tp must be a number of ranks from 1 up to 1024, got " + flags.at("--tp"));
  return static_cast<int>(size);
}

void run_tensor_parallel_from_flags(Flags& flags, const std::function<void(infer::TensorParallelRank&)>& body) {
  const int size = tensor_parallel_size(flags);
  const models::ModelConfig config = models::load_config(flags.at("--model_name_or_path"));
  try {
    models::check_tensor_parallel_size(config, size);
  } catch (const Error& e) {
    fail_usage(e.what());  // --tp's value does not suit this model
  }
  check_four_bit_tensor_parallel(flags, config);
  const std::string device_flag = flags.count("--device") ? flags.at("--device") : "";
  ZT_REQUIRE_USAGE(!infer::launched_as_ranks() || device_flag.rfind("cuda:", 0) != 0,
                   "--device " + device_flag +
                       " under a launcher: each tensor-parallel rank uses the GPU of its "
                       "LOCAL_RANK; give --device cuda or leave it out");
  const Device device = check_run_device(flags);
  const DType dtype = dtype_from_flags(flags, device);
  // The whole model goes to the host, not the GPU: only the shards need the device's memory.
  auto load_full = [&] { return load_generation_model(flags, Device::cpu(), dtype); };
  infer::run_tensor_parallel({.size = size, .device = device}, load_full, body);
}

infer::TensorParallelOptions tensor_parallel_options_from(const Flags& flags, const infer::TensorParallelRank& rank) {
  return {.engine = engine_options_from(flags), .ranks_per_device = rank.ranks_per_device};
}

bool enable_thinking_from(const Flags& flags) {
  return !flags.count("--enable_thinking") || flags.at("--enable_thinking") == "true";
}

std::unique_ptr<models::ChatTemplate> chat_template_from(const Flags& flags, const std::string& model_dir,
                                                         std::optional<bool> enable_thinking) {
  const std::string name = flags.count("--template") ? flags.at("--template") : "";
  return models::make_run_chat_template(name, model_dir,
                                        {.enable_thinking = enable_thinking.value_or(enable_thinking_from(flags))});
}

}  // namespace zt::cli
