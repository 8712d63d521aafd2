// The single-device optimizer's gradients, held only while a step needs them.
//
// A flat gradient buffer for every trainable parameter, kept from one step to the next, sits
// beside the forward's activations at their peak although nothing is in it then: a step's
// gradients arrive during backward, layer by layer, as those activations are freed. Here the
// buffer is cut into segments, one per module (the spans whose names share everything up to
// their first number: a decoder layer's parameters, `model.layers.12.`), or per parameter
// where its name has no number (the embedding, the final norm). A segment is allocated, zeroed,
// when a gradient first reaches one of its spans (a GEMM asking for its weight's sink, a hook
// adding a gradient) and released when the step is done, so the forward's peak holds no
// gradient but the fused loss head's and the backward's holds those of the layers behind it.
// PyTorch's `zero_grad(set_to_none=True)` gives the same peak. Within a segment the spans lie
// as in the flat partition, so a layer's gate and up sinks are adjacent for their joined GEMM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace zt::train {

struct GradientSpan {
  std::string name;  // the parameter's: the segments follow it
  std::int64_t offset = 0;
  std::int64_t numel = 0;
};

class GradientSegments {
 public:
  // Spans in partition order, laid end to end from offset 0 up to `numel` (padding between
  // them stays in their segment).
  GradientSegments(const std::vector<GradientSpan>& spans, std::int64_t numel, DType dtype, Device device);

  // Span `i`'s gradient, [numel] in its segment, which is allocated zeroed first when not held.
  Tensor span(std::size_t i);
  // How many segments are held now, and their bytes.
  std::size_t held_count() const;
  std::int64_t held_bytes() const;
  std::size_t segment_count() const { return segments_.size(); }
  // Drops every segment: the next gradient starts from zero.
  void release();

 private:
  struct Segment {
    std::int64_t begin = 0, numel = 0;
    Tensor values;  // undefined while not held
  };
  std::vector<GradientSpan> spans_;
  std::vector<std::size_t> segment_of_;  // per span
  std::vector<Segment> segments_;
  DType dtype_;
  Device device_;
};

// The module a parameter belongs to, by name: everything up to and including its first
// dotted component that is a number ("model.layers.12.mlp.up_proj.weight" ->
// "model.layers.12."); the whole name when none is.
std::string gradient_module_of(const std::string& name);

}  // namespace zt::train
