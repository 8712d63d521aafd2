// The curves of a finished run as images, drawn without any plotting library:
// output_dir/training_loss.png (every logged training loss as a faint blue line, the same
// smoothed as TensorBoard smooths it in solid blue over it, and the evaluation loss in orange
// with square markers when the run evaluated, with a legend) and output_dir/training_lr.png
// (learning rate against step, green). Each has a title, the x-axis name "step", and grid lines
// at round tick values labelled on both axes (docs/TRAINING.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/report/axis_ticks.h"
#include "train/report/png_writer.h"

namespace zt::train {

constexpr Rgb kInk{0, 0, 0};   // axes, tick marks and text
constexpr int kTextScale = 2;  // a font dot is kTextScale × kTextScale pixels

struct Series {
  std::string name;  // in the legend, drawn when there is more than one series
  std::vector<double> x, y;
  Rgb colour;
  bool markers = false;  // a square at every point, for sparse series such as evaluations
};

// Where data lands in the image: the plot area spans [left, right] × [top, bottom] pixels.
struct PlotAxes {
  Axis x, y;
  int left = 0, top = 0, right = 0, bottom = 0;

  int pixel_x(double value) const;
  int pixel_y(double value) const;
};

// A line of text; (x, y) is its top left.
struct TextLabel {
  std::string text;
  int x = 0, y = 0;
};

// The margins leave room for the labels below.
PlotAxes fit_axes(const std::vector<Series>& series, int width, int height);
TextLabel title_label(const std::string& title, int width);
// Every tick's value beside it, and the x axis's name.
std::vector<TextLabel> axis_labels(const PlotAxes& axes);
// The series' names on a line of their own between the title and the plot, at the right, each
// after a sample of its line; none for one series.
std::vector<TextLabel> legend_labels(const std::vector<Series>& series, int width);
RgbImage draw_plot(const std::vector<Series>& series, const std::string& title, int width, int height);

// The series named `key` (e.g. "loss", "eval_loss", "learning_rate") of a log_history; a
// value that is not finite has no place on the axes and is left out.
Series series_from_log(const nlohmann::json& log_history, const std::string& key, Rgb colour);

// TensorBoard's smoothing of a scalar curve: an exponential moving average with `weight` on
// the past, divided by 1 - weight^n after n points so that the start is not pulled towards 0
// (a plain EMA begins at (1 - weight) times the first value). A constant series stays as it
// is; `weight` is in [0, 1), 0 leaving every value as it is.
constexpr double kDefaultSmoothing = 0.6;  // TensorBoard's default
std::vector<double> debiased_moving_average(const std::vector<double>& values, double weight = kDefaultSmoothing);

// Writes training_loss.png and training_lr.png into output_dir; nothing when nothing was
// logged.
void write_loss_curves(const std::string& output_dir, const nlohmann::json& log_history);

}  // namespace zt::train
