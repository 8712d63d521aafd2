// Printing in torch's spirit: nested brackets, at most `max_per_dim` entries per dimension
// (first and last halves around "..."), dtype and device named when not the defaults.
#include <cmath>
#include <cstdio>

#include "tensor/tensor.h"

namespace zt {
namespace {

std::string format_value(double value, bool floating) {
  char buffer[32];
  if (!floating)
    std::snprintf(buffer, sizeof(buffer), "%lld", static_cast<long long>(value));
  else if (std::isnan(value))
    std::snprintf(buffer, sizeof(buffer), "nan");
  else if (std::isinf(value))
    std::snprintf(buffer, sizeof(buffer), value > 0 ? "inf" : "-inf");
  else
    std::snprintf(buffer, sizeof(buffer), "%.4f", value);
  return buffer;
}

void append_nested(std::string& out, const std::vector<double>& values, const Shape& shape, std::size_t d,
                   std::int64_t base, std::int64_t max_per_dim, bool floating) {
  if (d == shape.size()) {
    out += format_value(values[static_cast<std::size_t>(base)], floating);
    return;
  }
  std::int64_t inner = shape_numel(Shape(shape.begin() + static_cast<std::ptrdiff_t>(d) + 1, shape.end()));
  std::int64_t extent = shape[d];
  bool elide = extent > max_per_dim;
  std::int64_t head = elide ? max_per_dim / 2 : extent;
  out += "[";
  for (std::int64_t i = 0; i < extent; ++i) {
    if (elide && i == head) {
      out += "..., ";
      i = extent - max_per_dim / 2;
    }
    append_nested(out, values, shape, d + 1, base + i * inner, max_per_dim, floating);
    if (i + 1 < extent) out += d + 1 == shape.size() ? ", " : ",\n" + std::string(d + 8, ' ');
  }
  out += "]";
}

}  // namespace

std::string Tensor::str(std::int64_t max_per_dim) const {
  if (!defined()) return "tensor(undefined)";
  std::string out = "tensor(";
  append_nested(out, to_vector(), shape_, 0, 0, std::max<std::int64_t>(max_per_dim, 2), is_floating(dtype_));
  if (dtype_ != DType::kF32 && dtype_ != DType::kI64) out += std::string(", dtype=") + dtype_name(dtype_);
  if (!device().is_cpu()) out += ", device=" + device().str();
  if (numel() == 0) out += ", size=" + shape_str(shape_);
  return out + ")";
}

}  // namespace zt
