// The curves of a finished run as images, drawn without any plotting library:
// output_dir/training_loss.png (training loss against step, blue; evaluation loss, orange
// with square markers, when the run evaluated) and output_dir/training_lr.png (learning
// rate against step, green). Axes start at the data's minimum, with five evenly spaced tick
// marks and grid lines on each; there are no text labels (docs/TRAINING.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/png_writer.h"

namespace zt::train {

struct Series {
  std::vector<double> x, y;
  Rgb colour;
  bool markers = false;  // a square at every point, for sparse series such as evaluations
};

// Where data lands in the image: the plot area spans [left, right] × [top, bottom] pixels.
struct PlotAxes {
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  int left = 0, top = 0, right = 0, bottom = 0;

  int pixel_x(double x) const;
  int pixel_y(double y) const;
};

PlotAxes fit_axes(const std::vector<Series>& series, int width, int height);
RgbImage draw_plot(const std::vector<Series>& series, int width, int height);

// The series named `key` (e.g. "loss", "eval_loss", "learning_rate") of a log_history.
Series series_from_log(const nlohmann::json& log_history, const std::string& key, Rgb colour);

// Writes training_loss.png and training_lr.png into output_dir; nothing when nothing was
// logged.
void write_loss_curves(const std::string& output_dir, const nlohmann::json& log_history);

}  // namespace zt::train
