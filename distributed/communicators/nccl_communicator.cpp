#include "distributed/communicators/nccl_communicator.h"

#include <cstring>
#include <future>
#include <thread>
#include <utility>

#include "runtime/check.h"
#include "runtime/error.h"
#include "runtime/profile/step_profiler.h"
#include "runtime/streams/current_stream.h"

namespace zt::distributed {
namespace {

using Clock = std::chrono::steady_clock;

void require_cuda_contiguous(const char* op, const Tensor& t, const char* role) {
  ZT_REQUIRE(t.defined() && t.is_contiguous() && t.device().is_cuda(),
             std::string(op) + ": the " + role + " must be a contiguous CUDA tensor");
}

// An all_gather's (started or not) tensors: both on the GPU, the output world_size inputs.
void require_gather(const Tensor& input, const Tensor& output, int world_size) {
  require_cuda_contiguous("all_gather", input, "input");
  require_cuda_contiguous("all_gather", output, "output");
  require_world_multiple("all_gather", output, "output", input, "input", world_size, true);
}

// A reduce_scatter's: both on the GPU, the input world_size outputs, one dtype.
void require_reduce_scatter(const Tensor& input, const Tensor& output, int world_size) {
  require_cuda_contiguous("reduce_scatter", input, "input");
  require_cuda_contiguous("reduce_scatter", output, "output");
  require_world_multiple("reduce_scatter", input, "input", output, "output", world_size, true);
}

ncclUniqueId unique_id(int rank, const RendezvousConfig& config, std::future<void>& server) {
  ncclUniqueId id;
  if (rank == 0) {
    ZT_NCCL_CHECK(ncclGetUniqueId(&id));
    std::vector<std::uint8_t> payload(reinterpret_cast<std::uint8_t*>(&id),
                                      reinterpret_cast<std::uint8_t*>(&id) + sizeof(id));
    server = std::async(std::launch::async, [config, payload] { serve_rendezvous(config, payload); });
    return id;
  }
  std::vector<std::uint8_t> payload = join_rendezvous(config, rank);
  ZT_REQUIRE(payload.size() == sizeof(id), "rank " + std::to_string(rank) +
                                               ": the rendezvous answer is not an ncclUniqueId (" +
                                               std::to_string(payload.size()) + " bytes)");
  std::memcpy(&id, payload.data(), sizeof(id));
  return id;
}

}  // namespace

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kF64:
      return ncclFloat64;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF16:
      return ncclFloat16;
    case DType::kI64:
      return ncclInt64;
    case DType::kI32:
      return ncclInt32;
    default:
      return ncclUint8;
  }
}

NcclCommunicator::NcclCommunicator(int rank, const RendezvousConfig& rendezvous, std::chrono::milliseconds timeout)
    : rank_(rank), world_size_(rendezvous.world_size), timeout_(timeout) {
  ZT_REQUIRE(rank >= 0 && rank < world_size_,
             "rank " + std::to_string(rank) + " is outside world size " + std::to_string(world_size_));
  std::future<void> server;
  ncclUniqueId id = unique_id(rank, rendezvous, server);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const auto start = Clock::now();
  ncclResult_t status = ncclCommInitRankConfig(&comm_, world_size_, id, rank_, &config);
  ZT_REQUIRE(status == ncclSuccess || status == ncclInProgress,
             "rank " + std::to_string(rank_) + ": ncclCommInitRankConfig failed: " + ncclGetErrorString(status));
  wait_for_nccl("NCCL initialisation", start);
  if (server.valid()) server.get();  // rank 0: every peer has its id by now
  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) aborted_ ? ncclCommAbort(comm_) : ncclCommDestroy(comm_);
  if (ready_) cudaEventDestroy(ready_);
  if (done_) cudaEventDestroy(done_);
  if (stream_) cudaStreamDestroy(stream_);
}

// Polls NCCL's asynchronous state until the pending work is done; past the timeout the
// communicator is aborted so no rank stays blocked in NCCL.
void NcclCommunicator::wait_for_nccl(const std::string& what, Clock::time_point start, cudaEvent_t done) {
  while (true) {
    ncclResult_t state = ncclSuccess;
    ZT_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
    bool finished = state == ncclSuccess;
    if (finished && done) {
      cudaError_t query = cudaEventQuery(done);
      finished = query == cudaSuccess;
      if (query != cudaSuccess && query != cudaErrorNotReady) ZT_CUDA_CHECK(query);
    }
    if (finished) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const bool failed = state != ncclSuccess && state != ncclInProgress;
    if (failed || Clock::now() - start > timeout_) {
      aborted_ = true;
      ncclCommAbort(comm_);
      comm_ = nullptr;
      fail("rank " + std::to_string(rank_) + ": " + what +
           (failed ? " failed: " + std::string(ncclGetErrorString(state)) : " did not finish") + " after " +
           std::to_string(elapsed) + " s (world size " + std::to_string(world_size_) +
           "). Another rank probably failed or stopped first; see its error. Run with NCCL_DEBUG=INFO for "
           "NCCL's own account; raise --ddp_timeout if steps are legitimately this slow");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

template <typename Launch>
NcclCommunicator::Clock::time_point NcclCommunicator::launch(const std::string& what, Launch&& launch,
                                                             cudaEvent_t done) {
  ZT_REQUIRE(comm_, "rank " + std::to_string(rank_) + ": the NCCL communicator was aborted by an earlier failure");
  ZT_CUDA_CHECK(cudaEventRecord(ready_, current_stream()));
  ZT_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
  const auto start = Clock::now();
  ncclResult_t status = launch();
  ZT_REQUIRE(status == ncclSuccess || status == ncclInProgress,
             "rank " + std::to_string(rank_) + ": " + what + ": " + ncclGetErrorString(status));
  ZT_CUDA_CHECK(cudaEventRecord(done, stream_));
  return start;
}

void NcclCommunicator::finish(const std::string& what, Clock::time_point start, cudaEvent_t done) {
  wait_for_nccl(what, start, done);
  ZT_CUDA_CHECK(cudaStreamWaitEvent(current_stream(), done, 0));
}

template <typename Launch>
void NcclCommunicator::run(const std::string& what, Launch&& launch_collective) {
  ProfileRegion region(OpFamily::kCollective);
  finish(what, launch(what, launch_collective, done_), done_);
}

// A started collective: its own event marks its end on the communicator's stream, so later
// collectives (and their done_) do not disturb it.
class NcclCommunicator::Pending : public PendingCollective {
 public:
  Pending(NcclCommunicator& comm, std::string what) : comm_(comm), what_(std::move(what)) {
    ZT_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }
  ~Pending() override { cudaEventDestroy(done_); }  // CUDA frees it once the collective has passed it
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;

  template <typename Launch>
  void start(Launch&& launch) {
    start_ = comm_.launch(what_, launch, done_);
  }
  void wait() override {
    ProfileRegion region(OpFamily::kCollective);
    if (!std::exchange(waited_, true)) comm_.finish(what_, start_, done_);
  }

 private:
  NcclCommunicator& comm_;
  std::string what_;
  cudaEvent_t done_ = nullptr;
  Clock::time_point start_;
  bool waited_ = false;
};

void NcclCommunicator::all_reduce(const Tensor& buffer, ReduceOp op) {
  require_cuda_contiguous("all_reduce", buffer, "buffer");
  run(describe_collective("all_reduce", buffer), [&] {
    return ncclAllReduce(buffer.data_ptr(), buffer.data_ptr(), buffer.numel(), nccl_dtype(buffer.dtype()),
                         op == ReduceOp::kSum ? ncclSum : ncclMax, comm_, stream_);
  });
}

void NcclCommunicator::reduce_scatter(const Tensor& input, const Tensor& output) {
  require_reduce_scatter(input, output, world_size_);
  run(describe_collective("reduce_scatter", input), [&] {
    return ncclReduceScatter(input.data_ptr(), output.data_ptr(), output.numel(), nccl_dtype(input.dtype()), ncclSum,
                             comm_, stream_);
  });
}

void NcclCommunicator::all_gather(const Tensor& input, const Tensor& output) {
  require_gather(input, output, world_size_);
  run(describe_collective("all_gather", input), [&] {
    return ncclAllGather(input.data_ptr(), output.data_ptr(), input.numel(), nccl_dtype(input.dtype()), comm_, stream_);
  });
}

std::unique_ptr<PendingCollective> NcclCommunicator::start_all_gather(const Tensor& input, const Tensor& output) {
  require_gather(input, output, world_size_);
  auto pending = std::make_unique<Pending>(*this, describe_collective("all_gather", input));
  pending->start([&] {
    return ncclAllGather(input.data_ptr(), output.data_ptr(), input.numel(), nccl_dtype(input.dtype()), comm_, stream_);
  });
  return pending;
}

std::unique_ptr<PendingCollective> NcclCommunicator::start_reduce_scatter(const Tensor& input, const Tensor& output) {
  require_reduce_scatter(input, output, world_size_);
  auto pending = std::make_unique<Pending>(*this, describe_collective("reduce_scatter", input));
  pending->start([&] {
    return ncclReduceScatter(input.data_ptr(), output.data_ptr(), output.numel(), nccl_dtype(input.dtype()), ncclSum,
                             comm_, stream_);
  });
  return pending;
}

void NcclCommunicator::broadcast(const Tensor& buffer, int root) {
  require_cuda_contiguous("broadcast", buffer, "buffer");
  run(describe_collective("broadcast", buffer), [&] {
    return ncclBroadcast(buffer.data_ptr(), buffer.data_ptr(), buffer.numel(), nccl_dtype(buffer.dtype()), root, comm_,
                         stream_);
  });
}

void NcclCommunicator::barrier() {
  Tensor one = Tensor::zeros({1}, DType::kF32, Device::cuda());
  all_reduce(one, ReduceOp::kSum);
}

}  // namespace zt::distributed
