#include "train/checkpoint/checkpoint_ranks.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <vector>

#include "distributed/communicators/collective_label.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "train/checkpoint/optimizer_state_files.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

int rank_of(const CheckpointRanks& ranks) { return ranks.comm ? ranks.comm->rank() : 0; }
int world_of(const CheckpointRanks& ranks) { return ranks.comm ? ranks.comm->world_size() : 1; }

// Runs local work (files, no collective) and returns its error, or "" when it succeeded.
std::string attempt(const std::function<void()>& work) {
  try {
    work();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

constexpr std::int64_t kMessageBytes = 4096;  // of a failed rank's error, shared with the others

// `root`'s message, on every rank: the cause of a failure goes into every rank's error, so
// that whichever rank's error the user reads (rank 0's log, the first thread's) names it.
std::string message_from(const CheckpointRanks& ranks, int root, const std::string& message) {
  Tensor bytes = Tensor::zeros({kMessageBytes}, DType::kU8);
  if (ranks.comm->rank() == root)
    std::memcpy(bytes.data<std::uint8_t>(), message.data(), std::min<std::size_t>(message.size(), kMessageBytes - 1));
  Tensor buffer = bytes.to(ranks.device);
  {
    distributed::CollectiveLabel label([] { return std::string("checkpoint: the failed rank's error"); });
    ranks.comm->broadcast(buffer, root);
  }
  bytes = buffer.to(Device::cpu());
  return reinterpret_cast<const char*>(bytes.data<std::uint8_t>());
}

// Every rank brings its own outcome of `what` ("" when it succeeded); if any rank failed,
// every rank throws the error of the first rank that failed.
void agree(const CheckpointRanks& ranks, const std::string& failure, const std::string& what) {
  if (ranks.comm == nullptr) {
    if (!failure.empty()) fail(failure);
    return;
  }
  const int world = ranks.comm->world_size(), rank = ranks.comm->rank();
  std::vector<double> flags(static_cast<std::size_t>(world), 0.0);
  flags[static_cast<std::size_t>(rank)] = failure.empty() ? 0.0 : 1.0;
  Tensor buffer = Tensor::from_values(flags, {world}, DType::kF32).to(ranks.device);
  {
    distributed::CollectiveLabel label([&] { return "checkpoint: did every rank succeed " + what; });
    ranks.comm->all_reduce(buffer, distributed::ReduceOp::kSum);
  }
  const std::vector<double> summed = buffer.to(Device::cpu()).to_vector();
  std::vector<int> failed;
  for (int r = 0; r < world; ++r)
    if (summed[static_cast<std::size_t>(r)] > 0.0) failed.push_back(r);
  if (failed.empty()) return;
  if (!failure.empty() && rank != failed.front())
    ZT_LOG(kError, "rank " << rank << " failed " << what << ": " << failure);
  std::string others;
  for (std::size_t k = 1; k < failed.size(); ++k) others += (k > 1 ? ", " : "") + std::to_string(failed[k]);
  fail("rank " + std::to_string(failed.front()) + " failed " + what + ": " +
       message_from(ranks, failed.front(), failure) +
       (others.empty() ? "" : " (rank(s) " + others + " failed too; ZT_LOG_ALL_RANKS=1 shows their errors)"));
}

std::vector<int> state_writers(const CheckpointRanks& ranks, const OptimizerEngine& optimizer) {
  if (optimizer.replicated_state()) return {0};
  std::vector<int> writers;
  for (int r = 0; r < world_of(ranks); ++r) writers.push_back(r);
  return writers;
}

}  // namespace

std::string save_checkpoint_on_ranks(const CheckpointRanks& ranks, const CheckpointSave& save) {
  const PartialCheckpoint partial = partial_checkpoint(save.output_dir, save.step);
  const std::string name = fs::path(partial.final_folder).filename().string();
  const int rank = rank_of(ranks);
  const bool main = rank == 0;
  agree(ranks, main ? attempt([&] { begin_checkpoint(partial); }) : "", "creating " + partial.folder);
  CheckpointContents contents = save.contents;
  if (save.optimizer != nullptr) {
    const std::vector<int> writers = state_writers(ranks, *save.optimizer);
    const bool writes = std::find(writers.begin(), writers.end(), rank) != writers.end();
    const std::string failure =
        writes
            ? attempt([&] { write_state_slices(partial.folder, rank, world_of(ranks), save.optimizer->held_state()); })
            : "";
    try {
      agree(ranks, failure, "writing the optimizer state of " + name);
    } catch (...) {
      if (main) abandon_checkpoint(partial);
      throw;
    }
    const StateIndexInfo info{save.optimizer_step, world_of(ranks), ranks.zero_stage};
    contents.write_optimizer = [writers, info](const std::string& folder) { write_state_index(folder, writers, info); };
  }
  std::string path, failure;
  auto complete = [&] { failure = attempt([&] { path = complete_checkpoint(partial, contents); }); };
  if (save.on_main_rank_with_weights)
    save.on_main_rank_with_weights(complete);
  else if (main)
    complete();
  agree(ranks, failure, "completing " + name);
  return path;
}

void load_optimizer_state_on_ranks(const CheckpointRanks& ranks, const std::string& directory,
                                   OptimizerEngine& optimizer, std::int64_t optimizer_step) {
  const std::string failure = attempt([&] {
    const std::optional<OptimizerStateFiles> files = OptimizerStateFiles::open(directory);
    ZT_REQUIRE(files,
               directory + " holds no optimizer state (saved with --save_only_model): it cannot be resumed from");
    ZT_REQUIRE(!files->step() || *files->step() == optimizer_step,
               files->source() + " is at step " + std::to_string(*files->step()) + " but " + directory +
                   "/zerotune_state.json counts " + std::to_string(optimizer_step) +
                   " updates: the files are from different saves; resume from another checkpoint");
    for (const StateSlice& slice : optimizer.held_state()) files->read_into(slice);
  });
  agree(ranks, failure, "reading the optimizer state of " + directory);
  optimizer.refresh_working_weights();
}

}  // namespace zt::train
