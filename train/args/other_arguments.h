// The names `zerotune train` accepts without a member to set: every HF TrainingArguments field
// (transformers 4.40 to 5.x, Seq2SeqTrainingArguments' too) and LLaMA-Factory option that
// zerotune does not honour. Each is either without effect, for a reason, and warned about once
// when given a value other than its default; or refused, for a reason, when a value other
// than its default would change the training result and zerotune cannot do what it asks.
// LLaMA-Factory's table lists every option of its argument classes, the honoured ones too
// (with the zerotune flag each sets), so that one table says what becomes of each.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace zt::train {

// How a flag's text becomes a value, as HfArgumentParser types the field.
enum class ValueKind { kBool, kInteger, kNumber, kText, kList, kObject };

// kHonoured: a LLaMA-Factory name for one of zerotune's flags (argument_table.h).
enum class Verdict { kHonoured, kNoEffect, kRefused };

// kShared: a LLaMA-Factory option that other training scripts take too, with values of their own
// (FastChat's boolean flash_attn); its messages name no program.
enum class Origin { kTransformers, kLlamaFactory, kShared };

struct OtherArgument {
  const char* name;
  ValueKind kind;
  // JSON array of the values that need no word (the default, and values meaning what zerotune
  // does anyway); "*": every value. An object in it lists, by key, the values each key of a
  // given object may have.
  const char* quiet;
  Verdict verdict;
  // kNoEffect: why; kRefused: why, and what to do instead; kHonoured: the flag it sets.
  const char* reason;
  Origin origin = Origin::kTransformers;
  // A refused LLaMA-Factory option: the feature it asks for ("GaLore"), which the message names.
  const char* feature = nullptr;
};

// The reasons both tables give.
inline constexpr const char* kFusedKernelsAlwaysRun =
    "zerotune's fused RMSNorm, RoPE, SwiGLU and linear + cross-entropy kernels always run";
inline constexpr const char* kTokensPerSecondLogged = "tokens_per_second is in every log entry anyway";

// HF TrainingArguments' fields (transformers_arguments.cpp) and LLaMA-Factory's options
// (llama_factory_arguments.cpp).
const std::vector<OtherArgument>& transformers_other_arguments();
const std::vector<OtherArgument>& llama_factory_other_arguments();
// transformers' run_clm.py's own model and data options (run_clm_arguments.cpp).
const std::vector<OtherArgument>& run_clm_other_arguments();
// The entry of an accepted name without a member; nullptr for honoured and unknown names.
const OtherArgument* find_other_argument(std::string_view name);
// The zerotune flag a LLaMA-Factory name sets (cutoff_len: max_length), or nullptr.
const char* llama_factory_flag(std::string_view name);

// What a given value means: nothing to say, a warning, or a refusal, with its text.
struct Judgement {
  enum Kind { kQuiet, kWarning, kRefusal } kind = kQuiet;
  std::string message;
};
Judgement judge(const OtherArgument& argument, const nlohmann::json& value);

// The flag text `text` as the argument's kind reads it; an error line when it cannot be.
nlohmann::json value_from_text(const OtherArgument& argument, const std::string& text, std::string& error);

// Fields whose value is a secret (hub tokens, API keys): recorded and shown as a placeholder.
bool is_secret(std::string_view name);

}  // namespace zt::train
