#include "train/report/startup_report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/terminal/byte_format.h"

namespace zt::train {
namespace {

// Each rank's values, gathered: row r holds rank r's. The values travel as float64-exact
// integers, so each stays below 2^53.
std::vector<std::vector<std::int64_t>> gather_rows(distributed::Communicator& comm,
                                                   const std::vector<std::int64_t>& mine, Device device) {
  const auto width = static_cast<std::int64_t>(mine.size());
  Tensor input = Tensor::from_values(std::vector<double>(mine.begin(), mine.end()), {width}, DType::kI64).to(device);
  Tensor output = Tensor::zeros({width * comm.world_size()}, DType::kI64, device);
  comm.all_gather(input, output);
  const std::vector<double> all = output.to(Device::cpu()).to_vector();
  std::vector<std::vector<std::int64_t>> rows(static_cast<std::size_t>(comm.world_size()));
  for (std::size_t i = 0; i < all.size(); ++i) rows[i / mine.size()].push_back(static_cast<std::int64_t>(all[i]));
  return rows;
}

std::int64_t host_id() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return static_cast<std::int64_t>(std::hash<std::string>{}(name) & ((std::uint64_t{1} << 48) - 1));
}

// "0000:3b:00.0" packed into one integer, and back.
std::int64_t pack_pci(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function);
  return (std::int64_t{domain} << 24) | (bus << 16) | (device << 8) | function;
}

std::string unpack_pci(std::int64_t packed) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", static_cast<unsigned>(packed >> 24),
                static_cast<unsigned>((packed >> 16) & 0xff), static_cast<unsigned>((packed >> 8) & 0xff),
                static_cast<unsigned>(packed & 0xff));
  return text;
}

std::string bytes(std::int64_t count) { return format_bytes(static_cast<std::size_t>(count)); }

}  // namespace

void report_world(distributed::Communicator& comm, int cuda_device, const std::string& launcher) {
  enum Column { kHost, kDevice, kPci };
  const std::vector<std::vector<std::int64_t>> ranks = gather_rows(
      comm, {host_id(), cuda_device, pack_pci(device_properties(cuda_device).pci_bus_id)}, Device::cuda(cuda_device));
  std::map<std::int64_t, int> node_of;                                   // host -> node number, in rank order
  std::map<std::int64_t, int> ranks_on;                                  // host -> ranks there
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> user_of;  // (host, GPU) -> first rank
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const auto& row = ranks[r];
    node_of.emplace(row[kHost], static_cast<int>(node_of.size()));
    ++ranks_on[row[kHost]];
    auto [first, unique] = user_of.emplace(std::pair{row[kHost], row[kPci]}, r);
    ZT_REQUIRE(unique, "ranks " + std::to_string(first->second) + " and " + std::to_string(r) + " both use GPU " +
                           unpack_pci(row[kPci]) + " on node " + std::to_string(node_of[row[kHost]]) +
                           ": each rank needs its own GPU; check CUDA_VISIBLE_DEVICES and LOCAL_RANK (the rank's GPU "
                           "is number LOCAL_RANK among the visible ones)");
  }
  if (comm.rank() != 0) return;
  std::vector<int> per_node(node_of.size());
  for (const auto& [host, count] : ranks_on) per_node[static_cast<std::size_t>(node_of[host])] = count;
  std::string counts = std::to_string(per_node[0]);
  if (std::count(per_node.begin(), per_node.end(), per_node[0]) != static_cast<std::ptrdiff_t>(per_node.size())) {
    counts.clear();
    for (int count : per_node) counts.append(counts.empty() ? "" : "/").append(std::to_string(count));
  }
  ZT_LOG(kInfo, "world size " << ranks.size() << " (" << launcher << "): " << per_node.size() << " node(s), " << counts
                              << " rank(s) per node");
  for (std::size_t r = 0; r < ranks.size(); ++r)
    ZT_LOG(kInfo, "rank " << r << ": node " << node_of[ranks[r][kHost]] << ", cuda:" << ranks[r][kDevice] << " ("
                          << unpack_pci(ranks[r][kPci]) << ")");
}

// What each rank holds, on its device and offloaded to host memory, where the working
// weights' share of the host memory is named: with ZeRO-3 parameter offload it is the rank's shard.
void report_model_states(distributed::Communicator* comm, const HeldModelStates& held, Device device) {
  std::vector<std::vector<std::int64_t>> ranks{
      {held.gpu.parameters, held.gpu.gradients, held.gpu.optimizer_state, held.host.total(), held.host.parameters}};
  if (comm != nullptr) ranks = gather_rows(*comm, ranks[0], device);
  if (comm != nullptr && comm->rank() != 0) return;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::string host;
    if (ranks[r][3] > 0)
      host = ", and " + bytes(ranks[r][3]) + " offloaded to host memory (parameters " + bytes(ranks[r][4]) + ")";
    ZT_LOG(kInfo, "rank " << r << " holds: parameters " << bytes(ranks[r][0]) << ", gradients " << bytes(ranks[r][1])
                          << ", optimizer state " << bytes(ranks[r][2]) << host);
  }
}

}  // namespace zt::train
