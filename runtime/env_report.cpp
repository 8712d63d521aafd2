#include "runtime/env_report.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <thread>

#include "runtime/device.h"
#include "runtime/rank.h"
#include "zerotune/build_info.h"

extern char** environ;

namespace zt {
namespace {

using nlohmann::json;

std::string cuda_version_text(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
    return "unknown";
  return dotted(major, minor, patch);
}

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  return dotted(code / 10000, code % 10000 / 100, code % 100);
}

std::string cudnn_version(std::size_t code) {
  return dotted(static_cast<int>(code / 10000), static_cast<int>(code % 10000 / 100), static_cast<int>(code % 100));
}

json libraries() {
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  cudaGetLastError();
  return {
      {"cuda_driver", cuda_version_text(driver)},
      {"cuda_runtime", cuda_version_text(runtime) + " (static)"},
      {"cublas", cublas_version()},
      {"cublas_built_with", dotted(CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH)},
      {"cublaslt", std::to_string(cublasLtGetVersion())},
      {"nccl", nccl_version()},
      {"nccl_built_with", dotted(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)},
      {"cudnn", cudnn_version(cudnnGetVersion())},
      {"cudnn_built_with", cudnn_version(CUDNN_VERSION)},
  };
}

json gpus() {
  json list = json::array();
  int count = cuda_device_count();
  for (int i = 0; i < count; ++i) {
    DeviceProperties p = device_properties(i);
    json peers = json::array();
    for (int j = 0; j < count; ++j)
      if (j != i && can_access_peer(i, j)) peers.push_back(j);
    list.push_back({{"index", i},
                    {"name", p.name},
                    {"memory_bytes", p.total_memory},
                    {"compute_capability", std::to_string(p.compute_major) + "." + std::to_string(p.compute_minor)},
                    {"bf16", p.supports_bf16()},
                    {"multiprocessors", p.multiprocessors},
                    {"pci_bus_id", p.pci_bus_id},
                    {"peer_access", peers}});
  }
  return list;
}

bool reported_variable(const std::string& name) {
  static const char* const kExact[] = {
      "CUDA_VISIBLE_DEVICES", "RANK",        "WORLD_SIZE",  "LOCAL_RANK",   "LOCAL_WORLD_SIZE",
      "GROUP_RANK",           "MASTER_ADDR", "MASTER_PORT", "ZT_LOG_LEVEL", "ZT_LOG_ALL_RANKS"};
  static const char* const kPrefixes[] = {"OMPI_COMM_WORLD_", "SLURM_", "NCCL_", "TORCHELASTIC_"};
  for (const char* exact : kExact)
    if (name == exact) return true;
  for (const char* prefix : kPrefixes)
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

json environment_variables() {
  json vars = json::object();
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text = *entry;
    std::size_t eq = text.find('=');
    if (eq == std::string::npos) continue;
    std::string name = text.substr(0, eq);
    if (reported_variable(name)) vars[name] = text.substr(eq + 1);
  }
  return vars;
}

json host() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  ProcessRank r = current_rank();
  return {{"hostname", name},           {"cpu_threads", std::thread::hardware_concurrency()},
          {"launcher", r.launcher},     {"rank", r.rank},
          {"world_size", r.world_size}, {"local_rank", r.local_rank}};
}

}  // namespace

json collect_environment_report() {
  json report;
  report["zerotune"] = {{"version", build::kVersion},          {"git_revision", build::kGitRevision},
                        {"build_type", build::kBuildType},     {"cuda_architectures", build::kCudaArchitectures},
                        {"cxx_compiler", build::kCxxCompiler}, {"cuda_compiler", build::kCudaCompiler}};
  report["libraries"] = libraries();
  report["gpus"] = gpus();
  if (!cuda_available()) report["gpu_unavailable_reason"] = cuda_unavailable_reason();
  report["host"] = host();
  report["environment"] = environment_variables();
  return report;
}

std::string format_environment_report(const json& report) {
  std::ostringstream out;
  auto section = [&](const char* title) { out << "\n" << title << "\n"; };
  auto row = [&](const std::string& key, const json& value) {
    out << "  " << key << std::string(key.size() < 22 ? 22 - key.size() : 1, ' ')
        << (value.is_string() ? value.get<std::string>() : value.dump()) << "\n";
  };
  out << "zerotune environment report";
  for (const char* group : {"zerotune", "libraries", "host"}) {
    section(group);
    for (const auto& [key, value] : report[group].items()) row(key, value);
  }
  section("gpus");
  if (report["gpus"].empty()) out << "  no GPU: " << report.value("gpu_unavailable_reason", "") << "\n";
  for (const auto& gpu : report["gpus"]) {
    out << "  [" << gpu["index"].get<int>() << "] " << gpu["name"].get<std::string>() << ", "
        << gpu["memory_bytes"].get<std::size_t>() / (1024 * 1024) << " MiB, compute capability "
        << gpu["compute_capability"].get<std::string>() << ", " << gpu["multiprocessors"].get<int>() << " SMs, bf16 "
        << (gpu["bf16"].get<bool>() ? "yes" : "no") << ", PCI " << gpu["pci_bus_id"].get<std::string>()
        << ", peer access to " << (gpu["peer_access"].empty() ? "none" : gpu["peer_access"].dump()) << "\n";
  }
  section("environment (launcher, CUDA and NCCL variables that are set)");
  if (report["environment"].empty()) out << "  none set\n";
  for (const auto& [key, value] : report["environment"].items()) row(key, value);
  return out.str();
}

}  // namespace zt
