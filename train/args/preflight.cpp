#include "train/args/preflight.h"

#include <algorithm>

#include "runtime/user_paths.h"
#include "train/args/output_dir_check.h"
#include "train/checkpoint/checkpoint.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

// --resume_from_checkpoint: an existing checkpoint folder, or "true" with one in output_dir.
void check_resume_checkpoint(const TrainingArguments& args) {
  const std::string& resume = args.resume_from_checkpoint;
  if (resume.empty()) return;
  std::string lowered = resume;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lowered != "true") require_existing_folder(resume, "--resume_from_checkpoint");
  resolve_resume_checkpoint(resume, args.output_dir);
}

}  // namespace

SelectedData check_before_loading(const TrainingArguments& args) {
  check_output_dir(args);
  check_resume_checkpoint(args);
  if (!args.deepspeed.empty()) read_deepspeed_json(args.deepspeed);
  return select_data(args);
}

}  // namespace zt::train
