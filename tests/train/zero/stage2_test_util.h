// What the tests of ZeRO stage 2's gradient buckets share (gradient_buckets_test.cpp,
// zero_test.cpp, zero2_memory_gpu_test.cpp): the most a rank may stage at once, and a stack of
// layers whose gradients backward finishes one layer after another.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "tests/common/op_test_util.h"
#include "train/optim/optimizer.h"
#include "train/zero/zero_layout.h"

namespace zt::train {

// Two staging buffers and one reduction output, in `width` bytes an element: the two largest
// buckets and, reduce-scattered, the largest chunk.
inline std::int64_t staging_bound(const ZeroLayout& layout, std::int64_t width, bool reduce_scattered = true) {
  std::vector<std::int64_t> padded;
  std::int64_t chunk = 0;
  for (const ZeroBucket& bucket : layout.buckets) {
    padded.push_back(bucket.padded_numel);
    chunk = std::max(chunk, bucket.chunk());
  }
  std::sort(padded.rbegin(), padded.rend());
  return width * (padded[0] + (padded.size() > 1 ? padded[1] : 0) + (reduce_scattered ? chunk : 0));
}

// Layers of linear(width -> width) with bias and tanh: weight i normal (seeded 10 + i, standard
// deviation `weight_std`), bias i normal (seeded `bias_seed` + i); the weights decay, the
// biases do not.
class TanhLayers {
 public:
  struct Shape {
    std::int64_t layers = 0, width = 0;
    std::int64_t rows = 0;  // of each micro-batch's input
    DType dtype = DType::kF32;
    Device device = Device::cpu();
    double weight_std = 1.0;
    std::uint64_t bias_seed = 20;
  };

  explicit TanhLayers(const Shape& shape) : shape_(shape) {
    for (std::int64_t layer = 0; layer < shape.layers; ++layer) {
      const auto seed = static_cast<std::uint64_t>(layer);
      weights.emplace_back(
          testing::random_tensor({shape.width, shape.width}, 10 + seed, shape.dtype, 0.0, shape.weight_std)
              .to(shape.device),
          true, "w");
      biases.emplace_back(testing::random_tensor({shape.width}, shape.bias_seed + seed, shape.dtype).to(shape.device),
                          true, "b");
    }
  }

  std::vector<TrainableParameter> parameters() {
    std::vector<TrainableParameter> all;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      const std::string layer = std::to_string(i);
      all.push_back({std::string("w").append(layer), weights[i], true});
      all.push_back({std::string("b").append(layer), biases[i], false});
    }
    return all;
  }

  // The backward of the sum of squares of the output, on an input seeded by rank and micro-batch.
  void backward(int rank, int micro) {
    autograd::Variable h(testing::random_tensor({shape_.rows, shape_.width},
                                                100 + 10 * static_cast<std::uint64_t>(rank) + micro, shape_.dtype)
                             .to(shape_.device));
    for (std::size_t i = 0; i < weights.size(); ++i) h = autograd::tanh(autograd::linear(h, weights[i], biases[i]));
    autograd::sum(autograd::mul(h, h)).backward();
  }

  std::vector<autograd::Variable> weights, biases;

 private:
  Shape shape_;
};

}  // namespace zt::train
