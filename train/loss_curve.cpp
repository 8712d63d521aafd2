#include "train/loss_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace zt::train {
namespace {

constexpr int kWidth = 800, kHeight = 500;
constexpr int kTicks = 5;
constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225};
constexpr Rgb kBlue{31, 119, 180}, kOrange{255, 127, 14}, kGreen{44, 160, 44};

// An empty range would put every point on one edge; widen it so the data sits in the middle.
void widen_if_flat(double& low, double& high) {
  if (high > low) return;
  const double pad = low == 0.0 ? 1.0 : std::abs(low) * 0.05;
  low -= pad, high += pad;
}

void square(RgbImage& image, int x, int y, int radius, Rgb colour) {
  for (int dy = -radius; dy <= radius; ++dy)
    for (int dx = -radius; dx <= radius; ++dx) image.set(x + dx, y + dy, colour);
}

// Bresenham's line, two pixels thick so it stays visible next to the grid.
void line(RgbImage& image, int x0, int y0, int x1, int y1, Rgb colour) {
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int step_x = x0 < x1 ? 1 : -1, step_y = y0 < y1 ? 1 : -1;
  int error = dx + dy;
  while (true) {
    image.set(x0, y0, colour), image.set(x0 + 1, y0, colour), image.set(x0, y0 + 1, colour);
    if (x0 == x1 && y0 == y1) return;
    const int doubled = 2 * error;
    if (doubled >= dy) error += dy, x0 += step_x;
    if (doubled <= dx) error += dx, y0 += step_y;
  }
}

void draw_frame(RgbImage& image, const PlotAxes& axes) {
  for (int i = 0; i <= kTicks; ++i) {
    const int x = axes.left + (axes.right - axes.left) * i / kTicks;
    const int y = axes.bottom - (axes.bottom - axes.top) * i / kTicks;
    for (int yy = axes.top; yy <= axes.bottom; ++yy) image.set(x, yy, kGrid);
    for (int xx = axes.left; xx <= axes.right; ++xx) image.set(xx, y, kGrid);
    for (int t = 1; t <= 6; ++t) image.set(x, axes.bottom + t, kBlack), image.set(axes.left - t, y, kBlack);
  }
  for (int x = axes.left; x <= axes.right; ++x) image.set(x, axes.bottom, kBlack);
  for (int y = axes.top; y <= axes.bottom; ++y) image.set(axes.left, y, kBlack);
}

}  // namespace

int PlotAxes::pixel_x(double x) const {
  return left + static_cast<int>(std::lround((x - x_min) / (x_max - x_min) * (right - left)));
}

int PlotAxes::pixel_y(double y) const {
  return bottom - static_cast<int>(std::lround((y - y_min) / (y_max - y_min) * (bottom - top)));
}

PlotAxes fit_axes(const std::vector<Series>& series, int width, int height) {
  PlotAxes axes;
  axes.left = 50, axes.top = 20, axes.right = width - 20, axes.bottom = height - 40;
  bool first = true;
  for (const Series& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      axes.x_min = first ? s.x[i] : std::min(axes.x_min, s.x[i]);
      axes.x_max = first ? s.x[i] : std::max(axes.x_max, s.x[i]);
      axes.y_min = first ? s.y[i] : std::min(axes.y_min, s.y[i]);
      axes.y_max = first ? s.y[i] : std::max(axes.y_max, s.y[i]);
      first = false;
    }
  widen_if_flat(axes.x_min, axes.x_max);
  widen_if_flat(axes.y_min, axes.y_max);
  return axes;
}

RgbImage draw_plot(const std::vector<Series>& series, int width, int height) {
  RgbImage image(width, height, kWhite);
  const PlotAxes axes = fit_axes(series, width, height);
  draw_frame(image, axes);
  for (const Series& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      const int x = axes.pixel_x(s.x[i]), y = axes.pixel_y(s.y[i]);
      if (i > 0) line(image, axes.pixel_x(s.x[i - 1]), axes.pixel_y(s.y[i - 1]), x, y, s.colour);
      if (s.markers || s.x.size() == 1) square(image, x, y, 3, s.colour);
    }
  return image;
}

Series series_from_log(const nlohmann::json& log_history, const std::string& key, Rgb colour) {
  Series series{.colour = colour};
  for (const nlohmann::json& entry : log_history)
    if (entry.contains(key) && entry.contains("step") && entry[key].is_number()) {
      series.x.push_back(entry["step"].get<double>());
      series.y.push_back(entry[key].get<double>());
    }
  return series;
}

void write_loss_curves(const std::string& output_dir, const nlohmann::json& log_history) {
  const std::filesystem::path dir(output_dir);
  Series loss = series_from_log(log_history, "loss", kBlue);
  if (loss.x.empty()) return;
  Series eval = series_from_log(log_history, "eval_loss", kOrange);
  eval.markers = true;
  std::vector<Series> losses = {loss};
  if (!eval.x.empty()) losses.push_back(eval);
  write_png((dir / "training_loss.png").string(), draw_plot(losses, kWidth, kHeight));
  write_png((dir / "training_lr.png").string(),
            draw_plot({series_from_log(log_history, "learning_rate", kGreen)}, kWidth, kHeight));
}

}  // namespace zt::train
