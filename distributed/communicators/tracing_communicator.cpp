#include "distributed/communicators/tracing_communicator.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "distributed/communicators/collective_label.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::distributed {
namespace {

std::int64_t microseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace

TracingCommunicator::TracingCommunicator(Communicator& inner, const std::string& trace_path,
                                         std::chrono::steady_clock::time_point run_start)
    : inner_(inner), trace_path_(trace_path), run_start_(run_start) {
  const std::filesystem::path folder = std::filesystem::path(trace_path).parent_path();
  std::error_code ignored;  // a folder that cannot be made fails the open below, which says so by name
  if (!folder.empty()) std::filesystem::create_directories(folder, ignored);
  trace_.open(trace_path, std::ios::trunc);
  ZT_REQUIRE(trace_.good(), "--zero_trace: cannot write " + trace_path + "; check that its folder is writable");
}

void TracingCommunicator::traced(const char* op, const Tensor& tensor, const std::function<void()>& collective) {
  const auto start = std::chrono::steady_clock::now();
  collective();
  const std::int64_t host_us = microseconds(std::chrono::steady_clock::now() - start);
  const std::int64_t start_us = microseconds(start - run_start_);
  const std::string label = CollectiveLabelScope::current();
  nlohmann::ordered_json line = {{"rank", rank()}, {"op", op}, {"label", label}};  // fields in reading order
  line["dtype"] = tensor.defined() ? dtype_name(tensor.dtype()) : "";
  line["elements"] = tensor.defined() ? tensor.numel() : 0;
  line["bytes"] = tensor.defined() ? tensor.nbytes() : 0;
  line["start_us"] = start_us;
  line["host_us"] = host_us;
  trace_ << line.dump() << '\n' << std::flush;  // a run that dies keeps every line it traced
  ZT_REQUIRE(trace_.good(), "--zero_trace: writing " + trace_path_ + " failed (disk full?)");
  ZT_LOG(kInfo, "trace " << (tensor.defined() ? describe_collective(op, tensor) : std::string(op)) << " ["
                         << (label.empty() ? "unlabelled" : label) << "] at " << start_us / 1000.0 << " ms, " << host_us
                         << " us");
}

void TracingCommunicator::all_reduce(const Tensor& buffer, ReduceOp op) {
  traced(op == ReduceOp::kSum ? "all_reduce(sum)" : "all_reduce(max)", buffer, [&] { inner_.all_reduce(buffer, op); });
}

void TracingCommunicator::reduce_scatter(const Tensor& input, const Tensor& output) {
  traced("reduce_scatter", input, [&] { inner_.reduce_scatter(input, output); });
}

void TracingCommunicator::all_gather(const Tensor& input, const Tensor& output) {
  traced("all_gather", input, [&] { inner_.all_gather(input, output); });
}

std::unique_ptr<PendingCollective> TracingCommunicator::start_all_gather(const Tensor& input, const Tensor& output) {
  std::unique_ptr<PendingCollective> pending;
  traced("all_gather", input, [&] { pending = inner_.start_all_gather(input, output); });
  return pending;
}

std::unique_ptr<PendingCollective> TracingCommunicator::start_reduce_scatter(const Tensor& input,
                                                                             const Tensor& output) {
  std::unique_ptr<PendingCollective> pending;
  traced("reduce_scatter", input, [&] { pending = inner_.start_reduce_scatter(input, output); });
  return pending;
}

void TracingCommunicator::broadcast(const Tensor& buffer, int root) {
  traced("broadcast", buffer, [&] { inner_.broadcast(buffer, root); });
}

void TracingCommunicator::barrier() {
  traced("barrier", Tensor(), [&] { inner_.barrier(); });
}

std::string trace_file_name(int rank) { return "zero_trace_rank" + std::to_string(rank) + ".jsonl"; }

}  // namespace zt::distributed
