#include "train/training_job.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>

#include "cuda/gemm/cublaslt_gemm.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "distributed/communicators/tracing_communicator.h"
#include "distributed/launch/launched_job.h"
#include "models/config/config.h"
#include "models/hub/resolve_model.h"
#include "models/peft/lora_files.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "ops/attention/attention_backend.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/rank.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer.h"
#include "train/args/preflight.h"
#include "train/checkpoint/checkpoint.h"
#include "train/data/pretraining_blocks.h"
#include "train/data/sample_encoding.h"
#include "train/finetuning.h"
#include "train/preference_setup.h"
#include "train/quantized_base.h"
#include "train/report/sample_preview.h"
#include "train/report/startup_report.h"
#include "train/trainer.h"
#include "train/zero/zero3_frozen_copy.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

bool runs_on_cpu(const TrainingArguments& args) {
  return args.device == "cpu" || (args.device == "auto" && !cuda_available());
}

Device resolve_device(const TrainingArguments& args, int local_rank) {
  if (runs_on_cpu(args)) return Device::cpu();
  if (!cuda_available()) throw NoGpuError("--device " + args.device + ": " + cuda_unavailable_reason());
  int index = local_rank;
  if (args.device.rfind("cuda:", 0) == 0) index = std::stoi(args.device.substr(5));
  ZT_REQUIRE(index < cuda_device_count(), "--device cuda:" + std::to_string(index) + " but " +
                                              std::to_string(cuda_device_count()) + " GPU(s) are visible");
  set_cuda_device(index);
  return Device::cuda(index);
}

// `path` names the data in messages: its files.
EncodedDataset encode_samples(const Dataset& dataset, const std::string& path,
                              const models::ChatTemplate& chat_template, const models::Tokenizer& tokenizer,
                              const TrainingArguments& args) {
  const int workers =
      static_cast<int>(std::max(args.dataloader_num_workers, args.preprocessing_num_workers.value_or(0)));
  if (args.run_clm_style()) {
    // run_clm.py: max_length holds the block size (resolved_arguments).
    EncodedDataset blocks =
        run_clm_blocks(dataset, path, tokenizer, args.max_length, args.preprocessing_num_workers.value_or(1), workers);
    ZT_LOG(kInfo, path << ": " << dataset.size() << " texts chained into " << blocks.samples.size() << " blocks of "
                       << args.max_length << " tokens (run_clm.py's --block_size)");
    return blocks;
  }
  const EncodeOptions options{.max_length = args.max_length,
                              .train_on_prompt = args.train_on_prompt,
                              .overlong = args.overlong_samples,
                              .workers = workers};
  EncodedDataset encoded = args.stage == "pt"
                               ? pretraining_samples(dataset, path, tokenizer, args.max_length, args.packing,
                                                     args.preprocessing_num_workers.value_or(1),
                                                     static_cast<std::size_t>(args.preprocessing_batch_size))
                               : encode_dataset(dataset, chat_template, tokenizer, options);
  if (args.stage == "pt" && args.packing)
    ZT_LOG(kInfo, path << ": " << dataset.size() << " texts chained into " << encoded.samples.size() << " blocks of "
                       << args.max_length << " tokens (--stage pt packs them; --packing false keeps one per text)");
  if (encoded.truncated) ZT_LOG(kWarn, truncation_summary(path, encoded, args.max_length));
  if (encoded.skipped)
    ZT_LOG(kWarn, path << ": " << encoded.skipped << " sample(s) skipped: longer than --max_length " << args.max_length
                       << " (--overlong_samples skip)");
  if (encoded.dropped)
    ZT_LOG(kWarn, path << ": " << encoded.dropped << " sample(s) dropped: no token left to learn from");
  ZT_REQUIRE(!encoded.samples.empty(),
             path + ": no sample is left to learn from (check --max_length and --overlong_samples)");
  return encoded;
}

// What checkpoints and output_dir hold: the adapter in PEFT's layout with the tokenizer files
// (as HF Trainer saves a PEFT model) for LoRA, the prefix encoder as ChatGLM's recipe saves it
// for P-Tuning (models/peft/prefix_encoder_files.h), else the whole model.
void set_save_and_load(TrainerModel& trained, const std::shared_ptr<models::CausalLM>& model,
                       const TrainingArguments& args) {
  if (args.finetuning_type == FinetuningType::kLora) {
    const models::LoraConfig lora = lora_config(args, model->config());
    trained.save = [model, lora](const std::string& dir) {
      models::save_lora_adapter(*model, lora, dir);
      models::copy_companion_files(model->source_dir(), dir);
    };
    trained.load = [model](const std::string& dir) { models::load_lora_weights(*model, dir); };
    return;
  }
  if (args.finetuning_type == FinetuningType::kPtuning) {
    std::vector<models::NamedParameter> prefix;
    for (const TrainableParameter& p : trained.trainable) prefix.push_back({p.name, p.variable});
    trained.save = [model, config = prefix_config(args), prefix](const std::string& dir) {
      models::save_prefix_checkpoint(*model, config, prefix, dir);
    };
    trained.load = [prefix](const std::string& dir) { models::load_prefix_weights(prefix, dir); };
    return;
  }
  trained.save = [model](const std::string& dir) { models::save_model(*model, dir); };
  trained.load = [model](const std::string& dir) { models::load_weights(*model, model_weights_path(dir)); };
}

// The model's weights (a 4-bit base's linears at their packed size) and the adapters trained
// beside it, in the working dtype.
std::int64_t working_weight_bytes(const models::CausalLM& model, const TrainerModel& trained) {
  std::int64_t adapters = 0;
  for (const TrainableParameter& p : trained.trainable)
    if (!model.has_parameter(p.name)) adapters += p.variable.data().numel();
  return models::quant::resident_weight_bytes(model) + adapters * static_cast<std::int64_t>(dtype_size(model.dtype()));
}

// The precision the start line states: what runs, not only what was asked.
std::string running_precision(const TrainingPlan& plan, Device device) {
  if (device.is_cuda() || plan.precision == Precision::kFloat32) return precision_name(plan.precision);
  return std::string("fp32 (--") + precision_name(plan.precision) + " runs as fp32 on the CPU)";
}

// What every rank of this process trains with, prepared once before its ranks start: the
// model as a local folder (the hub cache's snapshot of a hub id, while
// args.model_name_or_path keeps the name as given, for training_args.json and
// adapter_config.json to record as HF does), the data check_before_loading read encoded
// through the tokenizer and chat template, and the plan resolved with the DeepSpeed config it
// read, which decides the engine.
struct PreparedRun {
  std::string model_dir;
  std::shared_ptr<const models::Tokenizer> tokenizer;
  std::string template_description;
  models::ModelConfig config;
  TrainerData data;
  TrainingPlan plan;
  DType working_dtype = DType::kF32;  // on the CPU, float32 whatever the plan's precision
};

// The process's ranks as known before the plan: `world` data-parallel ranks, of which
// `launched` say whether a launcher started them (one process each) and `communicator`
// whether they reduce over one (a launcher's single CPU process has nobody to talk to).
struct RankLayout {
  int world = 1;
  bool launched = false;
  bool communicator = false;
  bool main_process = true;  // prints what the job prints once
};

TrainerData encoded_data(const TrainingArguments& args, const SelectedData& selected,
                         const models::ChatTemplate& chat_template, const models::Tokenizer& tokenizer) {
  TrainerData data;
  // --stage dpo trains on pairs, laid out chosen then rejected (train/preference/).
  if (args.stage == "dpo") {
    data.train = preference_samples(selected.train_pairs, selected.train_source, chat_template, tokenizer, args);
    if (selected.eval_pairs)
      data.eval = preference_samples(*selected.eval_pairs, selected.eval_source, chat_template, tokenizer, args);
  } else {
    data.train = encode_samples(selected.train, selected.train_source, chat_template, tokenizer, args).samples;
    if (selected.eval)
      data.eval = encode_samples(*selected.eval, selected.eval_source, chat_template, tokenizer, args).samples;
    // run_clm.py's max_train_samples and max_eval_samples: the first N blocks.
    auto keep_first = [](std::vector<TokenizedSample>& samples, std::optional<std::int64_t> count) {
      if (count && samples.size() > static_cast<std::size_t>(*count)) samples.resize(static_cast<std::size_t>(*count));
    };
    keep_first(data.train, args.max_train_samples);
    keep_first(data.eval, args.max_eval_samples);
  }
  // A pair's prompt runs once (train/data/batching.h), unless padding or a P-Tuning prefix,
  // which every sequence sees before its own tokens, asks for each sequence whole.
  data.layout = {.pad_to_longest = args.padding == Padding::kLongest,
                 .pad_id = padding_token(tokenizer),
                 .share_pair_prompts = args.stage == "dpo" && args.padding != Padding::kLongest &&
                                       args.finetuning_type != FinetuningType::kPtuning};
  return data;
}

PreparedRun prepare_run(const TrainingArguments& args, const CheckedInputs& checked, std::string model_dir,
                        const RankLayout& ranks) {
  PreparedRun run;
  run.model_dir = std::move(model_dir);
  run.tokenizer = models::load_tokenizer(run.model_dir);
  // A named template is LLaMA-Factory's of that name; without one, the model's own.
  auto chat_template =
      models::make_run_chat_template(args.template_name, run.model_dir, {.enable_thinking = args.enable_thinking});
  run.template_description = std::string(chat_template->name()) + " (" + std::string(chat_template->origin()) + ")";
  if (const std::string warning = models::chat_template_warning(args.template_name);
      !warning.empty() && ranks.main_process)
    ZT_LOG(kWarn, warning);
  run.data = encoded_data(args, checked.data, *chat_template, *run.tokenizer);
  run.config = models::load_config(run.model_dir);
  const bool pairs = args.stage == "dpo";
  auto count = [&](std::int64_t micro) {
    const auto units = static_cast<std::int64_t>(run.data.train.size() / 2);
    const std::int64_t batches =
        pairs ? (units + micro - 1) / micro
              : static_cast<std::int64_t>(
                    plan_epoch(run.data.train, micro, args.max_length, args.packing, args.data_order_seed(), 0).size());
    return (batches + ranks.world - 1) / ranks.world;
  };
  run.plan = plan_training(args, checked.deepspeed, count, ranks.world, run.config.hidden_size);
  run.working_dtype = run.plan.working_dtype();
  if (runs_on_cpu(args) && run.plan.precision != Precision::kFloat32) {
    run.working_dtype = DType::kF32;
    ZT_LOG(kWarn, "--" << precision_name(run.plan.precision)
                       << " on the CPU: training in float32 instead (weights, activations, gradients and every op's "
                          "arithmetic); 16-bit training needs a GPU");
    // float32 gradients do not underflow: fp16's loss scaling (and its loss_scale in the log and
    // checkpoints) belongs to a run that computes in fp16, which this one does not.
    run.plan.loss_scaler.reset();
  }
  return run;
}

// One rank's whole run; returns the signal that stopped it early, or 0.
int train_one_rank(const TrainingArguments& args, const PreparedRun& run, distributed::Communicator* comm,
                   int local_rank) {
  const Device device = resolve_device(args, local_rank);
  if (device.is_cuda())
    cuda::set_float32_matmul_tf32(args.tf32.value_or(false));
  else if (args.tf32.value_or(false))
    ZT_LOG(kInfo, "--tf32 has no effect on the CPU: float32 products stay float32");
  models::ModelOptions options;
  options.device = device;
  options.gradient_checkpointing = args.gradient_checkpointing;
  options.deterministic_attention = args.full_determinism;
  options.attn_impl = ops::attention_impl_from_name(args.attn_impl);
  ZT_REQUIRE(options.attn_impl == ops::AttentionImpl::kZerotune || device.is_cuda(),
             "--attn_impl cudnn needs a GPU; on the CPU use --attn_impl zerotune");
  const bool pairs = args.stage == "dpo";
  const bool main_rank = comm == nullptr || comm->rank() == 0;
  const TrainingPlan& plan = run.plan;
  const EngineChoice engine = choose_engine(plan, comm != nullptr);
  TrainerData data = run.data;
  options.dtype = run.working_dtype;
  plan_4bit_loading(options, run.config, args);
  auto model = std::make_shared<models::CausalLM>(models::load_model(run.model_dir, options));
  ZT_LOG(kInfo, "run " << args.run_name << ": model " << args.model_name_or_path << " (" << model->num_parameters()
                       << " parameters) on " << (device.is_cpu() ? "cpu" : "cuda:" + std::to_string(device.index))
                       << ", " << running_precision(plan, device) << ", " << finetuning_description(args) << ", "
                       << (pairs ? data.train.size() / 2 : data.train.size()) << (pairs ? " pairs, " : " samples, ")
                       << (args.stage == "pt"     ? std::string("no template (--stage pt)")
                           : args.run_clm_style() ? std::string("no template (run_clm.py's blocks)")
                                                  : "template " + run.template_description)
                       << ", " << plan.max_steps << " steps");
  if (!data.train.empty() && main_rank) ZT_LOG(kInfo, sample_preview(data.train.front(), *run.tokenizer));
  TrainerModel trained;
  trained.model = model.get();
  trained.trainable = select_trainable(*model, args);
  if (const std::string held = quantize_base(*model, args, plan.zero.stage); !held.empty()) ZT_LOG(kInfo, held);
  ZT_LOG(kInfo, trainable_summary(*model, trained.trainable));
  ZT_LOG(kInfo, "attention: " << ops::attention_kernel_description(options.attn_impl, device, options.dtype,
                                                                   model->config().head_dim));
  set_save_and_load(trained, model, args);
  if (pairs) {
    disable_lora_dropout(*model, args);
    // A resumed run's reference is rebuilt from the base model, as the run started from it.
    // Under ZeRO-3 the frozen copy is partitioned like the policy: no rank holds it whole.
    trained.preference = make_preference_objective(args, [&] {
      models::CausalLM copy = models::load_model(run.model_dir, options);
      if (engine.kind == EngineKind::kZero3) return partition_frozen_copy(std::move(copy), *comm, plan.zero);
      return std::shared_ptr<const models::CausalLM>(std::make_shared<models::CausalLM>(std::move(copy)));
    });
  }
  Trainer trainer(trained, std::move(data), plan, comm);
  report_model_states(comm, held_model_states(trainer.optimizer(), working_weight_bytes(*model, trained)), device);
  trainer.train();
  if (trainer.stopped_by() == 0) ZT_LOG(kInfo, "saved the model to " << args.output_dir);
  return trainer.stopped_by();
}

// A rank of several; under --zero_trace its collectives pass through a TracingCommunicator
// writing output_dir/zero_trace_rank{R}.jsonl, timed from `run_start` (one for all in-process ranks).
int train_rank_of_many(const TrainingArguments& args, const PreparedRun& run, distributed::Communicator& comm,
                       int local_rank, std::chrono::steady_clock::time_point run_start) {
  if (!args.zero_trace) return train_one_rank(args, run, &comm, local_rank);
  const fs::path trace_path = fs::path(args.output_dir) / distributed::trace_file_name(comm.rank());
  distributed::TracingCommunicator traced(comm, trace_path.string(), run_start);
  return train_one_rank(args, run, &traced, local_rank);
}

}  // namespace

TrainingArguments resolved_arguments(const TrainingArguments& given, const std::string& model_dir) {
  TrainingArguments args = given;
  if (!args.run_clm_style()) return args;
  std::optional<double> model_max_length;
  const fs::path tokenizer_config = fs::path(model_dir) / "tokenizer_config.json";
  if (fs::exists(tokenizer_config)) {
    const nlohmann::ordered_json config = models::read_json_file(tokenizer_config.string());
    if (config.contains("model_max_length") && config["model_max_length"].is_number())
      model_max_length = config["model_max_length"].get<double>();
  }
  std::string note;
  args.max_length = run_clm_block_size(args.block_size, model_max_length,
                                       models::context_length(models::load_config(model_dir)), note);
  if (!note.empty() && current_rank().rank == 0) ZT_LOG(kInfo, note);
  return args;
}

int run_training_job(const TrainingArguments& given) {
  // The checks first, in seconds; then the model, downloaded once per process before its ranks
  // start (the ranks of a launcher's processes share the hub cache through its file locks, so
  // one downloads while the others wait).
  const CheckedInputs checked = check_before_loading(given);
  std::string model_dir = models::hub::resolve_model_path(given.model_name_or_path, given.model_revision);
  const TrainingArguments args = resolved_arguments(given, model_dir);
  const ProcessRank rank = rank_from_environment();
  ZT_REQUIRE(!rank.distributed || args.inprocess_ranks <= 1,
             "--inprocess_ranks cannot be combined with a launcher's ranks (" + rank.launcher + ")");
  const bool on_cpu = runs_on_cpu(args);
  // A launcher's single GPU rank still runs NCCL (as torchrun + DeepSpeed do): the whole
  // collective path is exercised; one CPU process has nobody to talk to.
  const RankLayout ranks{
      .world = rank.distributed ? rank.world_size : static_cast<int>(std::max<std::int64_t>(args.inprocess_ranks, 1)),
      .launched = rank.distributed,
      .communicator = rank.distributed ? !(rank.world_size == 1 && on_cpu) : args.inprocess_ranks > 1,
      .main_process = !rank.distributed || rank.rank == 0};
  const auto timeout = std::chrono::seconds(args.ddp_timeout);
  const auto run_start = std::chrono::steady_clock::now();
  if (ranks.launched && ranks.communicator) {
    // Processes on GPUs reduce over NCCL; on the CPU, over Gloo's TCP transport. They connect
    // before preparing, so that a rank that fails to prepare ends the others at once.
    if (!on_cpu && !cuda_available())
      throw NoGpuError("rank " + std::to_string(rank.rank) + ": --device " + args.device + ": " +
                       cuda_unavailable_reason() + "; --device cpu trains the processes on the CPU over Gloo");
    if (!on_cpu) set_cuda_device(rank.local_rank);
    std::unique_ptr<distributed::Communicator> comm = distributed::connect_launched_rank(rank, on_cpu, timeout);
    if (on_cpu) {
      if (rank.rank == 0)
        ZT_LOG(kInfo, "world size " << rank.world_size << " (" << rank.launcher << "), Gloo on the CPU");
    } else {
      report_world(*comm, rank.local_rank, rank.launcher);
    }
    const PreparedRun run = prepare_run(args, checked, std::move(model_dir), ranks);
    return train_rank_of_many(args, run, *comm, rank.local_rank, run_start);
  }
  const PreparedRun run = prepare_run(args, checked, std::move(model_dir), ranks);
  // In-process ranks where the engine needs them: as many as asked, or the one that runs
  // stage 3 with parameter offload in one process (its shard is the whole model, held in host
  // memory).
  if (choose_engine(run.plan, ranks.communicator).needs_ranks()) {
    std::atomic<int> stopped_by{0};  // every rank stops after the same step, for the same signal
    auto one_rank = [&](distributed::Communicator& comm) {
      if (const int signal = train_rank_of_many(args, run, comm, 0, run_start)) stopped_by = signal;
    };
    distributed::run_inprocess_ranks(ranks.world, timeout, one_rank);
    return stopped_by;
  }
  ZT_REQUIRE(!args.zero_trace,
             "--zero_trace traces the collectives between ranks, and this run has one rank; add "
             "--inprocess_ranks 2 to watch them on one machine");
  return train_one_rank(args, run, nullptr, rank.local_rank);
}

}  // namespace zt::train
