// Helpers shared by the op and autograd tests: random inputs, error capture, the stored shape
// of a matmul operand, and the GPU-against-CPU comparison every CUDA test makes (poisoned
// outputs, no NaN, relative error).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "tensor/tensor.h"

namespace zt::testing {

inline Tensor random_tensor(const Shape& shape, std::uint64_t seed, DType dtype = DType::kF64, double mean = 0.0,
                            double std_dev = 1.0) {
  return Tensor::normal(shape, seed, 0, mean, std_dev, dtype);
}

// The message of the zt::Error that f throws, or "no error".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// The stored shape of a matmul operand [rows, cols] used transposed or not, batched when
// batch > 0.
inline Shape stored_operand_shape(std::int64_t batch, std::int64_t rows, std::int64_t cols, bool transpose) {
  Shape shape = transpose ? Shape{cols, rows} : Shape{rows, cols};
  if (batch > 0) shape.insert(shape.begin(), batch);
  return shape;
}

inline void expect_mentions(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

// New GPU tensors start as NaN bytes while a test of this fixture runs, so an output a
// kernel forgets to write cannot pass.
class PoisonedGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { set_poison_new_device_tensors(true); }
  void TearDown() override { set_poison_new_device_tensors(false); }
};

// The bar for a CUDA op against its CPU reference.
inline double gpu_tolerance(DType dtype) { return dtype == DType::kF32 ? 1e-5 : 1e-2; }

// A CPU tensor and its GPU copy, so both paths start from identical values.
struct CpuGpuPair {
  Tensor cpu, gpu;
};
inline CpuGpuPair random_pair(const Shape& shape, std::uint64_t seed, DType dtype, double mean = 0.0,
                              double std_dev = 1.0) {
  Tensor cpu = random_tensor(shape, seed, dtype, mean, std_dev);
  return {cpu, cpu.to(Device::cuda())};
}

inline void expect_no_nan(const Tensor& t, const std::string& what) {
  std::vector<double> values = t.to_vector();
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_FALSE(std::isnan(values[i])) << what << ": NaN at " << i;
}

// What a GPU result must be before its values can be compared with the CPU reference's.
inline void assert_gpu_result_like(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(gpu.defined()) << what;
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
}

inline void expect_gpu_matches(const Tensor& gpu, const Tensor& cpu, double tolerance, const std::string& what) {
  ASSERT_NO_FATAL_FAILURE(assert_gpu_result_like(gpu, cpu, what));
  expect_no_nan(gpu, what);
  EXPECT_LE(relative_error(gpu, cpu), tolerance) << what;
}

// expect_gpu_matches with the largest absolute difference bounded instead of the relative
// error: for a reference with no scale to be relative to, such as one of all zeros.
inline void expect_gpu_near(const Tensor& gpu, const Tensor& cpu, double abs_tolerance, const std::string& what) {
  ASSERT_NO_FATAL_FAILURE(assert_gpu_result_like(gpu, cpu, what));
  expect_no_nan(gpu, what);
  EXPECT_LE(max_abs_diff(gpu, cpu), abs_tolerance) << what;
}

}  // namespace zt::testing
