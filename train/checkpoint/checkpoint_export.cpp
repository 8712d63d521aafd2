#include "train/checkpoint/checkpoint_export.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "autograd/grad_mode.h"
#include "models/hub/resolve_model.h"
#include "models/peft/lora.h"
#include "models/peft/lora_files.h"
#include "models/weights/hf_names.h"
#include "models/weights/weights.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/usage_error.h"
#include "tensor/safetensors/safetensors_index.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/optimizer_state_files.h"
#include "train/checkpoint/streamed_safetensors.h"
#include "train/finetuning_type.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMasterSuffix = ".master";

// What export needs to know of a checkpoint folder.
struct Checkpoint {
  std::string dir;
  FinetuningType finetuning_type = FinetuningType::kFull;  // as training_args.json names it
  std::string base;                                        // the model folder it was trained from
  std::optional<OptimizerStateFiles> masters;              // absent when saved with --save_only_model
};

std::string json_string(const nlohmann::ordered_json& json, const char* key, const std::string& file) {
  ZT_REQUIRE(json.contains(key) && json[key].is_string(),
             file + " has no string '" + key + "': not a zerotune checkpoint");
  return json[key].get<std::string>();
}

// The revision of a base model named by hub id: the request's, else the one it was trained from.
std::string base_revision(const CheckpointExport& request, const nlohmann::ordered_json& args) {
  if (!request.base_revision.empty()) return request.base_revision;
  if (request.base_model.empty() && args.contains("model_revision") && args["model_revision"].is_string())
    return args["model_revision"].get<std::string>();
  return "main";
}

Checkpoint open_checkpoint(const CheckpointExport& request) {
  const fs::path dir = request.checkpoint;
  const fs::path args_path = dir / "training_args.json";
  ZT_REQUIRE(fs::is_regular_file(args_path), "--checkpoint " + request.checkpoint +
                                                 ": not a checkpoint folder (no training_args.json); pass an "
                                                 "output_dir/checkpoint-N folder written by zerotune train");
  const nlohmann::ordered_json args = models::read_json_file(args_path.string());
  const std::string type = json_string(args, "finetuning_type", args_path.string());
  const std::string base =
      request.base_model.empty() ? json_string(args, "model_name_or_path", args_path.string()) : request.base_model;
  Checkpoint checkpoint{.dir = request.checkpoint,
                        .base = models::hub::resolve_model_path(base, base_revision(request, args)),
                        .masters = std::nullopt};
  ZT_REQUIRE(
      fs::is_directory(checkpoint.base),
      "the base model folder " + base + " does not exist" +
          (request.base_model.empty() ? " (training_args.json's model_name_or_path); pass --model_name_or_path" : ""));
  checkpoint.masters = OptimizerStateFiles::open(request.checkpoint);
  const std::optional<FinetuningType> method = enum_from_name<FinetuningType>(type);
  ZT_REQUIRE(method,
             "--checkpoint " + checkpoint.dir + ": unknown finetuning_type '" + type + "' in training_args.json");
  checkpoint.finetuning_type = *method;
  return checkpoint;
}

void require_not_folder(const std::string& out, const std::string& folder, const std::string& what) {
  ZT_REQUIRE_USAGE(!fs::exists(out) || !fs::equivalent(out, folder),
                   "--output_dir " + out + " is the " + what + " itself; export into another folder");
}

// Where the files go: write_dir when the caller stages them there, else output_dir.
const std::string& destination(const CheckpointExport& request) {
  return request.write_dir.empty() ? request.output_dir : request.write_dir;
}

struct Expected {
  std::string name;
  Shape shape;
};

// Every way the masters disagree with the parameters, in models/weights/tensor_mismatches.h's format.
// `all_trained`: each parameter must have a master (full, LoRA); otherwise (freeze) those
// without one were not trained.
std::vector<std::string> master_mismatches(const std::vector<Expected>& parameters, const OptimizerStateFiles& masters,
                                           bool all_trained) {
  std::vector<std::string> problems;
  std::set<std::string> known;
  for (const Expected& p : parameters) {
    known.insert(p.name);
    if (!masters.contains(p.name)) {
      if (all_trained) problems.push_back("missing: " + p.name + kMasterSuffix + " " + shape_str(p.shape));
    } else if (masters.shape(p.name) != p.shape) {
      problems.push_back("wrong shape: " + p.name + kMasterSuffix + " is " + shape_str(masters.shape(p.name)) +
                         ", expected " + shape_str(p.shape));
    } else if (const std::optional<std::string> damage = masters.damage(p.name)) {
      problems.push_back("unreadable: " + *damage);
    }
  }
  for (const std::string& name : masters.names())
    if (!known.count(name))
      problems.push_back("unexpected: " + name + kMasterSuffix + " " + shape_str(masters.shape(name)));
  return problems;
}

void require_matching_masters(const Checkpoint& checkpoint, const std::vector<Expected>& parameters, bool all_trained) {
  const std::vector<std::string> problems = master_mismatches(parameters, *checkpoint.masters, all_trained);
  if (problems.empty()) return;
  std::string message = "the master weights of " + checkpoint.masters->source() + " do not match the " +
                        name_of(checkpoint.finetuning_type) + " parameters of " + checkpoint.base + ": " +
                        std::to_string(problems.size()) + " problem(s)";
  for (const std::string& line : problems) message += "\n  " + line;
  fail(message + "\ncheck that the base model (--model_name_or_path) is the one the checkpoint was trained from");
}

Tensor converted(const Tensor& tensor, std::optional<DType> dtype) { return dtype ? tensor.to(*dtype) : tensor; }

void copy_file_atomically(const fs::path& from, const fs::path& to) {
  std::ifstream in(from, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  ZT_REQUIRE(in, "cannot read " + from.string() + " to copy it into the export");
  write_file_atomically(to.string(), bytes.str());
}

// Every parameter of `specs` from its master (those the masters hold, unless `working` is
// given), the checkpoint's working copy (`working`) or the base, then the base's carried
// buffers; every shape is checked here, before a byte is written, and each tensor is read when
// its turn to be written comes.
TensorPlan model_tensor_plan(const Checkpoint& checkpoint, const std::vector<models::ParamSpec>& specs,
                             const SafetensorsCheckpoint* working, const SafetensorsCheckpoint& base,
                             std::optional<DType> dtype) {
  const SafetensorsCheckpoint& source = working ? *working : base;
  TensorPlan plan;
  for (const models::ParamSpec& spec : specs) {
    const bool trained = !working && checkpoint.masters->contains(spec.name);
    const Shape& shape = trained ? checkpoint.masters->shape(spec.name) : source.info(spec.name).shape;
    ZT_REQUIRE(shape == spec.shape,
               "'" + spec.name + "' of " + (trained ? checkpoint.masters->source() : checkpoint.dir) + " is " +
                   shape_str(shape) + " but config.json of " + checkpoint.base + " makes it " + shape_str(spec.shape));
    const DType stored = trained ? DType::kF32 : source.info(spec.name).dtype;
    plan.add({spec.name, dtype.value_or(stored), spec.shape}, [&checkpoint, &source, trained, dtype, name = spec.name] {
      return converted(trained ? checkpoint.masters->master(name) : source.get(name), dtype);
    });
  }
  for (const std::string& name : base.names())
    if (models::is_carried_buffer(name))
      plan.add({name, base.info(name).dtype, base.info(name).shape}, [&base, name] { return base.get(name); });
  return plan;
}

// full / freeze: each parameter of the base's config from its master, the working copy or
// the base, then the base's carried buffers; the files around the weights from the base.
void export_model_folder(const Checkpoint& checkpoint, const CheckpointExport& request, bool from_masters,
                         std::optional<DType> dtype) {
  const models::ModelConfig config = models::load_config(checkpoint.base);
  const std::vector<models::ParamSpec> specs = models::parameter_layout(config).all();
  if (from_masters) {
    std::vector<Expected> parameters;
    for (const models::ParamSpec& spec : specs) parameters.push_back({spec.name, spec.shape});
    require_matching_masters(checkpoint, parameters, checkpoint.finetuning_type == FinetuningType::kFull);
  }
  const SafetensorsCheckpoint base = SafetensorsCheckpoint::open(model_weights_path(checkpoint.base));
  const SafetensorsCheckpoint source =
      from_masters ? base : SafetensorsCheckpoint::open(model_weights_path(checkpoint.dir));
  const TensorPlan plan = model_tensor_plan(checkpoint, specs, from_masters ? nullptr : &source, base, dtype);
  // transformers refuses safetensors files whose metadata does not say format "pt".
  save_sharded_safetensors_streamed(destination(request), plan, request.max_shard_bytes, {{"format", "pt"}});
  write_file_atomically((fs::path(destination(request)) / "config.json").string(), config.raw.dump(2) + "\n");
  const fs::path generation = fs::path(checkpoint.base) / "generation_config.json";
  if (fs::is_regular_file(generation))
    copy_file_atomically(generation, fs::path(destination(request)) / generation.filename());
  models::copy_companion_files(checkpoint.base, destination(request));
}

// LoRA unmerged: the checkpoint's adapter folder with A and B from their masters.
void export_adapter_folder(const Checkpoint& checkpoint, const CheckpointExport& request, bool from_masters,
                           std::optional<DType> dtype) {
  const fs::path adapter_dir = checkpoint.dir;
  const SafetensorsFile adapter = SafetensorsFile::open((adapter_dir / models::kAdapterWeightsFile).string());
  if (from_masters) {
    std::vector<Expected> parameters;
    for (const std::string& name : adapter.names()) parameters.push_back({name, adapter.info(name).shape});
    require_matching_masters(checkpoint, parameters, true);
  }
  TensorPlan plan;
  for (const std::string& name : adapter.names())
    plan.add({name, dtype.value_or(adapter.info(name).dtype), adapter.info(name).shape}, [&, name] {
      return converted(from_masters ? checkpoint.masters->master(name) : adapter.get(name), dtype);
    });
  fs::create_directories(destination(request));
  save_safetensors_streamed((fs::path(destination(request)) / models::kAdapterWeightsFile).string(), plan,
                            {{"format", "pt"}});
  copy_file_atomically(adapter_dir / models::kAdapterConfigFile,
                       fs::path(destination(request)) / models::kAdapterConfigFile);
  models::copy_companion_files(checkpoint.base, destination(request));
}

// LoRA merged: the base in float32 with the checkpoint's adapter, its A and B replaced by their
// masters, merged and saved as a model folder.
void export_merged_lora(const Checkpoint& checkpoint, const CheckpointExport& request, bool from_masters,
                        std::optional<DType> dtype) {
  models::CausalLM model = models::load_model(checkpoint.base, {.device = Device::cpu(), .dtype = DType::kF32});
  models::load_lora_adapter(model, checkpoint.dir);
  if (from_masters) {
    const std::vector<models::NamedParameter> lora = models::lora_parameters(model);
    std::vector<Expected> parameters;
    for (const models::NamedParameter& p : lora) parameters.push_back({p.name, p.variable.data().shape()});
    require_matching_masters(checkpoint, parameters, true);
    autograd::NoGradGuard no_recording;
    for (const models::NamedParameter& p : lora) {
      Tensor target = p.variable.data();  // a handle: the copy writes the parameter
      target.copy_from(checkpoint.masters->master(p.name));
    }
  }
  models::merge_lora(model);
  models::save_model(model, destination(request), {.max_shard_bytes = request.max_shard_bytes, .dtype = dtype});
}

}  // namespace

std::string export_checkpoint(const CheckpointExport& request) {
  const Checkpoint checkpoint = open_checkpoint(request);
  require_not_folder(request.output_dir, checkpoint.dir, "checkpoint folder");
  require_not_folder(request.output_dir, checkpoint.base, "base model folder");
  const FinetuningType type = checkpoint.finetuning_type;
  ZT_REQUIRE(type != FinetuningType::kPtuning,
             "--checkpoint " + checkpoint.dir +
                 " is a P-Tuning checkpoint: its prefix encoder (config.json and model.safetensors "
                 "there) already is the exported form; use the folder as it is, with "
                 "--ptuning_checkpoint beside the base model");
  ZT_REQUIRE(
      !request.merge_lora || type == FinetuningType::kLora,
      "--merge_lora: " + checkpoint.dir + " is a " + name_of(type) + " checkpoint, not a LoRA one; drop --merge_lora");
  bool from_masters = !request.working_weights;
  if (from_masters && !checkpoint.masters) {
    ZT_LOG(kWarn, checkpoint.dir << " holds no optimizer state (saved with --save_only_model): exporting its model "
                                    "files (the working weights) instead of float32 masters");
    from_masters = false;
  }
  const std::optional<DType> dtype = request.dtype  ? request.dtype
                                     : from_masters ? std::optional(DType::kF32)
                                                    : std::nullopt;
  if (type != FinetuningType::kLora)
    export_model_folder(checkpoint, request, from_masters, dtype);
  else if (request.merge_lora)
    export_merged_lora(checkpoint, request, from_masters, dtype);
  else
    export_adapter_folder(checkpoint, request, from_masters, dtype);
  const std::string what = type == FinetuningType::kLora && !request.merge_lora ? "LoRA adapter" : "model";
  return "exported the " + what + " of " + checkpoint.dir + " (" +
         (from_masters ? "float32 master weights" : "working weights") + ", base " + checkpoint.base + ") to " +
         request.output_dir + (dtype ? std::string(" as ") + dtype_name(*dtype) : std::string());
}

}  // namespace zt::train
