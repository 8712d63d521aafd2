#include "models/model_inputs.h"

#include <vector>

#include "runtime/error.h"

namespace zt::models {
namespace {

void require_integer_vector(const char* name, const Tensor& t) {
  ZT_REQUIRE(t.defined(), std::string("model forward: ") + name + " is undefined");
  ZT_REQUIRE(t.dtype() == DType::kI64 || t.dtype() == DType::kI32,
             std::string("model forward: ") + name + " must be int32 or int64, got " + dtype_name(t.dtype()));
  ZT_REQUIRE(t.dim() == 1, std::string("model forward: ") + name + " must be 1-D, got shape " + shape_str(t.shape()));
}

}  // namespace

PackedShape check_packed_inputs(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens) {
  require_integer_vector("input_ids", input_ids);
  require_integer_vector("positions", positions);
  require_integer_vector("cu_seqlens", cu_seqlens);
  PackedShape shape;
  shape.tokens = input_ids.size(0);
  ZT_REQUIRE(shape.tokens > 0, "model forward: input_ids is empty");
  ZT_REQUIRE(positions.size(0) == shape.tokens, "model forward: positions has " + std::to_string(positions.size(0)) +
                                                    " entries for " + std::to_string(shape.tokens) + " input_ids");
  std::vector<double> cu = cu_seqlens.to_vector();
  ZT_REQUIRE(cu.size() >= 2 && cu.front() == 0.0 && cu.back() == static_cast<double>(shape.tokens),
             "model forward: cu_seqlens must run from 0 to the token count " + std::to_string(shape.tokens) + ", got " +
                 cu_seqlens.str());
  for (std::size_t i = 1; i < cu.size(); ++i) {
    ZT_REQUIRE(cu[i] >= cu[i - 1],
               "model forward: cu_seqlens decreases at entry " + std::to_string(i) + ": " + cu_seqlens.str());
    shape.max_seqlen = std::max(shape.max_seqlen, static_cast<std::int64_t>(cu[i] - cu[i - 1]));
  }
  shape.sequences = static_cast<std::int64_t>(cu.size()) - 1;
  return shape;
}

void check_sliding_window(const ModelConfig& config, const PackedShape& shape, std::int64_t cached) {
  const std::int64_t longest = shape.max_seqlen + cached;
  for (std::size_t layer = 0; layer < config.sliding_layers.size(); ++layer) {
    if (!config.sliding_layers[layer] || longest <= config.sliding_window) continue;
    fail("a sequence of " + std::to_string(longest) + " tokens exceeds the sliding window of " +
         std::to_string(config.sliding_window) + " tokens that " + config.source + " enables from layer " +
         std::to_string(layer) + "; zerotune's attention has no sliding window: keep sequences within " +
         std::to_string(config.sliding_window) + " tokens or set use_sliding_window false");
  }
}

}  // namespace zt::models
