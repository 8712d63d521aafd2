#include "train/checkpoint/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "runtime/json_text.h"

namespace zt::train {
namespace fs = std::filesystem;
namespace {

constexpr const char* kTrainerState = "trainer_state.json";
constexpr const char* kRunState = "zerotune_state.json";

std::optional<std::int64_t> checkpoint_step(const fs::path& path) {
  const std::string name = path.filename().string();
  const std::string prefix = "checkpoint-";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return std::nullopt;
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) return std::nullopt;
  return std::stoll(digits);
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  ZT_REQUIRE(in, "cannot read " + path.string() + ": the checkpoint is incomplete");
  std::ostringstream text;
  text << in.rdbuf();
  // Written by Python (HF's Trainer), a value that is not finite is NaN or Infinity.
  nlohmann::json json = nlohmann::json::parse(python_constants_as_null(text.str()), nullptr, false);
  ZT_REQUIRE(!json.is_discarded(), path.string() + " is not valid JSON: the checkpoint is damaged");
  return json;
}

void write_json(const fs::path& path, const nlohmann::json& json) {
  write_file_atomically(path.string(), json.dump(2) + "\n");
}

void remove_quietly(const fs::path& path) {
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

// A checkpoint folder (trainer_state.json found) that zerotune can resume: one without its run
// state is HF Trainer's, whose optimizer, scheduler and RNG state are pickled torch files, or
// one that lost a file.
void require_run_state(const std::string& checkpoint) {
  const fs::path dir(checkpoint);
  if (fs::exists(dir / kRunState)) return;
  for (const char* hf_file : {"optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"})
    ZT_REQUIRE(!fs::exists(dir / hf_file),
               "--resume_from_checkpoint: " + checkpoint + " is a checkpoint HF's Trainer wrote (" + hf_file + ", no " +
                   kRunState +
                   "); zerotune resumes its own checkpoints only, as HF's optimizer.pt, "
                   "scheduler.pt and rng_state.pth are pickled torch state it does not read. Train on from its "
                   "weights in a new run instead: --model_name_or_path " +
                   checkpoint +
                   " for a full checkpoint; a LoRA one (adapter_config.json) merged into its base first with "
                   "zerotune export --adapter_name_or_path " +
                   checkpoint + " --merge_lora");
  fail("--resume_from_checkpoint: " + checkpoint + " has " + kTrainerState + " but no " + kRunState +
       ": the checkpoint is incomplete, resume from another one");
}

}  // namespace

PartialCheckpoint partial_checkpoint(const std::string& output_dir, std::int64_t step) {
  const std::string name = "checkpoint-" + std::to_string(step);
  return {(fs::path(output_dir) / ("." + name + ".partial")).string(), (fs::path(output_dir) / name).string()};
}

void begin_checkpoint(const PartialCheckpoint& partial) {
  std::error_code error;
  fs::create_directories(fs::path(partial.folder).parent_path(), error);
  ZT_REQUIRE(!error, "cannot create the output directory " + fs::path(partial.folder).parent_path().string() + ": " +
                         error.message());
  remove_quietly(partial.folder);  // left by a crash during an earlier save
  fs::create_directories(partial.folder, error);
  ZT_REQUIRE(!error, "cannot create " + partial.folder + ": " + error.message());
}

std::string complete_checkpoint(const PartialCheckpoint& partial, const CheckpointContents& contents) {
  const fs::path folder = partial.folder;
  try {
    if (contents.write_model) contents.write_model(folder.string());
    if (contents.write_optimizer) contents.write_optimizer(folder.string());
    write_json(folder / kRunState, contents.run_state);
    write_json(folder / "training_args.json", contents.training_args);
    write_json(folder / kTrainerState, contents.trainer_state);  // last: marks the folder complete
  } catch (...) {
    abandon_checkpoint(partial);
    throw;
  }
  const fs::path final_dir = partial.final_folder;
  const fs::path previous = fs::path(partial.final_folder).parent_path() /
                            std::string(".").append(final_dir.filename().string()).append(".old");
  std::error_code error;
  if (fs::exists(final_dir)) fs::rename(final_dir, previous, error);
  ZT_REQUIRE(!error, "cannot move the old " + final_dir.string() + " aside: " + error.message());
  fs::rename(folder, final_dir, error);
  ZT_REQUIRE(!error, "cannot rename " + folder.string() + " to " + final_dir.string() + ": " + error.message());
  remove_quietly(previous);
  return final_dir.string();
}

void abandon_checkpoint(const PartialCheckpoint& partial) { remove_quietly(partial.folder); }

std::string save_checkpoint(const std::string& output_dir, std::int64_t step, const CheckpointContents& contents) {
  const PartialCheckpoint partial = partial_checkpoint(output_dir, step);
  begin_checkpoint(partial);
  return complete_checkpoint(partial, contents);
}

std::vector<std::string> list_checkpoints(const std::string& output_dir) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code error;
  if (!fs::is_directory(output_dir, error)) return {};
  for (const fs::directory_entry& entry : fs::directory_iterator(output_dir, error)) {
    auto step = checkpoint_step(entry.path());
    if (step && entry.is_directory() && fs::exists(entry.path() / kTrainerState))
      found.emplace_back(*step, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& [step, path] : found) paths.push_back(path);
  return paths;
}

void rotate_checkpoints(const std::string& output_dir, std::int64_t limit, const std::string& keep) {
  std::vector<std::string> checkpoints = list_checkpoints(output_dir);
  auto excess = static_cast<std::int64_t>(checkpoints.size()) - limit;
  for (const std::string& path : checkpoints) {
    if (excess <= 0) break;
    if (!keep.empty() && fs::equivalent(path, keep)) continue;
    remove_quietly(path);
    --excess;
  }
}

std::string resolve_resume_checkpoint(const std::string& argument, const std::string& output_dir) {
  std::string lowered = argument;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lowered == "true") {
    std::vector<std::string> checkpoints = list_checkpoints(output_dir);
    ZT_REQUIRE(!checkpoints.empty(), "--resume_from_checkpoint true: no complete checkpoint-N folder in " + output_dir);
    require_run_state(checkpoints.back());
    return checkpoints.back();
  }
  ZT_REQUIRE(fs::exists(fs::path(argument) / kTrainerState),
             "--resume_from_checkpoint " + argument + ": not a checkpoint folder (no " + kTrainerState + ")");
  require_run_state(argument);
  return argument;
}

LoadedCheckpoint load_checkpoint(const std::string& directory) {
  LoadedCheckpoint loaded;
  loaded.directory = directory;
  loaded.trainer_state = read_json(fs::path(directory) / kTrainerState);
  loaded.run_state = read_json(fs::path(directory) / kRunState);
  if (const fs::path args = fs::path(directory) / "training_args.json"; fs::exists(args))
    loaded.training_args = read_json(args);
  return loaded;
}

std::string model_weights_path(const std::string& directory) {
  const fs::path index = fs::path(directory) / "model.safetensors.index.json";
  if (fs::exists(index)) return index.string();
  const fs::path single = fs::path(directory) / "model.safetensors";
  ZT_REQUIRE(fs::exists(single), directory + " holds neither model.safetensors nor model.safetensors.index.json");
  return single.string();
}

}  // namespace zt::train
