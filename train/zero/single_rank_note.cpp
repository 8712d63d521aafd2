#include "train/zero/single_rank_note.h"

namespace zt::train {

std::optional<std::string> single_rank_zero_note(const SingleRankRun& run) {
  // Stage 3 with offload_param saves on one rank too: the weights wait in host memory.
  if (run.stage == 0 || (run.stage == 3 && run.offload_param)) return std::nullopt;
  const std::string stage = std::to_string(run.stage);
  std::string note = "ZeRO stage " + stage + " on 1 rank partitions nothing: ";
  if (!run.zero_engine) {
    // One process without a launcher trains with the single-device optimizer (train/trainer.cpp).
    note += "one process trains with the single-device optimizer, the same steps and the same memory as stage 0";
    if (run.offload)
      note += ", except that optimizer offload still keeps the fp32 master weights and Adam moments in host memory";
    if (run.stage == 3)
      note +=
          "; no module is gathered or released and no layer is recomputed in backward "
          "(--gradient_checkpointing recomputes them)";
  } else {
    note +=
        "the rank's partition is the whole model, so every model state stays whole on its GPU as under stage 0, "
        "and stage " +
        stage + "'s collectives run with one rank";
    if (run.stage == 3)
      note +=
          "; stage 3 still gathers each module into a buffer of its own before use and releases it after, and "
          "recomputes every layer in backward: time spent, no memory saved";
  }
  // Stages 0 and 3 warn of it whatever the ranks (train/deepspeed/deepspeed_features.cpp).
  if (run.grad_accum_16bit && (run.stage == 1 || run.stage == 2) && !run.offload)
    note += "; data_types.grad_accum_dtype has no effect: with nothing partitioned the gradients accumulate in fp32";
  return note +
         ". ZeRO partitions over several ranks: --inprocess_ranks N on one device, or zerotune launch "
         "--nproc_per_node N";
}

}  // namespace zt::train
