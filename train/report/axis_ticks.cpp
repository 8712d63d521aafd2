#include "train/report/axis_ticks.h"

#include <cmath>
#include <cstdio>

namespace zt::train {
namespace {

double round_step(double rough) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  const double mantissa = rough / magnitude;
  if (mantissa < 1.5) return magnitude;
  if (mantissa < 3.5) return 2 * magnitude;
  if (mantissa < 7.5) return 5 * magnitude;
  return 10 * magnitude;
}

}  // namespace

std::vector<double> Axis::ticks() const {
  std::vector<double> values;
  // Multiples of the step, not sums, so a tick at zero is exactly "0".
  for (long long k = first; k <= last; ++k) values.push_back(static_cast<double>(k) * step);
  return values;
}

Axis nice_axis(double low, double high, int intervals) {
  Axis axis;
  axis.step = round_step((high - low) / intervals);
  // A data bound that already sits on a tick must not gain a whole extra step from rounding.
  constexpr double kSlack = 1e-9;
  axis.first = static_cast<long long>(std::floor(low / axis.step + kSlack));
  axis.last = static_cast<long long>(std::ceil(high / axis.step - kSlack));
  return axis;
}

std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace zt::train
