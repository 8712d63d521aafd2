#include <cmath>

#include "runtime/error.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

void require_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  ZT_REQUIRE(a.shape() == b.shape(),
             std::string(what) + ": shapes differ, " + shape_str(a.shape()) + " vs " + shape_str(b.shape()));
}

}  // namespace

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  require_same_shape(a, b, "allclose");
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) return false;
    if (std::abs(x[i] - y[i]) > atol + rtol * std::abs(y[i])) return false;
  }
  return true;
}

double relative_error(const Tensor& a, const Tensor& b) {
  require_same_shape(a, b, "relative_error");
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff += (x[i] - y[i]) * (x[i] - y[i]);
    norm += y[i] * y[i];
  }
  if (norm == 0.0) return diff == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(diff / norm);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  require_same_shape(a, b, "max_abs_diff");
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

}  // namespace zt
