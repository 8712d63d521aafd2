#include "tensor/safetensors/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <system_error>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace zt {

// The format is little-endian and tensors view the file's bytes as they are.
static_assert(std::endian::native == std::endian::little, "safetensors zero-copy reads need a little-endian host");

struct SafetensorsFile::Mapping {
  void* data = nullptr;
  std::size_t size = 0;

  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (data) ::munmap(data, size);
  }

  static std::shared_ptr<Mapping> map(const std::string& path);
  std::string_view bytes() const { return {static_cast<const char*>(data), size}; }
};

namespace {

std::string errno_text(int error_number) { return std::generic_category().message(error_number); }

[[noreturn]] void fail_open(const std::string& path, const std::string& why) {
  fail("cannot open safetensors file '" + path + "': " + why);
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void write_tensor_bytes(AtomicFile& file, const Tensor& tensor) {
  Tensor host = tensor.device().is_cpu() ? tensor.contiguous() : tensor.to(Device::cpu()).contiguous();
  if (host.nbytes() > 0) file.write(host.data_ptr(), host.nbytes());
}

}  // namespace

std::shared_ptr<SafetensorsFile::Mapping> SafetensorsFile::Mapping::map(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail_open(path, errno_text(errno));
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) fail_open(path, errno_text(errno));
  if (S_ISDIR(status.st_mode)) fail_open(path, "it is a directory");
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<std::size_t>(status.st_size);
  if (mapping->size == 0) return mapping;  // nothing to map; the header check reports it
  // Read-only and private: the file is never written through the mapping, and pages that
  // are never touched are never read from disk.
  void* data = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED) fail_open(path, "mmap failed: " + errno_text(errno));
  mapping->data = data;
  return mapping;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile file;
  file.path_ = path;
  file.mapping_ = Mapping::map(path);
  file.header_ = safetensors::parse_header(file.mapping_->bytes(), path);
  for (std::size_t i = 0; i < file.header_.tensors.size(); ++i) {
    file.names_.push_back(file.header_.tensors[i].name);
    file.index_.emplace(file.header_.tensors[i].name, i);
  }
  return file;
}

const SafetensorsInfo& SafetensorsFile::info(const std::string& name) const {
  auto found = index_.find(name);
  if (found == index_.end())
    fail("tensor '" + name + "' is not in safetensors file '" + path_ + "', which holds " +
         std::to_string(names_.size()) + " tensors: " + sample_names(names_));
  return header_.tensors[found->second];
}

Tensor SafetensorsFile::get(const std::string& name) const {
  const SafetensorsInfo& entry = info(name);
  char* data = static_cast<char*>(mapping_->data) + header_.data_start + entry.data_begin;
  if (reinterpret_cast<std::uintptr_t>(data) % dtype_size(entry.dtype) == 0)
    return Tensor::from_blob(data, entry.shape, entry.dtype, Device::cpu(), mapping_);
  Tensor copy = Tensor::empty(entry.shape, entry.dtype);
  if (entry.nbytes() > 0) std::memcpy(copy.data_ptr(), data, entry.nbytes());
  return copy;
}

const void* SafetensorsFile::mapping_data() const { return mapping_->data; }
std::size_t SafetensorsFile::mapping_size() const { return mapping_->size; }

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsInfo> entries;
  std::unordered_map<std::string, const Tensor*> by_name;
  for (const auto& [name, tensor] : tensors) {
    ZT_REQUIRE(tensor.defined(), "cannot write '" + path + "': tensor '" + name + "' is undefined");
    entries.push_back({name, tensor.dtype(), tensor.shape()});
    by_name.emplace(name, &tensor);
  }
  auto layout = safetensors::plan_layout(std::move(entries), path);  // also refuses duplicate names
  AtomicFile file(path);
  file.write(safetensors::serialize_header(layout, metadata, path));
  for (const SafetensorsInfo& entry : layout) write_tensor_bytes(file, *by_name.at(entry.name));
  file.commit();
}

std::string sample_names(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 5;
  if (names.empty()) return "(none)";
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) text += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
  return text;
}

}  // namespace zt
