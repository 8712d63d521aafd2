// DeepSpeed's top-level keys besides the batch, clipping, optimizer, scheduler, precision and
// ZeRO (runtime/config.py and every sub-config it builds), each with a decision: a feature
// zerotune does not have is warned about by name while it is on, or refused with the reason
// where running without it would train otherwise than the config describes (another parallel
// layout, other batch sizes); a key with no bearing on a run under HF Trainer (where the
// Trainer, not DeepSpeed, loads the data and writes the checkpoints) is accepted silently.
// Inside a section the keys DeepSpeed reads are listed (deepspeed_sections.h), so that a near
// miss of a key that switches it on is an error and any other unknown key only a note.
#include <algorithm>
#include <optional>

#include "train/deepspeed/deepspeed_blocks.h"
#include "train/deepspeed/deepspeed_sections.h"

namespace zt::train {
namespace {

using nlohmann::json;

// A switch DeepSpeed reads as off: absent, null, false, 0, "false", or an "auto" nothing filled.
bool is_off(const json* value) {
  if (value == nullptr || value->is_null() || *value == false || *value == "auto" || *value == "false") return true;
  return value->is_number() && value->get<double>() == 0.0;
}

// Whether any "enabled" inside `node`, at any depth, is on (compression_training's techniques).
bool any_enabled(const json& node) {
  if (node.is_array()) return std::any_of(node.begin(), node.end(), any_enabled);
  if (!node.is_object()) return false;
  if (const auto it = node.find("enabled"); it != node.end() && !is_off(&*it)) return true;
  return std::any_of(node.begin(), node.end(), any_enabled);
}

// The key of `section` that turns it on ("" when it is on by being present), or nullopt while
// it is off.
std::optional<std::string> switched_on(const Section& section, ConfigBlock& block, const json& node) {
  if (section.effect == Effect::kNone || section.effect == Effect::kHonour) return std::nullopt;
  if (section.nested_switches) return any_enabled(node) ? std::optional<std::string>("") : std::nullopt;
  if (section.switches.empty()) return "";
  for (const std::string& key : section.switches)
    if (!is_off(block.value_of(key))) return key;
  return std::nullopt;
}

// One section: an object, on or off by its switches, its unknown keys noted (a near miss of a
// switch is an error: ignoring it would leave the section off).
void read_section(ConfigBlock& root, const Section& section, std::vector<std::string>& warnings) {
  if (section.effect == Effect::kNone) root.accept_any(section.key);
  if (!root.has(section.key)) return;
  ConfigBlock block = root.child(section.key, BlockKind::kAsWritten);  // refuses a value that is not an object
  const json& node = *root.value_of(section.key);
  if (const std::optional<std::string> on = switched_on(section, block, node)) {
    const std::string named = on->empty() ? block.where("") : block.where(*on) + " = " + node.at(*on).dump();
    if (section.effect == Effect::kRefuse)
      fail(named + " asks for " + section.what + ", which zerotune training does not support: " + section.why);
    warnings.push_back(named + " (" + section.what + ") has no effect in zerotune: " + section.why + "; ignored");
  }
  if (section.fields == std::vector<std::string>{"*"}) {  // handed on whole: any key may be one DeepSpeed reads
    for (const auto& [key, value] : node.items()) block.accept_any(key);
    return;
  }
  for (const std::string& key : section.switches) block.read_any(key);
  for (const std::string& key : section.fields)  // a section zerotune honours: a near miss of any of its keys matters
    section.effect == Effect::kHonour ? block.read_any(key) : block.accept_any(key);
  block.note_unread(std::string("is not read by DeepSpeed's ") + section.key + " section", warnings);
}

void read_gradient_averaging(ConfigBlock& root, std::vector<std::string>& warnings) {
  const char* averaging = "has no effect in zerotune: it sums gradients in fp32 and divides once by the token count";
  root.ignore_unless("prescale_gradients", false, averaging, warnings);
  root.ignore_unless("gradient_predivide_factor", 1.0, averaging, warnings);
  std::string op = root.get<std::string>("gradient_allreduce_op", "mean");
  std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return std::tolower(c); });
  ZT_REQUIRE(op == "mean" || op == "sum",
             root.where("gradient_allreduce_op") + " '" + op + "' is not one of mean, sum (DeepSpeed's choices)");
  if (op == "sum")
    warnings.push_back(root.where("gradient_allreduce_op") +
                       " sum has no effect in zerotune: gradients are averaged over the ranks, as mean does; ignored");
}

// The dtype one of DeepSpeed's names for it (its DtypeEnum) stands for; "" for another name.
std::string dtype_named(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* fp16 : {"fp16", "float16", "half", "torch.float16"})
    if (name == fp16) return "fp16";
  for (const char* bf16 : {"bf16", "bfloat16", "torch.bfloat16"})
    if (name == bf16) return "bf16";
  for (const char* fp32 : {"fp32", "float32", "float", "torch.float32"})
    if (name == fp32) return "fp32";
  return name == "int8" || name == "torch.int8" ? "int8" : "";
}

// grad_accum_dtype (`named`, as dtype_named gives it): fp32 or the working dtype, DeepSpeed's
// default; any other is refused. Stages 1 and 2 over several ranks keep their gradients in
// it (train/zero/zero_engine.h), stage 1 its whole gradients with offload too; where zerotune's
// gradients stay fp32 whatever it says, a 16-bit one is warned about (one rank:
// train/zero/single_rank_note.h).
void read_grad_accum_dtype(ConfigBlock& block, const std::string& named, DeepSpeedConfig& config,
                           std::vector<std::string>& warnings) {
  if (named.empty()) return;
  ZT_REQUIRE(named != "int8", block.where("grad_accum_dtype") +
                                  " int8 is not a dtype gradients accumulate in: write \"fp32\" or the working dtype "
                                  "(or remove it: DeepSpeed's default is the working dtype)");
  // Without fp16/bf16 blocks the flags choose the precision: the trainer's plan checks it then.
  if (config.fp16 || config.bf16 || config.precision_set) {
    const DType working = config.fp16 ? DType::kF16 : config.bf16 ? DType::kBF16 : DType::kF32;
    const std::string conflict = grad_accum_dtype_conflict(deepspeed_dtype(named), working);
    ZT_REQUIRE(conflict.empty(), config.source + ": " + conflict);
  }
  config.zero.grad_accum_dtype = deepspeed_dtype(named);
  if (named == "fp32") return;
  const ZeroConfig& zero = config.zero;
  // Stage 1 with offload keeps its whole gradients in it on the device (whole_gradient_dtype).
  const std::string why = zero.stage == 0   ? "stage 0 keeps whole fp32 gradients on every rank"
                          : zero.stage == 3 ? "stage 3 accumulates its gradient partition in fp32"
                          : zero.stage == 2 && zero.offload_optimizer
                              ? "with offload_optimizer the gradients accumulate in fp32 for the CPU Adam"
                              : "";
  if (!why.empty())
    warnings.push_back(block.where("grad_accum_dtype") + " = " + block.value_of("grad_accum_dtype")->dump() +
                       " has no effect in zerotune: " + why + "; ignored");
}

// data_types: grad_accum_dtype and buffer_dtype choose what zerotune fixes; param_dtype only
// restates the precision, and DeepSpeed refuses one that disagrees with fp16/bf16.
void read_data_types(ConfigBlock& root, DeepSpeedConfig& config, std::vector<std::string>& warnings) {
  ConfigBlock block = root.child("data_types", BlockKind::kAsWritten);
  std::string named[3];
  const char* keys[3] = {"grad_accum_dtype", "param_dtype", "buffer_dtype"};
  for (int i = 0; i < 3; ++i) {
    if (!block.has(keys[i])) continue;
    const std::string name = block.get<std::string>(keys[i], "");
    named[i] = dtype_named(name);
    ZT_REQUIRE(!named[i].empty(),
               block.where(keys[i]) + " '" + name + "' is not a dtype DeepSpeed knows (fp32, fp16, bf16, int8)");
  }
  read_grad_accum_dtype(block, named[0], config, warnings);
  const std::string precision = config.fp16 ? "fp16" : config.bf16 ? "bf16" : "fp32";
  ZT_REQUIRE(named[1].empty() || named[1] == precision,
             block.where("param_dtype") + " " + named[1] + " disagrees with the precision, " + precision +
                 " (fp16/bf16 \"enabled\", or the flags), and DeepSpeed refuses that too: enable the matching "
                 "block or remove param_dtype");
  if (!named[2].empty())
    warnings.push_back(block.where("buffer_dtype") + " = " + block.value_of("buffer_dtype")->dump() +
                       " has no effect in zerotune: the model's buffers keep the dtype they are built in; ignored");
  block.note_unread("is not read by DeepSpeed's data_types section", warnings);
}

// Parallel layouts zerotune does not train with: the data-parallel size, and what each rank
// holds, would differ from what the config describes.
void refuse_other_parallelism(ConfigBlock& root, std::vector<std::string>& warnings) {
  if (const std::int64_t size = root.get<std::int64_t>("sequence_parallel_size", 1); size > 1)
    fail(root.where("sequence_parallel_size") + " = " + std::to_string(size) +
         " asks for DeepSpeed's Ulysses sequence parallelism (each sequence split over " + std::to_string(size) +
         " GPUs, which divides the data-parallel size), which zerotune training does not support: remove it or "
         "set it to 1");
  if (root.has("seq_parallel_communication_data_type")) {
    const std::string type = root.get<std::string>("seq_parallel_communication_data_type", "");
    const std::string named = dtype_named(type);
    ZT_REQUIRE(named == "fp32" || named == "fp16" || named == "bf16",
               root.where("seq_parallel_communication_data_type") + " '" + type + "' is not one of fp32, fp16, bf16");
  }
  root.accept_any("seq_parallel_communication_data_type");  // sequence parallelism's, which is off here
  if (!root.has("tensor_parallel")) return;
  ConfigBlock block = root.child("tensor_parallel", BlockKind::kModel);
  if (const std::int64_t size = block.get<std::int64_t>("autotp_size", 0); size > 1)  // 0 and 1 are both off
    fail(block.where("autotp_size") + " = " + std::to_string(size) +
         " asks for DeepSpeed's AutoTP training (each layer split over " + std::to_string(size) +
         " GPUs), which zerotune training does not support: remove the tensor_parallel block (or set autotp_size "
         "to 0) to train data-parallel, with ZeRO stage 3 to shard the weights over the GPUs");
  for (const char* key : kTensorParallelFields) block.accept_any(key);
  block.note_unread("is not read by DeepSpeed's tensor_parallel section", warnings);
}

}  // namespace

DType deepspeed_dtype(const std::string& named) {
  return named == "fp16" ? DType::kF16 : named == "bf16" ? DType::kBF16 : DType::kF32;
}

void read_other_features(ConfigBlock& root, DeepSpeedConfig& config, std::vector<std::string>& warnings) {
  for (const Section& section : kSections) read_section(root, section, warnings);
  for (const char* key : kInertKeys) root.accept_any(key);
  root.ignore_unless("memory_breakdown", false, "has no effect in zerotune: it logs GPU memory itself", warnings);
  root.ignore_unless("sparse_gradients", false, "has no effect in zerotune: gradients are dense", warnings);
  read_gradient_averaging(root, warnings);
  refuse_other_parallelism(root, warnings);
  read_data_types(root, config, warnings);
}

}  // namespace zt::train
