#include "train/optim/gradient_segments.h"

#include <cctype>

#include "runtime/error.h"

namespace zt::train {

std::string gradient_module_of(const std::string& name) {
  std::size_t start = 0;
  while (start < name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    bool number = end > start;
    for (std::size_t i = start; i < end; ++i) number = number && std::isdigit(static_cast<unsigned char>(name[i]));
    if (number) return name.substr(0, end + 1);
    start = end + 1;
  }
  return name;
}

GradientSegments::GradientSegments(const std::vector<GradientSpan>& spans, std::int64_t numel, DType dtype,
                                   Device device)
    : spans_(spans), dtype_(dtype), device_(device) {
  std::string module;
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    const GradientSpan& s = spans_[i];
    ZT_REQUIRE(s.offset >= (segments_.empty() ? 0 : segments_.back().begin + segments_.back().numel) &&
                   s.offset + s.numel <= numel,
               "gradient segments: span '" + s.name + "' is out of order or beyond the partition");
    const std::string mine = gradient_module_of(s.name);
    if (segments_.empty() || mine != module) {
      // A new segment starts where the last one ended, so padding before a span is its own.
      const std::int64_t begin = segments_.empty() ? 0 : segments_.back().begin + segments_.back().numel;
      segments_.push_back({begin, 0, Tensor()});
      module = mine;
    }
    segments_.back().numel = s.offset + s.numel - segments_.back().begin;
    segment_of_.push_back(segments_.size() - 1);
  }
  if (!segments_.empty()) segments_.back().numel = numel - segments_.back().begin;
}

Tensor GradientSegments::span(std::size_t i) {
  ZT_REQUIRE(i < spans_.size(), "gradient segments: no span " + std::to_string(i));
  Segment& segment = segments_[segment_of_[i]];
  if (!segment.values.defined()) segment.values = Tensor::zeros({segment.numel}, dtype_, device_);
  return segment.values.narrow(0, spans_[i].offset - segment.begin, spans_[i].numel);
}

std::size_t GradientSegments::held_count() const {
  std::size_t held = 0;
  for (const Segment& segment : segments_) held += segment.values.defined() ? 1 : 0;
  return held;
}

std::int64_t GradientSegments::held_bytes() const {
  std::int64_t bytes = 0;
  for (const Segment& segment : segments_)
    if (segment.values.defined()) bytes += static_cast<std::int64_t>(segment.values.nbytes());
  return bytes;
}

void GradientSegments::release() {
  for (Segment& segment : segments_) segment.values = Tensor();
}

}  // namespace zt::train
