// Gradient checks by central finite differences in float64 on the CPU: of an op's inputs, and of
// a model's parameters; and two models' parameter gradients compared.
//
// The loss is L(inputs) = sum(forward(inputs) * probe) for a fixed random `probe`, so the
// analytic gradient of each input is backward(inputs, probe), compared element by element
// with (L(x + eps) - L(x - eps)) / (2 eps).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace zt::testing {

using Forward = std::function<Tensor(const std::vector<Tensor>& inputs)>;
using Backward = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const Tensor& grad_output)>;

inline double probe_loss(const Forward& forward, const std::vector<Tensor>& inputs, const Tensor& probe) {
  std::vector<double> out = forward(inputs).to_vector(), weights = probe.to_vector();
  double loss = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) loss += out[i] * weights[i];
  return loss;
}

// `differentiable[k]` says whether input k gets checked (indices, labels and the like do not).
inline void expect_gradients_match(const std::string& what, const Forward& forward, const Backward& backward,
                                   std::vector<Tensor> inputs, const std::vector<bool>& differentiable,
                                   double eps = 1e-6, double tolerance = 1e-6, std::uint64_t seed = 99) {
  for (Tensor& input : inputs) input = input.contiguous().clone();
  Tensor output = forward(inputs);
  Tensor probe = Tensor::normal(output.shape(), seed, 0, 0.0, 1.0, DType::kF64);
  std::vector<Tensor> analytic = backward(inputs, probe);
  ASSERT_EQ(analytic.size(), inputs.size()) << what << ": backward must return one gradient per input";
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!differentiable[k]) continue;
    ASSERT_TRUE(analytic[k].defined()) << what << ": no gradient for input " << k;
    ASSERT_EQ(analytic[k].shape(), inputs[k].shape()) << what << ": gradient " << k << " has the wrong shape";
    std::vector<double> grad = analytic[k].to_vector();
    double* x = inputs[k].data<double>();
    for (std::int64_t j = 0; j < inputs[k].numel(); ++j) {
      double saved = x[j];
      x[j] = saved + eps;
      double plus = probe_loss(forward, inputs, probe);
      x[j] = saved - eps;
      double minus = probe_loss(forward, inputs, probe);
      x[j] = saved;
      double numeric = (plus - minus) / (2 * eps);
      ASSERT_NEAR(grad[j], numeric, tolerance * std::max(1.0, std::abs(numeric)))
          << what << ": input " << k << " element " << j;
    }
  }
}

// A whole model's gradients, as backward left them on its parameters: of each parameter whose
// name contains one of `parts`, every (numel / `spread`)-th element against central differences
// of `objective` (which must not record gradients); the number of elements compared.
template <typename Model>
int expect_parameter_gradients_match(const Model& model, const std::vector<std::string>& parts, std::int64_t spread,
                                     const std::function<double()>& objective) {
  const double h = 1e-6;
  int checked = 0;
  for (const auto& p : model.named_parameters()) {
    if (std::none_of(parts.begin(), parts.end(),
                     [&](const std::string& part) { return p.name.find(part) != std::string::npos; }))
      continue;
    const std::vector<double> grad = p.variable.grad().to_vector();
    Tensor value = p.variable.data();
    for (std::int64_t i = 0; i < value.numel(); i += std::max<std::int64_t>(1, value.numel() / spread)) {
      double& element = value.data<double>()[i];
      const double saved = element;
      element = saved + h;
      const double up = objective();
      element = saved - h;
      const double down = objective();
      element = saved;
      EXPECT_NEAR(grad[static_cast<std::size_t>(i)], (up - down) / (2 * h), 1e-6) << p.name << "[" << i << "]";
      ++checked;
    }
  }
  return checked;
}

// The gradients backward left on the trainable parameters of `got` equal those of the same
// names in `want`, each element within `tolerance` relative (absolute below 1); the number of
// parameters compared.
template <typename Model>
int expect_same_parameter_gradients(const Model& got, const Model& want, double tolerance) {
  int compared = 0;
  for (const auto& p : got.named_parameters()) {
    if (!p.variable.requires_grad()) continue;
    const std::vector<double> expected = want.parameter(p.name).grad().to_vector();
    const std::vector<double> have = p.variable.grad().to_vector();
    EXPECT_EQ(have.size(), expected.size()) << p.name;
    if (have.size() != expected.size()) continue;
    for (std::size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(have[i], expected[i], tolerance * std::max(1.0, std::abs(expected[i]))) << p.name << "[" << i << "]";
    ++compared;
  }
  return compared;
}

}  // namespace zt::testing
