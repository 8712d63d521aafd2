// Fuzzes the safetensors header parser with arbitrary bytes taken as a whole file. Rejecting
// input with zt::Error is expected; anything else escaping, a sanitizer report, or a broken
// invariant of an accepted header is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "tensor/safetensors/safetensors_format.h"

namespace st = zt::safetensors;
using zt::fuzz::require;

namespace {

// What the parser promises about a header it accepts.
void check_invariants(const st::Header& header, std::string_view file) {
  require(header.data_start <= file.size());
  std::uint64_t data_size = file.size() - header.data_start;
  for (std::size_t i = 0; i < header.tensors.size(); ++i) {
    const st::TensorInfo& info = header.tensors[i];
    require(info.data_begin <= info.data_end && info.data_end <= data_size);
    require(st::tensor_nbytes(info.dtype, info.shape, info.name, "fuzz") == info.nbytes());
    if (i > 0) require(header.tensors[i - 1].data_begin <= info.data_begin);
  }
}

// Writing what was read and reading it back gives the same header, data section kept.
void check_round_trip(const st::Header& header, std::string_view file) {
  std::string rewritten = st::serialize_header(header.tensors, header.metadata, "fuzz");
  require(rewritten.size() % 8 == 0);
  rewritten.append(file.substr(header.data_start));
  st::Header again = st::parse_header(rewritten, "fuzz");
  require(again.tensors == header.tensors && again.metadata == header.metadata);
}

// The layout our writer would choose for these tensors is itself a valid file.
void check_layout(const st::Header& header) {
  auto planned = st::plan_layout(header.tensors, "fuzz");
  std::string file = st::serialize_header(planned, header.metadata, "fuzz");
  file.append(planned.empty() ? 0 : planned.back().data_end, '\0');
  st::Header again = st::parse_header(file, "fuzz");
  require(again.tensors == planned);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view file = zt::fuzz::as_text(data, size);
  const auto header = zt::fuzz::accepted([&] { return st::parse_header(file, "fuzz"); });
  if (!header) return 0;
  check_invariants(*header, file);
  check_round_trip(*header, file);
  check_layout(*header);
  return 0;
}
