// What `zerotune generate` and `zerotune chat` share: the sampling flags (transformers'
// GenerationConfig names, defaults from the model's generation_config.json), the engine's
// batching flags, the stop ids (the model's eos ids and the chat template's end of turn), and
// --tp N, tensor parallelism over N ranks (infer/tensor_parallel_ranks.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "infer/engine.h"
#include "infer/tensor_parallel_engine.h"
#include "infer/tensor_parallel_ranks.h"
#include "models/generation/generate_options.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::cli {

// --template NAME (the names from text/chat_template/template_names.h) and --enable_thinking,
// declared once for generate, chat, serve and evaluate.
Flag template_flag();
Flag enable_thinking_flag();

// The flags every generating command takes beside its own, declared once: the model's
// (cli/flags.h), the sampling flags (transformers' GenerationConfig names), the chat
// template, the engine's batching, --tp, --merge_lora and the 4-bit base's.
std::vector<FlagGroup> generation_flag_groups();

// A generating command's whole table: `own` (the command's own flags), the groups above after
// them, --model_name_or_path required, and --fused_decode refused with why it was removed.
FlagTable generation_table(FlagTable own);

// run_with_flags for a generating command's table (generation_table): --merge_lora checked to
// have an adapter and --model_name_or_path resolved to a folder before `body` runs.
int run_generation_command(const std::vector<std::string>& args, const FlagTable& table,
                           const std::function<int(Flags&)>& body);

// generation_config.json of `model_dir` overridden by the flags; stops also at the
// tokenizer's eos and at `chat_template`'s end-of-turn tokens when one is given.
models::GenerationOptions generation_options_from(const Flags& flags, const std::string& model_dir,
                                                  const models::CausalLM& model, const models::Tokenizer& tokenizer,
                                                  const models::ChatTemplate* chat_template);

// The options of one prompt of `prompt_tokens` on `model`: generation_options_from's, with the
// answer's length fitted to the room the prompt leaves (models::fit_answer_length).
models::FittedAnswer answer_options(const models::GenerationOptions& options, const models::CausalLM& model,
                                    std::size_t prompt_tokens);

// Whether `generated` stopped at its length limit rather than at a stop id: a cut answer.
bool cut_at_limit(const models::GenerationOptions& options, const std::vector<std::int64_t>& generated);

// What set the limit an answer of `fitted` was cut at, and how to raise it, for a message:
// "--max_new_tokens 64; a larger --max_new_tokens allows more".
std::string limit_reason(const models::FittedAnswer& fitted, const Flags& flags, const models::CausalLM& model);

infer::EngineOptions engine_options_from(const Flags& flags);

// --device's device (flags.h), checked before a model goes there: a GPU must be one zerotune's
// kernels run on (runtime/device.h); on the CPU a 16-bit --dtype is logged with what the CPU
// really computes in.
Device check_run_device(const Flags& flags);

// load_model_from_flags after check_run_device, with the LoRA adapter merged into the weights
// under --merge_lora, and the base kept 4-bit for a "-bnb-4bit" folder or --quantization_bit 4
// (cli/four_bit_base.h). The second form, which tensor parallelism loads with, is always dense.
models::CausalLM load_generation_model(Flags& flags);
models::CausalLM load_generation_model(Flags& flags, Device device, DType dtype);

// --template NAME, else the model's own (models::make_run_chat_template), with --enable_thinking
// (default true), or with `enable_thinking` when given.
std::unique_ptr<models::ChatTemplate> chat_template_from(const Flags& flags, const std::string& model_dir,
                                                         std::optional<bool> enable_thinking = std::nullopt);
bool enable_thinking_from(const Flags& flags);

// --tp N: the ranks the model is split over (default 1, the whole model on one device).
int tensor_parallel_size(const Flags& flags);

// Runs `body` on every rank of --tp N: the model of the flags (adapters included) split N
// ways, on --device's GPU (or the CPU) as N in-process ranks, or under a launcher as this
// process's rank on its local GPU. A model that does not split N ways is refused first.
void run_tensor_parallel_from_flags(Flags& flags, const std::function<void(infer::TensorParallelRank&)>& body);

// A rank's engine options: the batching flags, and how many ranks share its device.
infer::TensorParallelOptions tensor_parallel_options_from(const Flags& flags, const infer::TensorParallelRank& rank);

}  // namespace zt::cli
