// The safetensors format as the `safetensors` Python package defines it, as pure functions
// on bytes (no Tensor, no I/O), so that fuzzers and tests can drive them directly:
//
//   [u64 little-endian N][N bytes of UTF-8 JSON header][data section]
//
// The header maps tensor name -> {"dtype", "shape", "data_offsets": [begin, end]} with offsets
// relative to the data section, plus an optional "__metadata__" string -> string map. Also
// here: the sharded-checkpoint index (model.safetensors.index.json), equally pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/dtype.h"

namespace zt::safetensors {

using Dims = std::vector<std::int64_t>;

// The Python package refuses headers above 100 MB; so do we, before allocating anything.
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Dims shape;
  std::uint64_t data_begin = 0;  // byte range within the data section, end exclusive
  std::uint64_t data_end = 0;
  std::uint64_t nbytes() const { return data_end - data_begin; }
  bool operator==(const TensorInfo&) const = default;
};

struct Header {
  std::vector<TensorInfo> tensors;              // in file order: by data_begin
  std::map<std::string, std::string> metadata;  // "__metadata__"; empty when absent
  std::uint64_t data_start = 0;                 // file offset of the data section (8 + N)
};

// The format's dtype codes ("F32", "BF16", ...) for our dtypes, and back; nullopt for codes we
// do not support (the parser tells real safetensors dtypes like I8 from garbage).
const char* dtype_code(DType dtype);
std::optional<DType> parse_dtype_code(std::string_view code);

// Parses and validates the header of a whole file held in `file` (every byte of it, so that
// byte ranges can be checked against its size). Throws zt::Error naming `source` (the path)
// and, where known, the tensor. Accepts gaps between tensors, rejects overlaps.
Header parse_header(std::string_view file, const std::string& source);

// Bytes a tensor of `dtype` and `shape` occupies; throws naming `tensor` and `source` when a
// dimension is negative or the product overflows.
std::uint64_t tensor_nbytes(DType dtype, const Dims& shape, const std::string& tensor, const std::string& source);

// Orders tensors as the Python package writes them (larger dtypes first, then by name) and
// assigns contiguous data offsets from 0; the offsets passed in are ignored. Refuses duplicate
// and reserved names. `destination` names the file in errors.
std::vector<TensorInfo> plan_layout(std::vector<TensorInfo> tensors, const std::string& destination);

// The first 8 + N bytes of a file: length prefix and compact JSON, space-padded to a multiple
// of 8 so the data section stays aligned. Tensors appear in the order given (that of
// plan_layout for a file we write); metadata first, as the Python package puts it.
std::string serialize_header(const std::vector<TensorInfo>& tensors, const std::map<std::string, std::string>& metadata,
                             const std::string& destination);

// model.safetensors.index.json: {"metadata": {"total_size": N, ...}, "weight_map": {name: shard}}.
struct ShardIndex {
  std::optional<std::uint64_t> total_size;        // sum of tensor bytes, as transformers writes it
  std::map<std::string, std::string> weight_map;  // tensor name -> shard file name
};

// Parses an index; shard names must be plain file names (no directories), so an index cannot
// point outside its own folder. Throws zt::Error naming `source` and the offending key.
ShardIndex parse_index(std::string_view json_text, const std::string& source);
// Indented, sorted JSON with a final newline, as transformers writes it.
std::string serialize_index(const ShardIndex& index);

}  // namespace zt::safetensors
