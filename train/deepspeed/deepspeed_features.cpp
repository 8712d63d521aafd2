// DeepSpeed's top-level keys besides the batch, clipping, optimizer, scheduler, precision and
// ZeRO (runtime/config.py and the feature configs it builds). A key switched off, left at
// DeepSpeed's default, or one that changes nothing under HF Trainer (where the Trainer, not
// DeepSpeed, loads data and writes logs) is accepted silently; one that asks for something
// zerotune does not do gets one warning saying so.
#include <algorithm>

#include "train/deepspeed/deepspeed_blocks.h"

namespace zt::train {
namespace {

struct Feature {
  const char* key;
  const char* reason;  // completes "<key> <reason>; ignored"
};

// Blocks that are on only while their switch ("enabled" unless named) is true.
struct SwitchedFeature {
  const char* key;
  const char* reason;
  const char* switch_key = "enabled";
};

const SwitchedFeature kSwitchedFeatures[] = {
    {"tensorboard", "is not supported: zerotune writes train_log.jsonl and loss-curve PNGs"},
    {"wandb", "is not supported: zerotune writes train_log.jsonl and loss-curve PNGs"},
    {"csv_monitor", "is not supported: zerotune writes train_log.jsonl and loss-curve PNGs"},
    {"comet", "is not supported: zerotune writes train_log.jsonl and loss-curve PNGs"},
    {"flops_profiler", "is not supported: zerotune logs tokens/s and MFU itself"},
    {"comms_logger", "is not supported: --zero_trace logs every collective"},
    {"autotuning", "is not supported; `zerotune estimate` recommends a ZeRO configuration"},
    {"eigenvalue", "is not supported"},
    {"progressive_layer_drop", "is not supported"},
    {"curriculum_learning", "is not supported"},
    {"data_efficiency", "is not supported"},
    {"elasticity", "is not supported: the batch sizes are the config's and the flags'"},
    {"nebula", "is not supported: zerotune writes its own checkpoints"},
    {"hybrid_engine", "is not supported"},
    {"amp", "(apex AMP) is not supported; use fp16 or bf16"},
    {"torch_autocast", "is not supported; use fp16 or bf16"},
    {"compile", "(DeepCompile) is not supported", "deepcompile"},
};

// Keys with no bearing on a run under HF Trainer, or whose every value zerotune honours.
const char* const kInertKeys[] = {
    "zero_allow_untested_optimizer",  // zerotune's optimizers are its own
    "zero_force_ds_cpu_optimizer",    // offload always steps zerotune's CPU Adam
    "dataloader_drop_last",           // the Trainer, not DeepSpeed, loads the data
    "vocabulary_size",                // DeepSpeed only warns about its alignment
    "checkpoint",                     // how DeepSpeed writes its own checkpoints
    "timers",                         // DeepSpeed's throughput timers
    "log_level",                      // ZT_LOG_LEVEL sets zerotune's
    "seq_parallel_communication_data_type",
    "use_data_before_expert_parallelism",
    "pipeline",  // the pipeline engine's settings; zerotune has no pipeline parallelism
    "aio",       // NVMe offload's I/O
    "graph_harvesting",
    "dump_state",
    "disable_allgather",
    "managed_gradient_accumulation",
};

// Features that are on by being present.
const Feature kPresentFeatures[] = {
    {"sparse_attention", "is not supported"},
    {"compression_training", "is not supported"},
    {"weight_quantization", "is not supported"},
    {"quantize_training", "is not supported"},
};

// A switch that is absent, null, false or an "auto" nothing filled is off.
bool switched_on(const nlohmann::json& block, const char* switch_key) {
  const auto it = block.find(switch_key);
  return it != block.end() && !it->is_null() && *it != false && *it != "auto";
}

bool all_off(const nlohmann::json& block) {
  return std::all_of(block.begin(), block.end(),
                     [](const nlohmann::json& value) { return value.is_null() || value == false; });
}

void read_gradient_averaging(ConfigBlock& root, std::vector<std::string>& warnings) {
  const char* averaging = "is not supported: zerotune sums gradients in fp32 and divides once by the token count";
  root.ignore_unless("prescale_gradients", false, averaging, warnings);
  root.ignore_unless("gradient_predivide_factor", 1.0, averaging, warnings);
  std::string op = root.get<std::string>("gradient_allreduce_op", "mean");
  std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return std::tolower(c); });
  ZT_REQUIRE(op == "mean" || op == "sum",
             root.where("gradient_allreduce_op") + " '" + op + "' is not one of mean, sum (DeepSpeed's choices)");
  if (op == "sum")
    warnings.push_back(root.where("gradient_allreduce_op") +
                       " sum is not supported: gradients are averaged over the ranks, as mean does; ignored");
}

}  // namespace

void read_other_features(ConfigBlock& root, std::vector<std::string>& warnings) {
  for (const SwitchedFeature& feature : kSwitchedFeatures) {
    if (!root.has(feature.key)) continue;
    root.child(feature.key, BlockKind::kAsWritten);  // refuses a value that is not an object
    if (switched_on(*root.value_of(feature.key), feature.switch_key))
      warnings.push_back(root.where(feature.key) + " " + feature.reason + "; ignored");
  }
  for (const char* key : kInertKeys) root.accept_any(key);
  for (const Feature& feature : kPresentFeatures) root.ignore(feature.key, feature.reason, warnings);
  root.ignore_unless("memory_breakdown", false, "is not supported: zerotune logs GPU memory itself", warnings);
  root.ignore_unless("sparse_gradients", false, "is not supported: gradients are dense", warnings);
  root.ignore_unless<std::int64_t>("sequence_parallel_size", 1, "(sequence parallelism) is not supported", warnings);
  read_gradient_averaging(root, warnings);
  root.child("activation_checkpointing", BlockKind::kAsWritten);
  if (root.has("activation_checkpointing") && !all_off(*root.value_of("activation_checkpointing")))
    warnings.push_back(root.where("activation_checkpointing") +
                       " configures deepspeed.checkpointing, which the models do not call: pass "
                       "--gradient_checkpointing; ignored");
  if (root.has("tensor_parallel")) {
    ConfigBlock block = root.child("tensor_parallel", BlockKind::kModel);
    if (block.get<std::int64_t>("autotp_size", 0) > 1)  // 0 and 1 are both off
      warnings.push_back(block.where("autotp_size") + " (tensor parallelism in training) is not supported; ignored");
  }
  if (root.has("data_types")) {
    ConfigBlock block = root.child("data_types", BlockKind::kAsWritten);
    block.ignore_unless<std::string>("grad_accum_dtype", "fp32", "is not supported: gradients accumulate in fp32",
                                     warnings);
    block.warn_unused("is not supported", warnings);
  }
}

}  // namespace zt::train
