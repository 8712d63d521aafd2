#include "distributed/communicators/inprocess_communicator.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include "runtime/error.h"
#include "runtime/rank.h"

namespace zt::distributed {
namespace {

void require_contiguous(const char* op, const Tensor& t, const char* role) {
  ZT_REQUIRE(t.defined() && t.is_contiguous(), std::string(op) + ": the " + role + " must be a contiguous tensor");
}

// Writes `values` (doubles, rounded to output's dtype) into output.
void store(const Tensor& output, const std::vector<double>& values) {
  Tensor host = Tensor::from_values(values, output.shape(), output.dtype());
  Tensor target = output;  // a handle: the copy writes the caller's tensor
  target.copy_from(host);
}

std::vector<double> slice(const std::vector<double>& values, std::size_t start, std::size_t count) {
  return {values.begin() + static_cast<std::ptrdiff_t>(start),
          values.begin() + static_cast<std::ptrdiff_t>(start + count)};
}

// reduce_scatter and all_gather: checks the tensors (the output holds world_size times the
// input's elements when `gathers`, the input world_size times the output's otherwise), meets
// the group, and stores combine(every rank's input as doubles, in rank order) in the output.
template <typename Combine>
void combine_inputs(InProcessGroup& group, int rank, const char* op, const Tensor& input, const Tensor& output,
                    bool gathers, Combine&& combine) {
  require_contiguous(op, input, "input");
  require_contiguous(op, output, "output");
  if (gathers)
    require_world_multiple(op, output, "output", input, "input", group.world_size(), false);
  else
    require_world_multiple(op, input, "input", output, "output", group.world_size(), false);
  if (group.world_size() == 1) {  // the result is the input: copied where it is, on the device or host
    Tensor target = output;       // a handle: the copy writes the caller's tensor
    target.copy_from(input);
    return;
  }
  group.meet(rank, describe_collective(op, input), input, output,
             [&](const std::vector<Tensor>& inputs, const std::vector<Tensor>&) {
               std::vector<std::vector<double>> values;
               for (const Tensor& in : inputs) values.push_back(in.to_vector());
               store(output, combine(values));
             });
}

}  // namespace

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {}

void InProcessCommunicator::all_reduce(const Tensor& buffer, ReduceOp op) {
  require_contiguous("all_reduce", buffer, "buffer");
  if (world_size() == 1) return;  // a sum or maximum over one rank is its own buffer
  const std::string what = describe_collective(op == ReduceOp::kSum ? "all_reduce(sum)" : "all_reduce(max)", buffer);
  group_->meet(rank_, what, buffer, buffer, [&](const std::vector<Tensor>& inputs, const std::vector<Tensor>&) {
    std::vector<double> result = inputs[0].to_vector();
    for (std::size_t r = 1; r < inputs.size(); ++r) {
      std::vector<double> other = inputs[r].to_vector();
      for (std::size_t i = 0; i < result.size(); ++i)
        result[i] = op == ReduceOp::kSum ? result[i] + other[i] : std::max(result[i], other[i]);
    }
    // Every rank has read every input before anyone writes: the meeting's second barrier
    // would come too late for an in-place result, so the write waits for a barrier of its own.
    group_->meet(rank_, what + " write", Tensor(), Tensor(), [](const auto&, const auto&) {});
    store(buffer, result);
  });
}

void InProcessCommunicator::reduce_scatter(const Tensor& input, const Tensor& output) {
  combine_inputs(*group_, rank_, "reduce_scatter", input, output, false, [&](const auto& inputs) {
    const auto n = static_cast<std::size_t>(output.numel());
    std::vector<double> result(n, 0.0);
    for (const std::vector<double>& in : inputs) {
      std::vector<double> part = slice(in, static_cast<std::size_t>(rank_) * n, n);
      for (std::size_t i = 0; i < n; ++i) result[i] += part[i];
    }
    return result;
  });
}

void InProcessCommunicator::all_gather(const Tensor& input, const Tensor& output) {
  combine_inputs(*group_, rank_, "all_gather", input, output, true, [](const auto& inputs) {
    std::vector<double> result;
    for (const std::vector<double>& in : inputs) result.insert(result.end(), in.begin(), in.end());
    return result;
  });
}

void InProcessCommunicator::broadcast(const Tensor& buffer, int root) {
  require_contiguous("broadcast", buffer, "buffer");
  ZT_REQUIRE(root >= 0 && root < world_size(), "broadcast: root " + std::to_string(root) + " is not a rank");
  if (world_size() == 1) return;
  group_->meet(rank_, describe_collective("broadcast", buffer) + " from rank " + std::to_string(root), buffer, buffer,
               [&](const std::vector<Tensor>& inputs, const std::vector<Tensor>&) {
                 std::vector<double> values = inputs[root].to_vector();
                 group_->meet(rank_, "broadcast write", Tensor(), Tensor(), [](const auto&, const auto&) {});
                 if (rank_ != root) store(buffer, values);
               });
}

void InProcessCommunicator::barrier() {
  group_->meet(rank_, "barrier", Tensor(), Tensor(), [](const auto&, const auto&) {});
}

void run_inprocess_ranks(int world_size, std::chrono::milliseconds timeout,
                         const std::function<void(Communicator& communicator)>& fn) {
  auto group = std::make_shared<InProcessGroup>(world_size, timeout);
  std::mutex error_mutex;
  std::string first_error;  // the rank that failed first; the others fail because of it
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      set_thread_rank(ProcessRank{rank, world_size, rank, true, "inprocess", world_size});
      try {
        InProcessCommunicator communicator(group, rank);
        fn(communicator);
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (first_error.empty()) first_error = e.what();
        }
        group->abort("rank " + std::to_string(rank) + " failed: " + e.what());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (!first_error.empty()) fail(first_error);
}

}  // namespace zt::distributed
