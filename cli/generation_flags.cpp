#include "cli/generation_flags.h"

#include <algorithm>

#include "cli/four_bit_base.h"
#include "models/peft/lora.h"
#include "models/tensor_parallel.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/usage_error.h"
#include "text/chat_template/chat_template.h"
#include "text/chat_template/template_names.h"

namespace zt::cli {

Flag template_flag() {
  return {.name = "--template",
          .value = "NAME",
          .help = "chat template (default: the model's own template): LLaMA-Factory's " +
                  models::llama_factory_template_names() + " or the model family's own " +
                  models::model_family_template_names(),
          .check = [](const std::string& name) { models::make_chat_template(name); }};
}

Flag enable_thinking_flag() {
  return {.name = "--enable_thinking",
          .kind = FlagKind::kBool,
          .help =
              "false: Qwen3's templates (qwen3, a Qwen3 model's own) end the prompt with the empty thought, so "
              "the model answers without thinking (LLaMA-Factory's and transformers' enable_thinking)",
          .default_value = "true"};
}

std::vector<FlagGroup> generation_flag_groups() {
  const infer::EngineOptions engine;
  FlagGroup sampling{
      "Sampling (transformers' GenerationConfig names; one not given comes from generation_config.json)",
      {{.name = "--max_new_tokens",
        .kind = FlagKind::kInteger,
        .value = "N",
        .help = "new tokens per answer at most (else up to " + std::to_string(models::kDefaultMaxNewTokens) +
                "; fewer where the model's context or generation_config.json's max_length leaves less)"},
       {.name = "--min_new_tokens",
        .kind = FlagKind::kInteger,
        .value = "N",
        .help = "new tokens before a stop counts"},
       {.name = "--do_sample",
        .kind = FlagKind::kBool,
        .help = "sample (else greedy when generation_config.json says "
                "nothing)"},
       {.name = "--temperature", .kind = FlagKind::kNumber, .value = "T", .help = "the logits divided by T"},
       {.name = "--top_k", .kind = FlagKind::kInteger, .value = "K", .help = "sample among the K likeliest tokens"},
       {.name = "--top_p",
        .kind = FlagKind::kNumber,
        .value = "P",
        .help = "sample among the likeliest tokens "
                "holding P of the probability"},
       {.name = "--repetition_penalty",
        .kind = FlagKind::kNumber,
        .value = "R",
        .help = "logits of tokens already in the sequence divided by R (multiplied when negative)"},
       {.name = "--seed", .kind = FlagKind::kInteger, .value = "S", .help = "the sampling's random seed"}}};
  FlagGroup chat{"Chat template", {template_flag(), enable_thinking_flag()}};
  FlagGroup engine_flags{
      "Engine",
      {{.name = "--max_batch",
        .kind = FlagKind::kPositiveInteger,
        .value = "N",
        .help = "sequences decoding together",
        .default_value = std::to_string(engine.max_batch)},
       {.name = "--block_size",
        .kind = FlagKind::kPositiveInteger,
        .value = "N",
        .help = "tokens per KV-cache block",
        .default_value = std::to_string(engine.block_size)},
       {.name = "--tp",
        .kind = FlagKind::kPositiveInteger,
        .value = "N",
        .help = "tensor parallelism: heads and MLP split over N ranks (Megatron's scheme). Under a launcher "
                "(zerotune launch --nproc_per_node N, torchrun, mpirun, srun) one rank per process and GPU; without "
                "one, N in-process ranks on --device: the same tokens as --tp 1, no faster (for tests and learning)",
        .default_value = "1"},
       {.name = "--merge_lora",
        .kind = FlagKind::kBool,
        .help = "merge --adapter_name_or_path's LoRA into the weights at load (the same tokens up to rounding, no "
                "extra work per token)"}}};
  return {model_flags(), sampling, chat, engine_flags, four_bit_flags()};
}

FlagTable generation_table(FlagTable own) {
  for (FlagGroup& group : generation_flag_groups()) own.groups.push_back(std::move(group));
  own.removed.push_back({.name = "--fused_decode",
                         .reason = "the plain decode path (cuBLASLt GEMMs, each step replayed as a CUDA graph), which "
                                   "every decode step runs, measured faster at every batch size (docs/PERF.md)"});
  own.required.insert(own.required.begin(), "--model_name_or_path");
  return own;
}

int run_generation_command(const std::vector<std::string>& args, const FlagTable& table,
                           const std::function<int(Flags&)>& body) {
  return run_with_flags(args, table, [&body](Flags& flags) {
    ZT_REQUIRE_USAGE(!flags.is_true("--merge_lora") || flags.count("--adapter_name_or_path"),
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
  // A flag not given leaves generation_config.json's value.
  auto given = [&](const char* name) { return flags.count(name) > 0; };
  if (given("--max_new_tokens")) {
    options.max_new_tokens = flags.integer("--max_new_tokens");
    options.max_new_tokens_set = true;
  }
  if (given("--min_new_tokens")) options.min_new_tokens = flags.integer("--min_new_tokens");
  if (given("--do_sample")) options.do_sample = flags.is_true("--do_sample");
  if (given("--temperature")) options.temperature = flags.number("--temperature");
  if (given("--top_k")) options.top_k = flags.integer("--top_k");
  if (given("--top_p")) options.top_p = flags.number("--top_p");
  if (given("--repetition_penalty")) options.repetition_penalty = flags.number("--repetition_penalty");
  if (given("--seed")) options.seed = static_cast<std::uint64_t>(flags.integer("--seed"));
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

// --merge_lora, applied to the loaded model.
models::CausalLM as_asked(const Flags& flags, models::CausalLM model) {
  if (!flags.is_true("--merge_lora")) return model;
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
  return as_asked(flags, load_model_maybe_four_bit(flags, device, dtype_from_flags(flags, device)));
}

models::CausalLM load_generation_model(Flags& flags, Device device, DType dtype) {
  return as_asked(flags, load_model_from_flags(flags, device, dtype));
}

infer::EngineOptions engine_options_from(const Flags& flags) {
  infer::EngineOptions options;
  options.max_batch = flags.integer("--max_batch");  // the table's defaults are EngineOptions'
  options.block_size = flags.integer("--block_size");
  return options;
}

int tensor_parallel_size(const Flags& flags) {
  const std::int64_t size = flags.integer("--tp");
  ZT_REQUIRE_USAGE(size <= 1024, "--tp must be a number of ranks from 1 up to 1024, got " + flags.text("--tp"));
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
  const std::string device_flag = flags.text("--device");
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

bool enable_thinking_from(const Flags& flags) { return flags.is_true("--enable_thinking"); }

std::unique_ptr<models::ChatTemplate> chat_template_from(const Flags& flags, const std::string& model_dir,
                                                         std::optional<bool> enable_thinking) {
  const std::string name = flags.text("--template");
  return models::make_run_chat_template(name, model_dir,
                                        {.enable_thinking = enable_thinking.value_or(enable_thinking_from(flags))});
}

}  // namespace zt::cli
