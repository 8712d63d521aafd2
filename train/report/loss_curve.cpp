#include "train/report/loss_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "train/report/bitmap_font.h"

namespace zt::train {
namespace {

constexpr int kWidth = 800, kHeight = 500;
constexpr Rgb kWhite{255, 255, 255}, kGrid{225, 225, 225};
constexpr Rgb kBlue{31, 119, 180}, kOrange{255, 127, 14}, kGreen{44, 160, 44};
constexpr Rgb kFaintBlue{177, 207, 229};  // kBlue at 35% over white: the raw losses behind the smoothed line

constexpr int kPad = 10;  // between the image's edge and what is next to it
constexpr int kLineGap = 4;
constexpr int kTickLength = 6;
constexpr int kLabelOffset = kTickLength + 4;  // from an axis line to its tick labels
constexpr int kSwatch = 24;                    // the legend's sample of a line
constexpr int kMarkerRadius = 3;

// Top to bottom: title, the legend when there is one, plot area, x tick labels, the x axis's name.
constexpr int kTitleTop = kPad;
constexpr int kLegendTop = kTitleTop + text_height(kTextScale) + kLineGap;
constexpr int kPlotTop = kTitleTop + text_height(kTextScale) + kPad;
constexpr int kBelowPlot = kLabelOffset + 2 * text_height(kTextScale) + kLineGap + kPad;

// An empty range would put every point on one edge; widen it so the data sits in the middle.
void widen_if_flat(double& low, double& high) {
  if (high > low) return;
  const double pad = low == 0.0 ? 1.0 : std::abs(low) * 0.05;
  low -= pad, high += pad;
}

int widest_label(const Axis& axis) {
  int widest = 0;
  for (double value : axis.ticks()) widest = std::max(widest, text_width(tick_label(value), kTextScale));
  return widest;
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
  for (double value : axes.x.ticks()) {
    const int x = axes.pixel_x(value);
    for (int y = axes.top; y <= axes.bottom; ++y) image.set(x, y, kGrid);
    for (int t = 1; t <= kTickLength; ++t) image.set(x, axes.bottom + t, kInk);
  }
  for (double value : axes.y.ticks()) {
    const int y = axes.pixel_y(value);
    for (int x = axes.left; x <= axes.right; ++x) image.set(x, y, kGrid);
    for (int t = 1; t <= kTickLength; ++t) image.set(axes.left - t, y, kInk);
  }
  for (int x = axes.left; x <= axes.right; ++x) image.set(x, axes.bottom, kInk);
  for (int y = axes.top; y <= axes.bottom; ++y) image.set(axes.left, y, kInk);
}

void draw_series(RgbImage& image, const PlotAxes& axes, const Series& s) {
  for (std::size_t i = 0; i < s.x.size(); ++i) {
    const int x = axes.pixel_x(s.x[i]), y = axes.pixel_y(s.y[i]);
    if (i > 0) line(image, axes.pixel_x(s.x[i - 1]), axes.pixel_y(s.y[i - 1]), x, y, s.colour);
    if (s.markers || s.x.size() == 1) square(image, x, y, kMarkerRadius, s.colour);
  }
}

// A short stretch of each series' line (and marker) before its name.
void draw_swatches(RgbImage& image, const std::vector<Series>& series, const std::vector<TextLabel>& legend) {
  constexpr int kLowercaseMiddleRow = 4;
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const int right = legend[i].x - kLineGap, left = right - kSwatch;
    const int y = legend[i].y + kLowercaseMiddleRow * kTextScale;
    line(image, left, y, right, y, series[i].colour);
    if (series[i].markers) square(image, (left + right) / 2, y, kMarkerRadius, series[i].colour);
  }
}

}  // namespace

int PlotAxes::pixel_x(double value) const {
  return left + static_cast<int>(std::lround((value - x.min()) / (x.max() - x.min()) * (right - left)));
}

int PlotAxes::pixel_y(double value) const {
  return bottom - static_cast<int>(std::lround((value - y.min()) / (y.max() - y.min()) * (bottom - top)));
}

PlotAxes fit_axes(const std::vector<Series>& series, int width, int height) {
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  bool first = true;
  for (const Series& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      x_min = first ? s.x[i] : std::min(x_min, s.x[i]);
      x_max = first ? s.x[i] : std::max(x_max, s.x[i]);
      y_min = first ? s.y[i] : std::min(y_min, s.y[i]);
      y_max = first ? s.y[i] : std::max(y_max, s.y[i]);
      first = false;
    }
  widen_if_flat(x_min, x_max);
  widen_if_flat(y_min, y_max);
  PlotAxes axes{.x = nice_axis(x_min, x_max), .y = nice_axis(y_min, y_max)};
  axes.left = kPad + widest_label(axes.y) + kLabelOffset;
  axes.top = kPlotTop + (series.size() > 1 ? kLegendTop - kTitleTop : 0);
  // The last x label is centred on the right edge; half of it hangs into the margin.
  axes.right = width - std::max(2 * kPad, text_width(tick_label(axes.x.max()), kTextScale) / 2 + kPad);
  axes.bottom = height - kBelowPlot;
  return axes;
}

TextLabel title_label(const std::string& title, int width) {
  return {title, (width - text_width(title, kTextScale)) / 2, kTitleTop};
}

std::vector<TextLabel> axis_labels(const PlotAxes& axes) {
  std::vector<TextLabel> labels;
  for (double value : axes.x.ticks()) {
    const std::string text = tick_label(value);
    labels.push_back({text, axes.pixel_x(value) - text_width(text, kTextScale) / 2, axes.bottom + kLabelOffset});
  }
  for (double value : axes.y.ticks()) {
    const std::string text = tick_label(value);
    // Digits stand on the baseline, so centring their rows centres the label on its tick.
    labels.push_back({text, axes.left - kLabelOffset - text_width(text, kTextScale),
                      axes.pixel_y(value) - kGlyphRows * kTextScale / 2});
  }
  const std::string name = "step";
  labels.push_back({name, (axes.left + axes.right - text_width(name, kTextScale)) / 2,
                    axes.bottom + kLabelOffset + text_height(kTextScale) + kLineGap});
  return labels;
}

std::vector<TextLabel> legend_labels(const std::vector<Series>& series, int width) {
  if (series.size() < 2) return {};
  std::vector<TextLabel> labels(series.size());
  int right = width - kPad;
  for (std::size_t i = series.size(); i-- > 0;) {
    labels[i] = {series[i].name, right - text_width(series[i].name, kTextScale), kLegendTop};
    right = labels[i].x - kLineGap - kSwatch - 2 * kPad;
  }
  return labels;
}

RgbImage draw_plot(const std::vector<Series>& series, const std::string& title, int width, int height) {
  RgbImage image(width, height, kWhite);
  const PlotAxes axes = fit_axes(series, width, height);
  draw_frame(image, axes);
  for (const Series& s : series) draw_series(image, axes, s);
  const std::vector<TextLabel> legend = legend_labels(series, width);
  draw_swatches(image, series, legend);
  std::vector<TextLabel> labels = axis_labels(axes);
  labels.push_back(title_label(title, width));
  labels.insert(labels.end(), legend.begin(), legend.end());
  for (const TextLabel& label : labels) draw_text(image, label.x, label.y, label.text, kTextScale, kInk);
  return image;
}

Series series_from_log(const nlohmann::json& log_history, const std::string& key, Rgb colour) {
  Series series;
  series.colour = colour;
  for (const nlohmann::json& entry : log_history)
    if (entry.contains(key) && entry.contains("step") && entry[key].is_number() &&
        std::isfinite(entry[key].get<double>())) {
      series.x.push_back(entry["step"].get<double>());
      series.y.push_back(entry[key].get<double>());
    }
  return series;
}

std::vector<double> debiased_moving_average(const std::vector<double>& values, double weight) {
  const bool constant = std::all_of(values.begin(), values.end(), [&](double v) { return v == values.front(); });
  if (constant || weight <= 0.0) return values;
  std::vector<double> smoothed;
  double average = 0.0, weight_power = 1.0;
  for (double value : values) {
    average = average * weight + (1.0 - weight) * value;
    weight_power *= weight;
    smoothed.push_back(average / (1.0 - weight_power));
  }
  return smoothed;
}

void write_loss_curves(const std::string& output_dir, const nlohmann::json& log_history) {
  const std::filesystem::path dir(output_dir);
  Series raw = series_from_log(log_history, "loss", kFaintBlue);
  if (raw.x.empty()) return;
  raw.name = "train";
  Series smoothed{.name = "smoothed", .x = raw.x, .y = debiased_moving_average(raw.y), .colour = kBlue};
  Series eval = series_from_log(log_history, "eval_loss", kOrange);
  eval.name = "eval", eval.markers = true;
  // Drawn in this order: the smoothed line over the raw one, the evaluations over both.
  std::vector<Series> losses = {raw, smoothed};
  if (!eval.x.empty()) losses.push_back(eval);
  write_png((dir / "training_loss.png").string(), draw_plot(losses, "training loss", kWidth, kHeight));
  write_png((dir / "training_lr.png").string(),
            draw_plot({series_from_log(log_history, "learning_rate", kGreen)}, "learning rate", kWidth, kHeight));
}

}  // namespace zt::train
