// What the 4-bit GEMV and GEMM tests share: their CPU reference (x times the weight the CPU
// dequantizes, summed in double) and the tolerance a float sum in another order explains; and
// one-hot rows of x, whose products are single weights, exactly.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/quant/quantized_weight.h"
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

// `body(type, nested, stored, dtype)` for every 4-bit format of a weight (NF4 and FP4, nested
// statistics or not, stored in float32, bfloat16 or float16) with x in each of `dtypes`, up to
// the first fatal failure.
template <typename Body>
void for_each_format(const std::vector<DType>& dtypes, const Body& body) {
  for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4})
    for (bool nested : {true, false})
      for (DType stored : {DType::kF32, DType::kBF16, DType::kF16})
        for (DType dtype : dtypes) {
          body(type, nested, stored, dtype);
          if (::testing::Test::HasFatalFailure()) return;
        }
}

// A [n, k] weight (normal, 0.02; one block with an outlier, whose other values quantize to few
// codes) quantized from `stored` as `type`, nested or not, in blocks of 64; and its values
// dequantized as `stored`, then rounded to `dtype`: what one-hot rows must pick.
struct QuantizedCase {
  Quant4Weight weight;
  std::vector<double> dense;
};

inline QuantizedCase quantized_with_outlier(std::int64_t n, std::int64_t k, Quant4Type type, bool nested, DType stored,
                                            DType dtype) {
  Tensor w = Tensor::normal({n, k}, 3, 0, 0.0, 0.02, DType::kF32);
  w.data<float>()[k + 7] = 9.0f;
  Quant4Weight weight = quantize_weight(w.to(stored), {.type = type, .double_quant = nested, .blocksize = 64}, "w");
  std::vector<double> dense = weight.dequantize(stored).to(dtype).to(DType::kF32).to_vector();
  return {std::move(weight), std::move(dense)};
}

// x with one 1 a row, at column (37 m + 5) % k of row m, zeros elsewhere: the rows of y are
// then single weights, with no sum to reorder.
struct OneHotRows {
  std::vector<double> x;              // [rows, k]
  std::vector<std::int64_t> columns;  // the 1's column of each row
};

inline OneHotRows one_hot_rows(std::int64_t rows, std::int64_t k) {
  OneHotRows hot{std::vector<double>(static_cast<std::size_t>(rows * k), 0.0),
                 std::vector<std::int64_t>(static_cast<std::size_t>(rows))};
  for (std::int64_t m = 0; m < rows; ++m) {
    hot.columns[static_cast<std::size_t>(m)] = (37 * m + 5) % k;
    hot.x[static_cast<std::size_t>(m * k + hot.columns[static_cast<std::size_t>(m)])] = 1.0;
  }
  return hot;
}

// y of one-hot rows ([rows, n]) is the dequantized weight ([n, k]) at each row's column, exactly.
inline void expect_picked_weights(const std::vector<double>& y, const std::vector<double>& dense, const OneHotRows& hot,
                                  std::int64_t n, std::int64_t k, const std::string& what) {
  for (std::size_t m = 0; m < hot.columns.size(); ++m)
    for (std::int64_t j = 0; j < n; ++j)
      ASSERT_EQ(y[m * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)],
                dense[static_cast<std::size_t>(j * k + hot.columns[m])])
          << what << " y[" << m << ", " << j << "]";
}

}  // namespace zt::models::quant
