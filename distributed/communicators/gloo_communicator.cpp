#include "distributed/communicators/gloo_communicator.h"

#include "runtime/error.h"
#include "runtime/profile/step_profiler.h"

#if ZT_HAVE_GLOO

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/context.h>
#include <gloo/math.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "distributed/launch/rank_exchange.h"
#include "distributed/launch/rendezvous_wire.h"
#include "distributed/launch/socket.h"

namespace zt::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using ReduceFunction = void (*)(void*, const void*, const void*, std::size_t);

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s", seconds);
  return text;
}

std::string seconds_since(Clock::time_point start) {
  return format_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

// Gloo prefixes its messages with its source file and line; the reader needs only the rest.
std::string without_source_location(const std::string& message) {
  const std::size_t end = message.find("] ");
  return message.rfind('[', 0) == 0 && end != std::string::npos ? message.substr(end + 2) : message;
}

// The local address that packets to MASTER_ADDR leave from, which is where the other ranks
// can reach this one (connecting a UDP socket sends nothing).
std::string address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int status = getaddrinfo(host.c_str(), "9", &hints, &found);
  ZT_REQUIRE(status == 0, "cannot resolve MASTER_ADDR " + host + ": " + gai_strerror(status));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, freeaddrinfo);
  Socket probe(socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  const bool routed = probe.valid() && connect(probe.fd(), found->ai_addr, found->ai_addrlen) == 0 &&
                      getsockname(probe.fd(), reinterpret_cast<sockaddr*>(&local), &length) == 0;
  ZT_REQUIRE(routed, "no local address reaches MASTER_ADDR " + host + " (" + std::strerror(errno) +
                         "); set GLOO_SOCKET_IFNAME to the network interface the ranks share");
  char name[NI_MAXHOST] = {};
  getnameinfo(reinterpret_cast<sockaddr*>(&local), length, name, sizeof(name), nullptr, 0, NI_NUMERICHOST);
  return name;
}

gloo::transport::tcp::attr device_attributes(const RendezvousConfig& rendezvous) {
  gloo::transport::tcp::attr attributes;
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface)
    attributes.iface = iface;
  else
    attributes.hostname = address_toward(rendezvous.address);
  return attributes;
}

// A rank's blob holds its address for each peer in rank order, each as (length u32 | bytes);
// returns the one `sender` made for `receiver`.
std::vector<char> address_for(const std::vector<std::uint8_t>& blob, int sender, int receiver) {
  const int index = receiver < sender ? receiver : receiver - 1;
  std::size_t at = 0;
  for (int i = 0; at + 4 <= blob.size(); ++i) {
    const std::size_t length = wire::get_u32(blob.data() + at);
    at += 4;
    if (length > blob.size() - at) break;
    if (i == index)
      return std::vector<char>(blob.begin() + static_cast<std::ptrdiff_t>(at),
                               blob.begin() + static_cast<std::ptrdiff_t>(at + length));
    at += length;
  }
  fail("rank " + std::to_string(receiver) + ": rank " + std::to_string(sender) +
       " sent no Gloo address for it; are both the same zerotune version?");
}

// gloo::Context with every pair connected to addresses that came through the rank exchange:
// Gloo's own rendezvous wants a key-value store that this job does not run.
class ExchangedContext : public gloo::Context {
 public:
  ExchangedContext(int rank, const RendezvousConfig& rendezvous, std::chrono::milliseconds timeout)
      : gloo::Context(rank, rendezvous.world_size) {
    setTimeout(timeout);
    device_ = gloo::transport::tcp::CreateDevice(device_attributes(rendezvous));
    transportContext_ = device_->createContext(rank, size);
    transportContext_->setTimeout(timeout);
    std::vector<std::uint8_t> mine;
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      const std::vector<char> address = transportContext_->createPair(peer)->address().bytes();
      wire::put_u32(mine, static_cast<std::uint32_t>(address.size()));
      mine.insert(mine.end(), address.begin(), address.end());
    }
    const std::vector<std::vector<std::uint8_t>> all = exchange_with_all_ranks(rendezvous, rank, mine);
    for (int peer = 0; peer < size; ++peer)
      if (peer != rank) transportContext_->getPair(peer)->connect(address_for(all[peer], peer, rank));
  }
};

void require_cpu_contiguous(const char* op, const Tensor& t, const char* role) {
  ZT_REQUIRE(t.defined() && t.is_contiguous() && t.device().is_cpu(),
             std::string(op) + ": the " + role + " must be a contiguous CPU tensor (Gloo runs on the CPU)");
}

bool is_16bit_float(DType dtype) { return dtype == DType::kBF16 || dtype == DType::kF16; }

void require_reducible(const char* op, const Tensor& t) {
  const DType d = t.dtype();
  ZT_REQUIRE(is_16bit_float(d) || d == DType::kF32 || d == DType::kF64 || d == DType::kI32 || d == DType::kI64,
             std::string(op) + ": Gloo reduces float32, float64, bfloat16, float16, int32 and int64 tensors, not " +
                 dtype_name(d));
}

// What Gloo sums: 16-bit floats widened to float32, else the tensor itself, or a copy of it
// when the caller's tensor must stay as it is.
Tensor reduction_buffer(const Tensor& t, bool keep_original) {
  if (is_16bit_float(t.dtype())) return t.to(DType::kF32);
  return keep_original ? t.clone() : t;
}

template <typename T>
void set_reduction(gloo::AllreduceOptions& options, const Tensor& t, ReduceOp op) {
  options.setOutput(t.data<T>(), static_cast<std::size_t>(t.numel()));
  options.setReduceFunction(op == ReduceOp::kSum ? static_cast<ReduceFunction>(&gloo::sum<T>)
                                                 : static_cast<ReduceFunction>(&gloo::max<T>));
}

void write_into(const Tensor& destination, const Tensor& source) {
  Tensor target = destination;  // a handle: the copy writes the caller's tensor
  target.copy_from(source);
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::Context> context, std::chrono::milliseconds timeout)
      : context_(std::move(context)), timeout_(timeout) {}

  int rank() const override { return context_->rank; }
  int world_size() const override { return context_->size; }

  void all_reduce(const Tensor& buffer, ReduceOp op) override {
    require_cpu_contiguous("all_reduce", buffer, "buffer");
    require_reducible("all_reduce", buffer);
    run(describe_collective(op == ReduceOp::kSum ? "all_reduce(sum)" : "all_reduce(max)", buffer), [&](auto tag) {
      Tensor reduced = reduction_buffer(buffer, false);
      reduce(reduced, op, tag);
      if (reduced.data_ptr() != buffer.data_ptr()) write_into(buffer, reduced);
    });
  }

  void reduce_scatter(const Tensor& input, const Tensor& output) override {
    require_cpu_contiguous("reduce_scatter", input, "input");
    require_cpu_contiguous("reduce_scatter", output, "output");
    require_reducible("reduce_scatter", input);
    require_world_multiple("reduce_scatter", input, "input", output, "output", world_size(), true);
    run(describe_collective("reduce_scatter", input), [&](auto tag) {
      Tensor reduced = reduction_buffer(input, true);
      reduce(reduced, ReduceOp::kSum, tag);
      const std::int64_t n = output.numel();
      write_into(output, reduced.flatten().narrow(0, rank() * n, n).view(output.shape()));
    });
  }

  void all_gather(const Tensor& input, const Tensor& output) override {
    require_cpu_contiguous("all_gather", input, "input");
    require_cpu_contiguous("all_gather", output, "output");
    require_world_multiple("all_gather", output, "output", input, "input", world_size(), true);
    run(describe_collective("all_gather", input), [&](auto tag) {
      if (input.numel() == 0) return;
      gloo::AllgatherOptions options(context_);
      options.setInput(static_cast<std::uint8_t*>(input.data_ptr()), input.nbytes());
      options.setOutput(static_cast<std::uint8_t*>(output.data_ptr()), output.nbytes());
      options.setTag(tag);
      options.setTimeout(timeout_);
      gloo::allgather(options);
    });
  }

  void broadcast(const Tensor& buffer, int root) override {
    require_cpu_contiguous("broadcast", buffer, "buffer");
    ZT_REQUIRE(root >= 0 && root < world_size(), "broadcast: root " + std::to_string(root) + " is not a rank");
    run(describe_collective("broadcast", buffer) + " from rank " + std::to_string(root), [&](auto tag) {
      if (buffer.numel() == 0) return;
      gloo::BroadcastOptions options(context_);
      options.setOutput(static_cast<std::uint8_t*>(buffer.data_ptr()), buffer.nbytes());
      options.setRoot(root);
      options.setTag(tag);
      options.setTimeout(timeout_);
      gloo::broadcast(options);
    });
  }

  void barrier() override {
    run("barrier", [&](auto tag) {
      gloo::BarrierOptions options(context_);
      options.setTag(tag);
      options.setTimeout(timeout_);
      gloo::barrier(options);
    });
  }

 private:
  // Every rank numbers its collectives alike; a distinct tag per collective keeps a late
  // message of one from ever matching the next.
  template <typename Collective>
  void run(const std::string& what, Collective&& collective) {
    ZT_REQUIRE(failure_.empty(), "rank " + std::to_string(rank()) + ": no " + what +
                                     ": the Gloo communicator stopped at an earlier failure (" + failure_ + ")");
    ProfileRegion region(OpFamily::kCollective);
    const auto start = Clock::now();
    try {
      collective(next_tag_++);
    } catch (const gloo::Exception& e) {
      fail_collective(what, start, e.what());
    } catch (const gloo::EnforceNotMet& e) {
      fail_collective(what, start, e.what());
    }
  }

  [[noreturn]] void fail_collective(const std::string& what, Clock::time_point start, const std::string& reason) {
    const bool timed_out = Clock::now() - start >= timeout_;
    failure_ = what + ": " + without_source_location(reason);
    fail("rank " + std::to_string(rank()) + ": " + what +
         (timed_out ? " did not finish within the " + format_seconds(timeout_.count() / 1000.0) + " timeout (after "
                    : " failed after ") +
         seconds_since(start) + (timed_out ? ", " : " (") + "world size " + std::to_string(world_size()) +
         "): " + without_source_location(reason) +
         ". Another rank probably failed or stopped first; see its error. Raise --ddp_timeout if steps are "
         "legitimately this slow");
  }

  void reduce(const Tensor& t, ReduceOp op, std::uint32_t tag) {
    if (t.numel() == 0) return;
    gloo::AllreduceOptions options(context_);
    switch (t.dtype()) {
      case DType::kF32:
        set_reduction<float>(options, t, op);
        break;
      case DType::kF64:
        set_reduction<double>(options, t, op);
        break;
      case DType::kI32:
        set_reduction<std::int32_t>(options, t, op);
        break;
      default:
        set_reduction<std::int64_t>(options, t, op);
        break;
    }
    options.setTag(tag);
    options.setTimeout(timeout_);
    gloo::allreduce(options);
  }

  std::shared_ptr<gloo::Context> context_;
  std::chrono::milliseconds timeout_;
  std::uint32_t next_tag_ = 1;  // 0 was the barrier that ended connecting
  std::string failure_;         // the first failure; every later collective refuses to run
};

}  // namespace

bool gloo_available() { return true; }

std::unique_ptr<Communicator> connect_gloo(int rank, const RendezvousConfig& rendezvous,
                                           std::chrono::milliseconds timeout) {
  ZT_REQUIRE(rank >= 0 && rank < rendezvous.world_size,
             "rank " + std::to_string(rank) + " is outside world size " + std::to_string(rendezvous.world_size));
  // Gloo writes with writev, which raises SIGPIPE when the peer has died; ignored, the write
  // fails instead and becomes an error that names the collective.
  std::signal(SIGPIPE, SIG_IGN);
  const auto start = Clock::now();
  std::string reason;
  try {
    auto context = std::make_shared<ExchangedContext>(rank, rendezvous, timeout);
    // A pair is connected on one side before the other: without this barrier a rank could
    // start, and fail, while a peer still connects, and the peer's error would not name a collective.
    gloo::BarrierOptions everyone_connected(context);
    everyone_connected.setTimeout(timeout);
    gloo::barrier(everyone_connected);
    return std::make_unique<GlooCommunicator>(std::move(context), timeout);
  } catch (const gloo::Exception& e) {
    reason = e.what();
  } catch (const gloo::EnforceNotMet& e) {
    reason = e.what();
  }
  fail("rank " + std::to_string(rank) + ": connecting to the other ranks through Gloo failed after " +
       seconds_since(start) + " (world size " + std::to_string(rendezvous.world_size) +
       "): " + without_source_location(reason) + ". Another rank probably failed first; see its error");
}

}  // namespace zt::distributed

#else  // built without Gloo

namespace zt::distributed {

bool gloo_available() { return false; }

std::unique_ptr<Communicator> connect_gloo(int rank, const RendezvousConfig&, std::chrono::milliseconds) {
  fail("rank " + std::to_string(rank) +
       ": multi-process training on the CPU runs on Gloo, and this zerotune was "
       "built without it. Install libgloo-dev (scripts/setup.sh does) and rebuild, or train with "
       "--inprocess_ranks N in one process");
}

}  // namespace zt::distributed

#endif
