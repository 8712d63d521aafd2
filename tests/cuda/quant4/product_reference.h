// What the 4-bit GEMV and GEMM tests share: their CPU reference (x times the weight the CPU
// dequantizes, summed in double) and the tolerance a float sum in another order explains.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace zt::models::quant {

// Half the spacing of dtype's numbers relative to a value: the rounding of y.
inline double rounding(DType dtype) {
  return dtype == DType::kBF16  ? std::ldexp(1.0, -8)
         : dtype == DType::kF16 ? std::ldexp(1.0, -11)
                                : std::ldexp(1.0, -24);
}

// y from the GPU against sum_k x[m, k] * w[n, k] (+ bias) in double. The GPU sums the same
// products in float in another order: each partial sum may be off by `add_error` of its size
// (2^-24 for a float add rounded to nearest), so the difference is at most
// (K + 1) * add_error * sum_k |x w| (the bound on a float sum of K terms), plus the rounding
// of y to its dtype.
inline void expect_near_reference(const Tensor& y_gpu, const Tensor& x, const Tensor& dense, const Tensor& bias,
                                  const std::string& what, double add_error = std::ldexp(1.0, -24)) {
  const std::vector<double> y = y_gpu.to(Device::cpu(), DType::kF32).to_vector();
  const std::vector<double> xs = x.to(Device::cpu(), DType::kF32).to_vector();
  const std::vector<double> ws = dense.to(Device::cpu(), DType::kF32).to_vector();
  const std::vector<double> bs =
      bias.defined() ? bias.to(Device::cpu(), DType::kF32).to_vector() : std::vector<double>();
  const std::int64_t rows = x.size(0), k = x.size(1), n = dense.size(0);
  ASSERT_EQ(y.size(), static_cast<std::size_t>(rows * n)) << what;
  for (std::int64_t m = 0; m < rows; ++m)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = bs.empty() ? 0.0 : bs[static_cast<std::size_t>(j)], magnitude = std::fabs(sum);
      for (std::int64_t i = 0; i < k; ++i) {
        const double product = xs[static_cast<std::size_t>(m * k + i)] * ws[static_cast<std::size_t>(j * k + i)];
        sum += product;
        magnitude += std::fabs(product);
      }
      const double order = static_cast<double>(k + 1) * add_error * magnitude;
      const double tolerance = order + rounding(y_gpu.dtype()) * (std::fabs(sum) + order);
      ASSERT_NEAR(y[static_cast<std::size_t>(m * n + j)], sum, tolerance) << what << " y[" << m << ", " << j << "]";
    }
}

}  // namespace zt::models::quant
