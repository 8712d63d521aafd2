// Tick marks a reader can take in at a glance: an axis spans whole multiples of a round step
// (1, 2 or 5 × 10^k), and each tick is labelled compactly ("2.5", "0.01", "1e-05", "200").
#pragma once

#include <string>
#include <vector>

namespace zt::train {

struct Axis {
  double step = 1;
  long long first = 0, last = 1;  // the axis runs from first × step to last × step

  double min() const { return static_cast<double>(first) * step; }
  double max() const { return static_cast<double>(last) * step; }
  std::vector<double> ticks() const;  // min(), min() + step, ..., max()
};

// The smallest run of about `intervals` round steps that covers [low, high]; low < high.
Axis nice_axis(double low, double high, int intervals = 5);

std::string tick_label(double value);

}  // namespace zt::train
