#include "train/args/preflight.h"

#include <algorithm>

#include "runtime/user_paths.h"
#include "train/args/output_dir_check.h"
#include "train/checkpoint/checkpoint.h"

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

CheckedInputs check_before_loading(const TrainingArguments& args) {
  check_output_dir(args);
  check_resume_checkpoint(args);
  CheckedInputs checked;
  if (!args.deepspeed.empty()) checked.deepspeed = read_deepspeed_input(args.deepspeed);
  checked.data = select_data(args);
  return checked;
}

}  // namespace zt::train
