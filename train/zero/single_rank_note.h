// What a ZeRO stage does on a single rank, said once at the start of a run. With one rank there
// is nothing to partition; a user who asked for stage 1, 2 or 3 (often in a ds_config.json
// written for several GPUs) learns what still happens and what does not, instead of expecting
// the memory the stage saves on many.
#pragma once

#include <optional>
#include <string>

namespace zt::train {

struct SingleRankRun {
  int stage = 0;
  bool zero_engine = false;    // a launcher's single rank: the ZeRO engine runs over one-rank collectives
  bool offload = false;        // optimizer offload
  bool offload_param = false;  // ZeRO-3 parameter offload
  // data_types.grad_accum_dtype names the 16-bit working dtype, which only partitioned
  // gradients take (train/zero/zero_engine.h)
  bool grad_accum_16bit = false;
};

// The note for a run of one rank under ZeRO stage 1-3; nullopt for stage 0.
std::optional<std::string> single_rank_zero_note(const SingleRankRun& run);

}  // namespace zt::train
