// Where `zerotune export` writes its --output_dir, checked before any work:
//   - a folder that holds the other kind of export (a PEFT adapter's adapter_config.json where a
//     model goes, a model's config.json where an adapter goes) is refused whatever the flags: the
//     folder would then load as the wrong thing (transformers, PEFT and zerotune all read a
//     folder with adapter_config.json as an adapter);
//   - a folder that holds anything is refused unless --overwrite_output_dir (as `zerotune train`
//     and HF's run scripts refuse one), which writes into it, each file replaced atomically;
//   - a new (or empty) folder is written as a hidden sibling, `.NAME.partial`, renamed into
//     place once the export is complete, so an export that fails or is killed leaves no half
//     folder behind (as checkpoints are written).
// The refusals are usage errors (exit code 2): the command line asks for them.
#pragma once

#include <string>

namespace zt::cli {

enum class ExportKind { kModel, kAdapter };

class ExportFolder {
 public:
  ExportFolder(std::string output_dir, ExportKind kind, bool overwrite);
  // Removes the staging folder of an export that did not commit.
  ~ExportFolder();
  ExportFolder(const ExportFolder&) = delete;
  ExportFolder& operator=(const ExportFolder&) = delete;

  // Where the files go: the staging folder, or output_dir itself when writing into it.
  const std::string& write_dir() const { return write_dir_; }
  // Puts the finished export in place under output_dir.
  void commit();

 private:
  std::string output_dir_;
  std::string write_dir_;
  bool staged_ = false;
  bool committed_ = false;
};

}  // namespace zt::cli
