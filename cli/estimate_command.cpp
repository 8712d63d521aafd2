// `zerotune estimate`: the memory a training run needs per GPU and per node's host memory for
// every ZeRO stage with and without optimizer offload, and stage 3 with parameter offload
// (train/memory_estimate.h), which of them
// fit the GPU, and the fastest one that does. It reads only config.json: no weights needed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/estimate_training_file.h"
#include "cli/flags.h"
#include "cli/four_bit_base.h"
#include "models/config/config.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/usage_error.h"
#include "train/args/training_arguments.h"
#include "train/memory_deepspeed.h"
#include "train/memory_estimate.h"
#include "train/memory_recommendation.h"

namespace zt::cli {
namespace {

constexpr const char* kDescription =
    "Prints, for ZeRO stages 0-3 without and with optimizer offload (offload none, cpu) and for stage 3\n"
    "with parameter offload, alone and with optimizer offload (offload param, both), the GiB each GPU\n"
    "needs (model states; stage 3's gathered modules; activations of a packed micro-batch of B x S\n"
    "tokens; the fused loss; a 1 GiB reserve) and the GiB of host memory each node needs, and marks the\n"
    "rows that fit --gpu_memory, or without it GPUs of 24, 40, 48, 80, 96 and 141 GiB (and the visible\n"
    "GPU's). Then it recommends the fastest configuration that fits within 90% of the GPU (the rest\n"
    "is headroom for fragmentation and the CUDA context), with the `zerotune train` flags that run\n"
    "it: stages 0, 1, 2, then 1-2 with optimizer offload (each at the asked micro-batch, then halved);\n"
    "only when none fits, the same with gradient checkpointing, then stage 3 and 3 with optimizer\n"
    "offload (whose engine recomputes every layer); then 3 with parameter offload, the slowest (param,\n"
    "then both); LoRA only when no full fine-tuning fits, and QLoRA (LoRA on a 4-bit base) only when\n"
    "no LoRA fits. Needs no GPU. The model states are zerotune's own buffers; docs/TRAINING.md\n"
    "(Memory) says how they differ from DeepSpeed's.\n";

FlagTable flag_table() {
  return {
      .command = "estimate",
      .description = kDescription,
      .groups =
          {{"Model",
            {with_help(model_flag("--model_name_or_path"),
                       "the model folder whose config.json is read, or a hub id (Org/Name), of which only config.json "
                       "is read from the hub cache or downloaded there"),
             model_flag("--revision"),
             {.name = "--config", .value = "config.json", .help = "a model's config.json instead of its folder"}}},
           {"The run",
            {{.name = "--num_gpus",
              .kind = FlagKind::kPositiveInteger,
              .value = "N",
              .help = "GPUs per node, default the visible GPUs (1 with none); the world is N x M ranks",
              .aliases = {"--num_gpus_per_node"}},
             {.name = "--num_nodes",
              .kind = FlagKind::kPositiveInteger,
              .value = "M",
              .help = "nodes",
              .default_value = "1"},
             {.name = "--micro_batch",
              .kind = FlagKind::kPositiveInteger,
              .value = "B",
              .help = "sequences per micro-batch",
              .default_value = "1",
              .aliases = {"--per_device_train_batch_size"}},
             {.name = "--max_length",
              .kind = FlagKind::kPositiveInteger,
              .value = "S",
              .help = "tokens per sequence",
              .default_value = "1024",
              .aliases = {"--cutoff_len"}},
             {.name = "--gradient_checkpointing",
              .kind = FlagKind::kBool,
              .help = "recompute activations in backward (on by default with --quantization_bit, as in PEFT's QLoRA)"},
             {.name = "--disable_gradient_checkpointing",
              .kind = FlagKind::kBool,
              .help = "keep every activation (LLaMA-Factory's name; turns off the default of --quantization_bit)"},
             with_help(model_flag("--dtype"), "the training dtype: bfloat16, float16 or float32"),
             {.name = "--reduce_bucket_size",
              .kind = FlagKind::kPositiveInteger,
              .value = "N",
              .help = "ZeRO bucket in elements (DeepSpeed's default)",
              .default_value = std::to_string(train::MemorySettings{}.reduce_bucket_size)},
             {.name = "--deepspeed",
              .value = "ds_config.json",
              .help = "your DeepSpeed config (a path or the JSON itself): its ZeRO stage, offload, buckets, precision "
                      "and micro-batch, read as zerotune train reads them; its fit is reported first"}}},
           {"Memory",
            {{.name = "--gpu_memory",
              .kind = FlagKind::kPositiveNumber,
              .value = "GIB",
              .help = "GiB per GPU; default: a column for each common size"},
             {.name = "--host_memory",
              .kind = FlagKind::kPositiveNumber,
              .value = "GIB",
              .help = "GiB of host memory per node; when given, offload that needs more is not recommended"}}},
           {"Fine-tuning method",
            {{.name = "--finetuning_type",
              .kind = FlagKind::kChoice,
              .help = "full or lora: only the LoRA matrices train (--lora_rank and --lora_target also size the LoRA "
                      "a full run falls back to)",
              .default_value = "full",
              .choices = {"full", "lora"}},
             {.name = "--lora_rank",
              .kind = FlagKind::kPositiveInteger,
              .value = "R",
              .help = "LoRA rank r",
              .default_value = "8"},
             {.name = "--lora_target",
              .value = "MODULES",
              .help = "comma-separated module names, or all",
              .default_value = "all"},
             with_help(four_bit_flag("--quantization_bit"),
                       "QLoRA: the decoder's linear weights in bitsandbytes' 4 bits (blocks of 64), every layer "
                       "recomputed in backward; stages 0-2 only"),
             with_help(four_bit_flag("--double_quantization"), "with --quantization_bit 4: 1-byte block scales")}}},
      .one_of = {"--model_name_or_path", "--config"}};
}

// The memory of common training GPUs, as their makers state it: RTX 3090/4090 and A10 (24),
// A100 40GB (40), A40, L40S and RTX 6000 Ada (48), A100/H100 80GB (80), RTX PRO 6000 (96) and
// H200 (141). A card reports a little less than its size to programs (an 80 GB H100: 79.2 GiB).
constexpr double kCommonGpuMemory[] = {24, 40, 48, 80, 96, 141};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

models::ModelConfig config_from_flags(const Flags& flags) {
  if (flags.count("--model_name_or_path")) return models::load_config(flags.at("--model_name_or_path"));
  return models::parse_config(models::read_json_file(flags.at("--config")), flags.at("--config"));
}

// --name as GiB, when given.
std::optional<double> gib_flag(const Flags& flags, const std::string& name) {
  if (!flags.count(name)) return std::nullopt;
  return flags.number(name);
}

int visible_gpus() { return cuda_available() ? cuda_device_count() : 0; }

// The GPU sizes to mark what fits: --gpu_memory, or the common sizes and the visible GPU's.
std::vector<double> gpu_budgets(const std::optional<double>& given) {
  if (given) return {*given};
  std::vector<double> sizes(std::begin(kCommonGpuMemory), std::end(kCommonGpuMemory));
  if (visible_gpus() > 0) {
    const double own = std::floor(static_cast<double>(device_properties(0).total_memory) / kGiB * 10) / 10;
    if (std::find(sizes.begin(), sizes.end(), own) == sizes.end()) sizes.push_back(own);
    std::sort(sizes.begin(), sizes.end());
  }
  return sizes;
}

train::MemorySettings settings_from_flags(const Flags& flags, const models::ModelConfig& config) {
  train::MemorySettings s;
  s.gpus_per_node = static_cast<int>(integer_flag_or(flags, "--num_gpus", std::max(1, visible_gpus())));
  s.nodes = static_cast<int>(flags.integer("--num_nodes"));
  s.micro_batch = flags.integer("--micro_batch");
  s.max_length = flags.integer("--max_length");
  s.reduce_bucket_size = flags.integer("--reduce_bucket_size");
  s.gradient_checkpointing = flags.is_true("--gradient_checkpointing");
  if (flags.count("--dtype")) s.dtype = parse_dtype(flags.at("--dtype"));
  ZT_REQUIRE_USAGE(s.dtype == DType::kBF16 || s.dtype == DType::kF16 || s.dtype == DType::kF32,
                   std::string("--dtype ") + dtype_name(s.dtype) + ": training runs in bfloat16, float16 or float32");
  if (flags.text("--finetuning_type") == "lora")
    s.trainable_numels =
        train::lora_trainable_numels(config, flags.integer("--lora_rank"), flags.text("--lora_target"));
  ZT_REQUIRE_USAGE(!flags.count("--double_quantization") || flags.count("--quantization_bit"),
                   "--double_quantization describes the 4-bit base of --quantization_bit 4: add that");
  if (flags.count("--quantization_bit")) {
    ZT_REQUIRE_USAGE(!s.full_finetuning(),
                     "--quantization_bit 4 trains LoRA on the 4-bit base (quantized weights "
                     "cannot be trained): add --finetuning_type lora");
    s.quantized_base = true;
    s.double_quant = flags.is_true("--double_quantization");
    // As zerotune train runs a 4-bit base: recomputed unless turned off by name.
    s.gradient_checkpointing = !flags.count("--gradient_checkpointing") || s.gradient_checkpointing;
  }
  if (flags.is_true("--disable_gradient_checkpointing")) s.gradient_checkpointing = false;
  return s;
}

bool fits(std::int64_t bytes, double budget_gib) { return static_cast<double>(bytes) <= budget_gib * kGiB; }

std::string gib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(bytes) / kGiB);
  return text;
}

std::string millions(std::int64_t count) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fM", static_cast<double>(count) / 1e6);
  return text;
}

std::string cell(const std::string& text, std::size_t width) {
  return std::string(width > text.size() ? width - text.size() : 0, ' ') + text;
}

// A budget as people write it: 24, 79.1.
std::string size_text(double gib_size) {
  std::ostringstream text;
  text << gib_size;
  return text.str();
}

// "40, 48 and 80": the sizes, for a sentence.
std::string size_list(const std::vector<double>& sizes) {
  std::string out;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    out.append(i == 0 ? "" : i + 1 == sizes.size() ? " and " : ", ").append(size_text(sizes[i]));
  return out;
}

std::string zero_name(const train::MemorySettings& s) {
  const std::string stage = "ZeRO stage " + std::to_string(s.stage);
  char share[48] = "";
  if (s.offload && s.offload_ratio < 1.0)
    std::snprintf(share, sizeof share, " (ratio %.1f: the CPU updates that share)", s.offload_ratio);
  if (s.offload_param)
    return stage +
           (s.offload ? " with optimizer" + std::string(share) + " and parameter offload" : " with parameter offload");
  return stage + (s.offload ? " with optimizer offload" + std::string(share) : " without optimizer offload");
}

// The table's offload column: none, cpu (the optimizer), param, both.
std::string offload_label(const train::MemorySettings& s) {
  if (s.offload_param) return s.offload ? "both" : "param";
  return s.offload ? "cpu" : "none";
}

bool offloads(const train::MemorySettings& s) { return s.offload || s.offload_param; }

void print_header(const models::ModelConfig& config, const train::MemorySettings& s, const train::MemoryEstimate& e,
                  bool gpus_given) {
  std::cout << architecture_name(config.arch) << " model, " << millions(e.model_parameters) << " parameters"
            << (s.full_finetuning() ? "" : ", " + millions(e.trainable_parameters) + " trainable (LoRA)")
            << (s.quantized_base
                    ? std::string(", 4-bit base (QLoRA") + (s.double_quant ? ", double quantization)" : ")")
                    : std::string())
            << ", " << dtype_name(s.dtype) << "; " << s.nodes << " node(s) x " << s.gpus_per_node << " GPU(s)"
            << (gpus_given           ? ""
                : visible_gpus() > 0 ? " (the visible GPUs)"
                                     : " (no GPU is visible; --num_gpus sets the count)")
            << "; micro-batch " << s.micro_batch << " x " << s.max_length << " tokens"
            << (s.gradient_checkpointing ? ", gradient checkpointing" : "") << "\n";
  std::cout << "per GPU in every row: fused loss " << gib(e.loss) << " GiB, reserve " << gib(e.reserve) << " GiB\n";
  if (s.world_size() == 1)
    std::cout << "one GPU: ZeRO has nothing to partition, so stages 0-3 need the same memory; optimizer offload "
                 "(stages 1-3) moves the optimizer's state to the host, and parameter offload (stage 3: one process "
                 "runs the stage-3 engine over one rank) moves the weights too\n";
  std::cout << "\n";
}

// The fit of the user's own DeepSpeed config, before the table of every configuration.
void print_deepspeed_fit(const models::ModelConfig& config, const train::DeepSpeedMemorySettings& ds,
                         const std::vector<double>& budgets) {
  const train::MemoryEstimate e = train::estimate_memory(config, ds.settings);
  std::vector<double> fit, miss;
  for (double budget : budgets) (fits(e.gpu_total(), budget) ? fit : miss).push_back(budget);
  std::cout << ds.source << ": " << zero_name(ds.settings) << ", " << dtype_name(ds.settings.dtype) << ", micro-batch "
            << ds.settings.micro_batch << ": " << gib(e.gpu_total()) << " GiB per GPU, " << gib(e.host_per_node())
            << " GiB of host memory per node; ";
  if (miss.empty())
    std::cout << "fits " << size_list(fit) << " GiB\n";
  else if (fit.empty())
    std::cout << "does not fit " << size_list(miss) << " GiB\n";
  else
    std::cout << "fits " << size_list(fit) << " GiB, not " << size_list(miss) << " GiB\n";
  for (const std::string& warning : ds.warnings) std::cout << "  warning: " << warning << "\n";
  std::cout << "\n";
}

// The table's rows, by stage: without and with optimizer offload, then stage 3 with parameter
// offload, alone and with optimizer offload.
constexpr train::ZeroRow kTableRows[] = {{0, false}, {0, true},  {1, false}, {1, true},        {2, false},
                                         {2, true},  {3, false}, {3, true},  {3, false, true}, {3, true, true}};

void print_table(const models::ModelConfig& config, train::MemorySettings settings, const std::vector<double>& budgets,
                 bool gpus_given) {
  std::string fits_header = "  fits";
  for (double budget : budgets) fits_header.append(" ").append(cell(size_text(budget), 4));
  fits_header += " GiB";
  for (const train::ZeroRow& row : kTableRows) {
    if (settings.quantized_base && row.stage == 3) continue;  // both partition the base weights
    settings.stage = row.stage;
    settings.offload = row.offload;
    settings.offload_param = row.offload_param;
    const train::MemoryEstimate e = train::estimate_memory(config, settings);
    if (row.stage == 0 && !row.offload) {
      print_header(config, settings, e, gpus_given);
      std::cout << "stage  offload  params  gradients  optimizer  gathered  activations  per GPU  host per node"
                << fits_header << "\n";
    }
    std::cout << cell(std::to_string(row.stage), 5) << cell(offload_label(settings), 9)
              << cell(gib(e.gpu.parameters), 8) << cell(gib(e.gpu.gradients), 11)
              << cell(gib(e.gpu.optimizer_state), 11) << cell(gib(e.transient), 10) << cell(gib(e.activations), 13)
              << cell(gib(e.gpu_total()), 9) << cell(gib(e.host_per_node()), 15) << "      ";
    for (double budget : budgets)
      std::cout << cell(fits(e.gpu_total(), budget) ? "yes" : "no",
                        std::max<std::size_t>(size_text(budget).size(), 4) + 1);
    std::cout << (train::trainer_runs(row.stage, row.offload) ? "" : "  (DeepSpeed offloads with stages 1-3 only)")
              << "\n";
  }
  std::cout << "\n";
}

// The DeepSpeed config of a recommendation, as the one JSON argument --deepspeed also takes: its
// zero_optimization, and "auto" (filled from the flags) where DeepSpeed needs a batch size and
// where --bf16 must reach it.
std::string deepspeed_json(const train::MemorySettings& s) {
  nlohmann::ordered_json zero{{"stage", s.stage}};
  if (s.offload) zero["offload_optimizer"] = {{"device", "cpu"}};
  if (s.offload && s.offload_ratio < 1.0) zero["offload_optimizer"]["ratio"] = s.offload_ratio;
  if (s.offload_param) zero["offload_param"] = {{"device", "cpu"}};
  return nlohmann::ordered_json{
      {"train_micro_batch_size_per_gpu", "auto"}, {"zero_optimization", zero}, {"bf16", {{"enabled", "auto"}}}}
      .dump();
}

// The `zerotune train` flags that run a recommendation.
std::string train_flags(const train::Recommendation& r, const Flags& flags) {
  // The method always: a command without one may imply another (train/args/training_arguments.cpp).
  std::string out;
  if (r.settings.full_finetuning())
    out += " --finetuning_type full";
  else
    out += " --finetuning_type lora" +
           (flags.count("--lora_rank") ? " --lora_rank " + flags.at("--lora_rank") : std::string()) +
           (flags.count("--lora_target") ? " --lora_target " + flags.at("--lora_target") : std::string());
  if (r.switched_to_qlora) out += " --quantization_bit 4";
  if (r.settings.gradient_checkpointing) out += " --gradient_checkpointing";
  if (r.settings.quantized_base && !r.settings.gradient_checkpointing) out += " --disable_gradient_checkpointing";
  out += " --per_device_train_batch_size " + std::to_string(r.settings.micro_batch);
  return out + " --deepspeed '" + deepspeed_json(r.settings) + "'";
}

std::string budget_text(double budget, std::optional<double> host) {
  std::ostringstream text;
  text << budget << " GiB per GPU";
  if (host) text << " and " << *host << " GiB of host memory per node";
  return text.str();
}

// "ZeRO stage 3 with optimizer offload, gradient checkpointing, 18.83 of 24 GiB per GPU, ...".
std::string recommendation_text(const train::Recommendation& r, const train::MemorySettings& asked, double budget) {
  const train::MemorySettings& s = r.settings;
  std::ostringstream text;
  text << zero_name(s);
  if (s.gradient_checkpointing != asked.gradient_checkpointing) text << ", gradient checkpointing";
  if (s.micro_batch != asked.micro_batch) text << ", micro-batch " << s.micro_batch;
  if (r.switched_to_qlora)
    text << ", QLoRA (LoRA on a 4-bit base, " << millions(r.estimate.trainable_parameters) << " trainable)";
  else if (r.switched_to_lora)
    text << ", LoRA (" << millions(r.estimate.trainable_parameters) << " trainable)";
  text << ", " << gib(r.estimate.gpu_total()) << " of " << budget << " GiB per GPU";
  if (offloads(s)) text << ", " << gib(r.estimate.host_per_node()) << " GiB of host memory per node";
  return text.str();
}

void print_recommendation(const train::Recommendation& r, const train::MemorySettings& asked, const Flags& flags,
                          double budget, std::optional<double> host) {
  const train::MemorySettings& s = r.settings;
  std::cout << "recommended: " << recommendation_text(r, asked, budget) << "\n";
  if (r.switched_to_lora)
    std::cout << "  full fine-tuning fits in no configuration within " << budget_text(budget, host) << "\n";
  if (r.switched_to_qlora)
    std::cout << "  LoRA on the " << dtype_name(asked.dtype) << " base fits no configuration without parameter offload "
              << "within " << budget_text(budget, host)
              << " (dequantizing a layer costs less than moving it over PCIe in every pass)\n";
  if (s.micro_batch < asked.micro_batch)
    std::cout << "  " << asked.micro_batch / s.micro_batch
              << "x the --gradient_accumulation_steps keeps the global batch of micro-batch " << asked.micro_batch
              << "\n";
  std::cout << "  zerotune train" << train_flags(r, flags) << " ...\n";
}

// Why a row the table marks as fitting may not be the one recommended.
std::string headroom_note(double budget) {
  std::ostringstream text;
  text << "(a recommendation uses at most " << train::kUsableGpuShare * 100 << "% of the GPU, "
       << std::floor(budget * train::kUsableGpuShare * 100) / 100
       << " GiB here: the rest is headroom for allocator fragmentation, the CUDA context and library workspaces)";
  return text.str();
}

std::string nothing_fits(double budget, std::optional<double> host) {
  return "nothing fits " + budget_text(budget, host) +
         ", not even QLoRA (LoRA on a 4-bit base) with micro-batch 1 within " +
         size_text(budget * train::kUsableGpuShare) + " GiB: lower --max_length, use more GPUs" +
         (host ? " or more host memory" : "");
}

std::optional<train::Recommendation> recommend(const models::ModelConfig& config, const train::MemorySettings& settings,
                                               const Flags& flags, double budget, std::optional<double> host) {
  const train::MemoryBudget limits{
      .gpu_bytes = static_cast<std::int64_t>(budget * kGiB),
      .host_bytes = host ? std::optional<std::int64_t>(static_cast<std::int64_t>(*host * kGiB)) : std::nullopt};
  const std::vector<std::int64_t> lora =
      train::lora_trainable_numels(config, flags.integer("--lora_rank"), flags.text("--lora_target"));
  return train::recommend_configuration(config, settings, limits, lora);
}

// One size: the recommendation with its flags. Several: one line per size.
void print_recommendations(const models::ModelConfig& config, const train::MemorySettings& settings, const Flags& flags,
                           const std::vector<double>& budgets, std::optional<double> host) {
  if (budgets.size() == 1) {
    if (const auto r = recommend(config, settings, flags, budgets[0], host))
      print_recommendation(*r, settings, flags, budgets[0], host);
    else
      std::cout << nothing_fits(budgets[0], host) << "\n";
    std::cout << headroom_note(budgets[0]) << "\n";
    return;
  }
  std::cout << "recommended, by GPU memory (each within " << train::kUsableGpuShare * 100 << "% of the GPU):\n";
  for (double budget : budgets) {
    const auto r = recommend(config, settings, flags, budget, host);
    std::cout << cell(size_text(budget), 6)
              << " GiB: " << (r ? recommendation_text(*r, settings, budget) : nothing_fits(budget, host)) << "\n";
  }
  std::cout << "add --gpu_memory GIB for one size's zerotune train flags\n";
}

int estimate(Flags& flags) {
  const models::ModelConfig config = config_from_flags(flags);
  train::MemorySettings settings = settings_from_flags(flags, config);
  const std::vector<double> budgets = gpu_budgets(gib_flag(flags, "--gpu_memory"));
  const std::optional<double> host = gib_flag(flags, "--host_memory");
  if (flags.count("--deepspeed")) {
    const train::DeepSpeedMemorySettings ds = train::memory_settings_from_deepspeed(
        flags.at("--deepspeed"), settings,
        {.dtype = flags.count("--dtype") > 0, .micro_batch = flags.count("--micro_batch") > 0}, config.hidden_size);
    ZT_REQUIRE_USAGE(!settings.quantized_base || ds.settings.stage < 3,
                     ds.source +
                         ": ZeRO stage 3 partitions the base weights a 4-bit base holds packed: use stage 0-2 "
                         "with --quantization_bit 4");
    print_deepspeed_fit(config, ds, budgets);
    settings = ds.settings;
  }
  print_table(config, settings, budgets, flags.count("--num_gpus") > 0);
  print_recommendations(config, settings, flags, budgets, host);
  return 0;
}

int run_estimate(const std::vector<std::string>& args) {
  const bool from_file = starts_with_training_file(args) && !asks_for_help(args);
  const std::vector<std::string> words = from_file ? estimate_words_of_training_file(args, flag_table()) : args;
  return run_with_flags(words, flag_table(), [](Flags& flags) {
    resolve_model_flag(flags, models::hub::kConfigOnly);
    return estimate(flags);
  });
}

const Registration registration{
    {"estimate", "memory per GPU and per node for each ZeRO stage and offload", run_estimate, flag_table}};

}  // namespace
}  // namespace zt::cli
