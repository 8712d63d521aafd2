#include "cli/export_output.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "runtime/error.h"
#include "runtime/usage_error.h"

namespace zt::cli {
namespace {

namespace fs = std::filesystem;

bool occupied(const fs::path& folder) {
  std::error_code error;
  return fs::is_directory(folder, error) && !fs::is_empty(folder, error);
}

// The other kind of export already in `folder`, which writing this kind beside would confuse.
void refuse_mixing(const fs::path& folder, ExportKind kind, const std::string& shown) {
  std::error_code error;
  if (kind == ExportKind::kModel && fs::exists(folder / "adapter_config.json", error))
    fail_usage("--output_dir " + shown +
               " holds a PEFT adapter (adapter_config.json): a model exported into it would still load as that "
               "adapter; export into another folder (the merged model belongs beside the adapter, not in it)");
  if (kind == ExportKind::kAdapter && fs::exists(folder / "config.json", error) &&
      !fs::exists(folder / "adapter_config.json", error))
    fail_usage("--output_dir " + shown +
               " holds a model (config.json): an adapter exported into it would mix with the model's files; export "
               "into another folder");
}

// `.NAME.partial` beside `target`: the same filesystem, so the final rename is atomic.
fs::path staging_folder(const fs::path& target) {
  fs::path clean = target.lexically_normal();
  if (clean.filename().empty()) clean = clean.parent_path();
  std::string name = ".";  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "." + name
  name += clean.filename().string();
  name += ".partial";
  return clean.parent_path() / name;
}

}  // namespace

ExportFolder::ExportFolder(std::string output_dir, ExportKind kind, bool overwrite)
    : output_dir_(std::move(output_dir)), write_dir_(output_dir_) {
  const fs::path target(output_dir_);
  refuse_mixing(target, kind, output_dir_);
  if (occupied(target)) {
    ZT_REQUIRE_USAGE(overwrite, "--output_dir " + output_dir_ +
                                    " already exists and is not empty; use --overwrite_output_dir to export into it "
                                    "anyway (files of the same names are replaced), or choose another folder");
    return;
  }
  const fs::path staging = staging_folder(target);
  std::error_code error;
  fs::remove_all(staging, error);  // what an earlier export that was killed left
  fs::create_directories(staging, error);
  if (error) fail("cannot create the folder " + staging.string() + " to export into: " + error.message());
  write_dir_ = staging.string();
  staged_ = true;
}

ExportFolder::~ExportFolder() {
  if (!staged_ || committed_) return;
  std::error_code ignored;
  fs::remove_all(write_dir_, ignored);
}

void ExportFolder::commit() {
  if (!staged_) return;
  std::error_code error;
  const fs::path target(output_dir_);
  if (fs::is_directory(target, error)) fs::remove(target, error);  // empty: rename cannot replace it everywhere
  error.clear();
  if (!target.parent_path().empty()) fs::create_directories(target.parent_path(), error);
  fs::rename(write_dir_, target, error);
  committed_ = true;  // moved, or kept where it is for the user to move
  if (error)
    fail("cannot move the export from " + write_dir_ + " to --output_dir " + output_dir_ + ": " + error.message() +
         "; the exported files are in " + write_dir_);
}

}  // namespace zt::cli
