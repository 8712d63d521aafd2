#include "tensor/safetensors/safetensors_format.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/enum_names.h"
#include "runtime/error.h"

namespace zt::safetensors {
namespace {

// The header's dtype strings, as the safetensors format spells them.
constexpr EnumName<DType> kDTypeCodes[] = {{DType::kF32, "F32"},   {DType::kF64, "F64"},  {DType::kF16, "F16"},
                                           {DType::kBF16, "BF16"}, {DType::kI32, "I32"},  {DType::kI64, "I64"},
                                           {DType::kU8, "U8"},     {DType::kBool, "BOOL"}};

using nlohmann::json;

constexpr std::uint64_t kMaxDim = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
constexpr const char* kSupported = "F32, F64, F16, BF16, I64, I32, U8, BOOL";
constexpr std::array kUnsupportedCodes = {"I8",      "I16",     "U16", "U32",     "U64",     "F8_E4M3",
                                          "F8_E5M2", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};

// Names from a damaged file can be huge or binary; keep messages short and printable, and
// cut only between UTF-8 characters.
std::string printable(std::string_view text) {
  std::size_t cut = std::min<std::size_t>(text.size(), 100);
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string shown;
  for (char c : text.substr(0, cut)) shown += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (cut < text.size()) shown += "...";
  return "'" + shown + "'";
}

std::string dims_str(const Dims& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// A JSON value in a message: scalars as written, containers by kind (they can be huge or deep).
std::string describe(const json& value) {
  return value.is_primitive() ? printable(value.dump()) : std::string("an ") + value.type_name();
}

[[noreturn]] void fail_file(const std::string& source, const std::string& what) {
  fail("safetensors file '" + source + "': " + what);
}

[[noreturn]] void fail_tensor(const std::string& source, std::string_view tensor, const std::string& what) {
  fail_file(source, "tensor " + printable(tensor) + ": " + what);
}

const std::string kCorrupt = "; the file is damaged or was written by a faulty writer: re-download or re-export it";

// nlohmann keeps the last of duplicate keys silently, which would hide a second tensor of the
// same name; this parse reports them. `on_duplicate` gets the keys of the enclosing objects
// (outermost first) and the repeated key, and is expected to throw.
using DuplicateHandler = std::function<void(const std::vector<std::string>& path, const std::string& key)>;

json parse_json_rejecting_duplicates(std::string_view text, const DuplicateHandler& on_duplicate) {
  struct OpenObject {
    std::set<std::string> keys;
    std::string last_key;
  };
  std::vector<OpenObject> open;
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open.emplace_back();
    if (event == json::parse_event_t::object_end) open.pop_back();
    if (event == json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open.back().keys.insert(key).second) {
        std::vector<std::string> path;
        for (std::size_t i = 0; i + 1 < open.size(); ++i) path.push_back(open[i].last_key);
        on_duplicate(path, key);
      }
      open.back().last_key = key;
    }
    return true;
  };
  return json::parse(text.begin(), text.end(), callback);
}

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, bool& overflow) {
  std::uint64_t product = 0;
  overflow = overflow || __builtin_mul_overflow(a, b, &product) || product > kMaxDim;
  return product;
}

// A non-negative integer no larger than `limit`, or nullopt.
std::optional<std::uint64_t> as_count(const json& value, std::uint64_t limit) {
  if (!value.is_number_unsigned()) return std::nullopt;
  auto count = value.get<std::uint64_t>();
  if (count > limit) return std::nullopt;
  return count;
}

const json& require_key(const json& entry, const char* key, const std::string& source, const std::string& name) {
  auto found = entry.find(key);
  if (found == entry.end()) fail_tensor(source, name, std::string("entry has no \"") + key + "\"" + kCorrupt);
  return *found;
}

DType parse_entry_dtype(const json& value, const std::string& source, const std::string& name) {
  if (!value.is_string())
    fail_tensor(source, name, "\"dtype\" must be a string like \"F32\", got " + describe(value) + kCorrupt);
  const auto& code = value.get_ref<const std::string&>();
  if (auto dtype = parse_dtype_code(code)) return *dtype;
  bool known = std::find(kUnsupportedCodes.begin(), kUnsupportedCodes.end(), code) != kUnsupportedCodes.end();
  if (known)
    fail_tensor(source, name,
                "dtype " + printable(code) + " is not supported (zerotune reads " + kSupported +
                    "); convert the tensor to one of those first");
  fail_tensor(
      source, name,
      "unknown dtype " + printable(code) + " (safetensors dtypes zerotune reads: " + kSupported + ")" + kCorrupt);
}

Dims parse_entry_shape(const json& value, const std::string& source, const std::string& name) {
  if (!value.is_array())
    fail_tensor(source, name, "\"shape\" must be an array of dimensions, got " + describe(value) + kCorrupt);
  Dims shape;
  for (const json& dim : value) {
    if (dim.is_number_integer() && !dim.is_number_unsigned())
      fail_tensor(source, name, "shape has the negative dimension " + dim.dump() + kCorrupt);
    auto size = as_count(dim, kMaxDim);
    if (!size) fail_tensor(source, name, "shape must hold integers below 2^63, got " + describe(dim) + kCorrupt);
    shape.push_back(static_cast<std::int64_t>(*size));
  }
  return shape;
}

std::pair<std::uint64_t, std::uint64_t> parse_entry_offsets(const json& value, const std::string& source,
                                                            const std::string& name) {
  auto limit = std::numeric_limits<std::uint64_t>::max();
  std::optional<std::uint64_t> begin, end;
  if (value.is_array() && value.size() == 2) {
    begin = as_count(value[0], limit);
    end = as_count(value[1], limit);
  }
  if (!begin || !end)
    fail_tensor(source, name,
                "\"data_offsets\" must be [begin, end] with non-negative integers, got " + describe(value) + kCorrupt);
  return {*begin, *end};
}

TensorInfo parse_entry(const std::string& name, const json& entry, std::uint64_t data_size, const std::string& source) {
  if (!entry.is_object())
    fail_tensor(
        source, name,
        "entry must be an object with dtype, shape and data_offsets, got " + std::string(entry.type_name()) + kCorrupt);
  TensorInfo info{name, parse_entry_dtype(require_key(entry, "dtype", source, name), source, name),
                  parse_entry_shape(require_key(entry, "shape", source, name), source, name)};
  std::tie(info.data_begin, info.data_end) =
      parse_entry_offsets(require_key(entry, "data_offsets", source, name), source, name);
  auto range = "data_offsets [" + std::to_string(info.data_begin) + ", " + std::to_string(info.data_end) + "]";
  if (info.data_begin > info.data_end) fail_tensor(source, name, range + " end before they begin" + kCorrupt);
  if (info.data_end > data_size)
    fail_tensor(source, name,
                range + " reach past the end of the data section (" + std::to_string(data_size) +
                    " bytes); the file is truncated or damaged: re-download or re-export it");
  std::uint64_t expected = tensor_nbytes(info.dtype, info.shape, name, source);
  if (expected != info.nbytes())
    fail_tensor(source, name,
                "shape " + dims_str(info.shape) + " of " + dtype_code(info.dtype) + " needs " +
                    std::to_string(expected) + " bytes but " + range + " span " + std::to_string(info.nbytes()) +
                    kCorrupt);
  return info;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& source) {
  if (!value.is_object()) fail_file(source, "\"__metadata__\" must be an object of strings" + kCorrupt);
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string())
      fail_file(source, "\"__metadata__\" value of " + printable(key) + " must be a string, got " +
                            std::string(text.type_name()) + kCorrupt);
    metadata[key] = text.get<std::string>();
  }
  return metadata;
}

// Sorted by begin, non-empty ranges must not share bytes (empty ones occupy nothing).
void check_no_overlap(const std::vector<TensorInfo>& tensors, const std::string& source) {
  const TensorInfo* furthest = nullptr;
  for (const TensorInfo& info : tensors) {
    if (info.nbytes() == 0) continue;
    if (furthest && info.data_begin < furthest->data_end)
      fail_tensor(source, info.name,
                  "bytes [" + std::to_string(info.data_begin) + ", " + std::to_string(info.data_end) +
                      ") overlap those of tensor " + printable(furthest->name) + kCorrupt);
    if (!furthest || info.data_end > furthest->data_end) furthest = &info;
  }
}

std::uint64_t read_u64_le(std::string_view bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

int layout_rank(DType dtype) {
  // Position in the Python package's dtype enumeration: it writes higher positions first.
  switch (dtype) {
    case DType::kBool:
      return 0;
    case DType::kU8:
      return 1;
    case DType::kF16:
      return 7;
    case DType::kBF16:
      return 8;
    case DType::kI32:
      return 9;
    case DType::kF32:
      return 11;
    case DType::kF64:
      return 12;
    case DType::kI64:
      return 13;
  }
  return 0;
}

void check_names_writable(const std::vector<TensorInfo>& tensors, const std::string& destination) {
  std::set<std::string_view> seen;
  for (const TensorInfo& info : tensors) {
    if (info.name == "__metadata__")
      fail("cannot write '" + destination + "': \"__metadata__\" is reserved by the format; rename the tensor");
    if (!seen.insert(info.name).second)
      fail("cannot write '" + destination + "': tensor name " + printable(info.name) +
           " appears twice; each tensor needs a unique name");
  }
}

}  // namespace

const char* dtype_code(DType dtype) { return name_of(kDTypeCodes, dtype, "?"); }

std::optional<DType> parse_dtype_code(std::string_view code) { return find_value(kDTypeCodes, code); }

std::uint64_t tensor_nbytes(DType dtype, const Dims& shape, const std::string& tensor, const std::string& source) {
  bool overflow = false;
  std::uint64_t count = 1;
  for (std::int64_t dim : shape) {
    if (dim < 0) fail_tensor(source, tensor, "shape " + dims_str(shape) + " has a negative dimension");
    count = checked_mul(count, static_cast<std::uint64_t>(dim), overflow);
  }
  std::uint64_t bytes = checked_mul(count, dtype_size(dtype), overflow);
  if (overflow) fail_tensor(source, tensor, "shape " + dims_str(shape) + " is too large to address" + kCorrupt);
  return bytes;
}

Header parse_header(std::string_view file, const std::string& source) {
  if (file.size() < 8)
    fail_file(source, "only " + std::to_string(file.size()) +
                          " bytes long, shorter than the 8-byte header length; the file is truncated or not "
                          "a safetensors file");
  std::uint64_t header_size = read_u64_le(file);
  if (header_size > kMaxHeaderBytes)
    fail_file(source, "header length " + std::to_string(header_size) + " exceeds the format's limit of " +
                          std::to_string(kMaxHeaderBytes) + " bytes; this is not a safetensors file or it is damaged");
  if (header_size > file.size() - 8)
    fail_file(source, "header length " + std::to_string(header_size) + " reaches past the end of the file (" +
                          std::to_string(file.size()) + " bytes); the file is truncated: re-download it");
  Header header;
  header.data_start = 8 + header_size;
  std::uint64_t data_size = file.size() - header.data_start;
  json root;
  try {
    root = parse_json_rejecting_duplicates(file.substr(8, header_size), [&](const auto& path, const auto& key) {
      if (path.empty()) fail_tensor(source, key, "the header names this tensor twice" + kCorrupt);
      if (path.front() == "__metadata__") fail_file(source, "\"__metadata__\" has key " + printable(key) + " twice");
      fail_tensor(source, path.front(), "entry has key " + printable(key) + " twice" + kCorrupt);
    });
  } catch (const json::exception& e) {
    fail_file(source, std::string("header is not valid JSON (") + e.what() + ")" + kCorrupt);
  }
  if (!root.is_object())
    fail_file(source, "header must be a JSON object, got " + std::string(root.type_name()) + kCorrupt);
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      header.metadata = parse_metadata(entry, source);
    } else {
      header.tensors.push_back(parse_entry(name, entry, data_size, source));
    }
  }
  std::sort(header.tensors.begin(), header.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::tie(a.data_begin, a.data_end, a.name) < std::tie(b.data_begin, b.data_end, b.name);
  });
  check_no_overlap(header.tensors, source);
  return header;
}

std::vector<TensorInfo> plan_layout(std::vector<TensorInfo> tensors, const std::string& destination) {
  check_names_writable(tensors, destination);
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    int rank_a = layout_rank(a.dtype), rank_b = layout_rank(b.dtype);
    return rank_a != rank_b ? rank_a > rank_b : a.name < b.name;
  });
  std::uint64_t offset = 0;
  for (TensorInfo& info : tensors) {
    std::uint64_t bytes = tensor_nbytes(info.dtype, info.shape, info.name, destination);
    if (__builtin_add_overflow(offset, bytes, &info.data_end) || info.data_end > kMaxDim)
      fail("cannot write '" + destination + "': the tensors add up to more bytes than a file can hold");
    info.data_begin = offset;
    offset = info.data_end;
  }
  return tensors;
}

std::string serialize_header(const std::vector<TensorInfo>& tensors, const std::map<std::string, std::string>& metadata,
                             const std::string& destination) {
  check_names_writable(tensors, destination);
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  if (!metadata.empty()) root["__metadata__"] = metadata;
  for (const TensorInfo& info : tensors) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = dtype_code(info.dtype);
    entry["shape"] = info.shape;
    entry["data_offsets"] = {info.data_begin, info.data_end};
    root[info.name] = std::move(entry);
  }
  std::string text;
  try {
    text = root.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    fail("cannot write '" + destination + "': a tensor name or metadata string is not valid UTF-8");
  }
  text.resize((text.size() + 7) / 8 * 8, ' ');
  if (text.size() > kMaxHeaderBytes)
    fail("cannot write '" + destination + "': the header would exceed the format's limit of " +
         std::to_string(kMaxHeaderBytes) + " bytes; split the tensors over several files");
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((static_cast<std::uint64_t>(text.size()) >> (8 * i)) & 0xFF);
  return bytes + text;
}

namespace {

[[noreturn]] void fail_index(const std::string& source, const std::string& what) {
  fail("safetensors index '" + source + "': " + what);
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::optional<std::uint64_t> parse_total_size(const json& metadata, const std::string& source) {
  if (!metadata.is_object()) fail_index(source, "\"metadata\" must be an object");
  auto found = metadata.find("total_size");
  if (found == metadata.end()) return std::nullopt;
  if (found->is_number_unsigned()) return found->get<std::uint64_t>();
  // Some exporters write the size as a float; accept it when it is a whole number.
  double value = found->is_number_float() ? found->get<double>() : -1.0;
  if (value >= 0 && value < 1.8e19 && value == static_cast<double>(static_cast<std::uint64_t>(value)))
    return static_cast<std::uint64_t>(value);
  fail_index(source, "\"metadata.total_size\" must be a non-negative integer, got " + describe(*found));
}

}  // namespace

ShardIndex parse_index(std::string_view json_text, const std::string& source) {
  json root;
  try {
    root = parse_json_rejecting_duplicates(json_text, [&](const auto& path, const auto& key) {
      if (!path.empty() && path.front() == "weight_map" && path.size() == 1)
        fail_index(source, "tensor " + printable(key) + " appears twice in \"weight_map\"");
      fail_index(source, "key " + printable(key) + " appears twice");
    });
  } catch (const json::exception& e) {
    fail_index(source, std::string("not valid JSON (") + e.what() + "); re-download or re-export the checkpoint");
  }
  if (!root.is_object()) fail_index(source, "must be a JSON object, got " + std::string(root.type_name()));
  ShardIndex index;
  if (auto metadata = root.find("metadata"); metadata != root.end() && !metadata->is_null())
    index.total_size = parse_total_size(*metadata, source);
  auto weight_map = root.find("weight_map");
  if (weight_map == root.end() || !weight_map->is_object())
    fail_index(source, "needs a \"weight_map\" object mapping tensor names to shard files");
  for (const auto& [name, shard] : weight_map->items()) {
    if (!shard.is_string() || !is_plain_file_name(shard.get<std::string>()))
      fail_index(source, "tensor " + printable(name) + " maps to " + describe(shard) +
                             "; shards must be named by plain file names in the index's folder");
    index.weight_map[name] = shard.get<std::string>();
  }
  return index;
}

std::string serialize_index(const ShardIndex& index) {
  json metadata = json::object();
  if (index.total_size) metadata["total_size"] = *index.total_size;
  json root = {{"metadata", metadata}, {"weight_map", index.weight_map}};
  return root.dump(2, ' ', false, json::error_handler_t::strict) + "\n";
}

}  // namespace zt::safetensors
