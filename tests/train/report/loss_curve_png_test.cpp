// The loss-curve images: the PNG encoder's bytes are read back here by a decoder of the
// test's own (chunk CRCs, IHDR, palette, the zlib stream inflated by zlib, filter bytes,
// packed indices); the curves land where their data says, tick values are round, and the
// title and labels are drawn glyph for glyph where the layout puts them.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/error.h"
#include "train/report/axis_ticks.h"
#include "train/report/bitmap_font.h"
#include "train/report/loss_curve.h"
#include "train/report/png_writer.h"

namespace zt::train {
namespace {
namespace fs = std::filesystem;

constexpr Rgb kWhite{255, 255, 255}, kBlue{31, 119, 180}, kOrange{255, 127, 14};

std::uint32_t read_u32(const std::string& bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes.at(at + i));
  return value;
}

// Bit by bit, as the PNG specification defines the chunk CRC.
std::uint32_t reference_crc32(std::string_view bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

struct DecodedPng {
  std::uint32_t width = 0, height = 0;
  int bit_depth = 0;
  std::vector<Rgb> palette;
  std::vector<Rgb> pixels;  // row by row, looked up in the palette
};

// The zlib stream's contents, which must be exactly `size` bytes; zlib checks the framing and
// the Adler-32 of what it inflates.
std::string inflate(const std::string& idat, std::size_t size) {
  std::string raw(size + 1, '\0');  // one byte more, so a longer stream is caught
  uLongf raw_size = raw.size();
  EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_size, reinterpret_cast<const Bytef*>(idat.data()),
                       idat.size()),
            Z_OK);
  EXPECT_EQ(raw_size, size);
  raw.resize(raw_size);
  return raw;
}

// Reads each row's indices one bit at a time, most significant first.
void unpack_rows(const std::string& raw, DecodedPng& out) {
  const std::size_t row = (out.width * out.bit_depth + 7) / 8;
  ASSERT_EQ(raw.size(), (row + 1) * out.height);
  for (std::uint32_t y = 0; y < out.height; ++y) {
    EXPECT_EQ(raw[y * (row + 1)], '\0') << "row " << y << " filter";
    const std::string bytes = raw.substr(y * (row + 1) + 1, row);
    std::size_t bit = 0;
    for (std::uint32_t x = 0; x < out.width; ++x) {
      unsigned index = 0;
      for (int k = 0; k < out.bit_depth; ++k, ++bit)
        index = index << 1 | ((static_cast<unsigned char>(bytes[bit / 8]) >> (7 - bit % 8)) & 1u);
      ASSERT_LT(index, out.palette.size()) << "pixel " << x << ", " << y;
      out.pixels.push_back(out.palette[index]);
    }
  }
}

// Checks every chunk's CRC, the header, the palette and the zlib stream's framing as it goes.
DecodedPng decode(const std::string& png) {
  DecodedPng out;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
  std::string idat;
  std::vector<std::string> types;
  for (std::size_t at = 8; at < png.size();) {
    const std::uint32_t length = read_u32(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string data = png.substr(at + 8, length);
    EXPECT_EQ(read_u32(png, at + 8 + length), reference_crc32(png.substr(at + 4, 4 + length))) << type;
    if (type == "IHDR") {
      out.width = read_u32(data, 0), out.height = read_u32(data, 4), out.bit_depth = data.at(8);
      EXPECT_TRUE(std::set<int>({1, 2, 4, 8}).contains(out.bit_depth)) << out.bit_depth;
      EXPECT_EQ(data.substr(9), std::string("\x03\x00\x00\x00", 4)) << "palette, deflate, no filter set, no interlace";
    }
    if (type == "PLTE") {
      EXPECT_TRUE(idat.empty()) << "PLTE must come before IDAT";
      EXPECT_EQ(length % 3, 0u);
      for (std::size_t i = 0; i + 2 < data.size(); i += 3)
        out.palette.push_back({static_cast<std::uint8_t>(data[i]), static_cast<std::uint8_t>(data[i + 1]),
                               static_cast<std::uint8_t>(data[i + 2])});
      EXPECT_LE(out.palette.size(), std::size_t{1} << out.bit_depth);
    }
    if (type == "IDAT") idat += data;
    types.push_back(type);
    at += 12 + length;
  }
  EXPECT_EQ(types.front(), "IHDR");
  EXPECT_EQ(types.back(), "IEND");
  EXPECT_FALSE(out.palette.empty());
  const std::size_t row = (out.width * out.bit_depth + 7) / 8;
  unpack_rows(inflate(idat, (row + 1) * out.height), out);
  return out;
}

Rgb pixel(const DecodedPng& png, int x, int y) {
  return png.pixels.at(static_cast<std::size_t>(y) * png.width + static_cast<std::size_t>(x));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Every pixel of the label's box: ink where the font's bitmap has a dot, background elsewhere.
void expect_label_drawn(const DecodedPng& png, const TextLabel& label) {
  constexpr int kAdvance = kGlyphColumns + 1;
  int mismatches = 0, ink = 0;
  for (std::size_t i = 0; i < label.text.size(); ++i)
    for (int row = 0; row < kLineRows; ++row)
      for (int column = 0; column < kAdvance; ++column) {
        const bool dot = glyph_ink(label.text[i], column, row);
        ink += dot;
        for (int dy = 0; dy < kTextScale; ++dy)
          for (int dx = 0; dx < kTextScale; ++dx) {
            const int x = label.x + (static_cast<int>(i) * kAdvance + column) * kTextScale + dx;
            const int y = label.y + row * kTextScale + dy;
            mismatches += pixel(png, x, y) != (dot ? kInk : kWhite);
          }
      }
  EXPECT_EQ(mismatches, 0) << "label '" << label.text << "' at " << label.x << ", " << label.y;
  EXPECT_GT(ink, 0) << label.text;
}

const TextLabel& find_label(const std::vector<TextLabel>& labels, const std::string& text) {
  const auto found = std::find_if(labels.begin(), labels.end(), [&](const TextLabel& l) { return l.text == text; });
  EXPECT_NE(found, labels.end()) << "no label '" << text << "'";
  return found == labels.end() ? labels.front() : *found;
}

TEST(Png, ChunkChecksumOfTheTestDecoderMatchesItsStandardCheckValue) {
  EXPECT_EQ(reference_crc32("123456789"), 0xCBF43926u);
}

TEST(Png, FilesAreCompressed) {
  // A chart's long runs of one colour deflate to a small fraction of the packed pixels.
  RgbImage image(800, 500, kWhite);
  for (int x = 100; x < 700; ++x) image.set(x, 250 + x % 50, kBlue);
  const std::string png = encode_png(image);
  const std::size_t packed_pixels = (800 * 2 / 8 + 1) * 500;
  EXPECT_LT(png.size(), packed_pixels / 10) << png.size() << " bytes";
  const DecodedPng decoded = decode(png);
  EXPECT_EQ(pixel(decoded, 300, 250 + 300 % 50), kBlue);
}

TEST(Png, ImageComesBackPixelForPixel) {
  // 400 x 700 at 2 bits a pixel: more than one 64 KiB window of pixel data.
  RgbImage image(400, 700, {1, 2, 3});
  image.set(0, 0, {255, 0, 0});
  image.set(399, 699, {0, 255, 0});
  image.set(-1, 5, {9, 9, 9});  // outside: ignored
  const DecodedPng png = decode(encode_png(image));
  ASSERT_EQ(png.width, 400u);
  ASSERT_EQ(png.height, 700u);
  EXPECT_EQ(png.bit_depth, 2);
  EXPECT_EQ(png.palette.size(), 3u);
  EXPECT_EQ(pixel(png, 0, 0), (Rgb{255, 0, 0}));
  EXPECT_EQ(pixel(png, 399, 699), (Rgb{0, 255, 0}));
  EXPECT_EQ(pixel(png, 100, 70), (Rgb{1, 2, 3}));
}

TEST(Png, BitDepthIsTheSmallestThatHoldsThePalette) {
  // An odd width, so rows end in a partly filled byte.
  const std::vector<std::pair<int, int>> depth_for_colours = {{1, 1}, {2, 1},  {3, 2},  {4, 2},
                                                              {5, 4}, {16, 4}, {17, 8}, {256, 8}};
  for (const auto& [colours, depth] : depth_for_colours) {
    RgbImage image(13, 21, {0, 7, 200});  // colour 0
    for (int c = 1; c < colours; ++c) image.set(c % 13, c / 13, {static_cast<std::uint8_t>(c), 7, 200});
    const DecodedPng png = decode(encode_png(image));
    EXPECT_EQ(png.bit_depth, depth) << colours << " colours";
    EXPECT_EQ(png.palette.size(), static_cast<std::size_t>(colours));
    for (int y = 0; y < 21; ++y)
      for (int x = 0; x < 13; ++x) {
        ASSERT_EQ(pixel(png, x, y), image.at(x, y)) << x << ", " << y;
      }
  }
  RgbImage too_many(17, 17, {0, 0, 0});
  for (int c = 0; c < 257; ++c)
    too_many.set(c % 17, c / 17, {static_cast<std::uint8_t>(c % 256), static_cast<std::uint8_t>(c / 256), 0});
  EXPECT_THROW(encode_png(too_many), Error);
}

TEST(AxisTicks, StepsAreRoundAndTheAxisCoversTheData) {
  for (const auto& [low, high] : std::vector<std::pair<double, double>>{
           {0.4, 3.0}, {5, 60}, {8e-5, 5e-3}, {0, 2e-5}, {-7.3, 12.1}, {1.9, 2.1}, {10, 100000}, {2.31, 2.34}}) {
    const Axis axis = nice_axis(low, high);
    const double mantissa = axis.step / std::pow(10.0, std::floor(std::log10(axis.step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9)
        << low << ".." << high << ": step " << axis.step;
    const double rounding = 1e-9 * axis.step;  // a tick on a data bound may miss it by that
    EXPECT_LE(axis.min(), low + rounding);
    EXPECT_GE(axis.max(), high - rounding);
    EXPECT_LT(low - axis.min(), axis.step) << "a whole step below the data";
    EXPECT_LT(axis.max() - high, axis.step) << "a whole step above the data";
    EXPECT_GE(axis.ticks().size(), 4u);
    EXPECT_LE(axis.ticks().size(), 10u);
    std::set<std::string> labels;
    for (double tick : axis.ticks()) labels.insert(tick_label(tick));
    EXPECT_EQ(labels.size(), axis.ticks().size()) << "two ticks read the same";
  }
  std::vector<std::string> labels;
  for (double tick : nice_axis(0.4, 3.0).ticks()) labels.push_back(tick_label(tick));
  EXPECT_EQ(labels, (std::vector<std::string>{"0", "0.5", "1", "1.5", "2", "2.5", "3"}));
  EXPECT_EQ(tick_label(0.01), "0.01");
  EXPECT_EQ(tick_label(1e-5), "1e-05");
  EXPECT_EQ(tick_label(200), "200");
  EXPECT_EQ(tick_label(3 * 0.1), "0.3");
}

TEST(BitmapFont, EveryCharacterOfTheLabelsHasItsOwnGlyph) {
  std::string used = "training loss learning rate step train smoothed eval";
  for (double value : {-1.5, 0.25, 1e-05, 3e+07, 6789.0}) used += tick_label(value);
  for (char c : used) EXPECT_TRUE(c == ' ' || has_glyph(c)) << "'" << c << "'";
  EXPECT_FALSE(has_glyph(' '));
  std::set<std::vector<bool>> shapes;
  const std::string all = "0123456789.-+aegilnoprstvdhm";
  for (char c : all) {
    std::vector<bool> dots;
    for (int row = 0; row < kLineRows; ++row)
      for (int column = 0; column < kGlyphColumns; ++column) dots.push_back(glyph_ink(c, column, row));
    EXPECT_TRUE(shapes.insert(dots).second) << "'" << c << "' looks like another glyph";
  }
  // Digits fill the rows above the descent; g and p reach into it.
  for (char c : std::string("0123456789")) {
    EXPECT_FALSE(glyph_ink(c, 0, kGlyphRows) || glyph_ink(c, 2, kLineRows - 1)) << c;
    bool top = false, bottom = false;
    for (int column = 0; column < kGlyphColumns; ++column)
      top |= glyph_ink(c, column, 0), bottom |= glyph_ink(c, column, kGlyphRows - 1);
    EXPECT_TRUE(top && bottom) << c;
  }
  EXPECT_TRUE(glyph_ink('p', 0, kLineRows - 1));
}

TEST(BitmapFont, DigitIsDrawnDotForDotAtItsPlace) {
  constexpr int kScale = 3, kLeft = 11, kTop = 4;
  RgbImage image(40, 40, kWhite);
  draw_text(image, kLeft, kTop, "8", kScale, kInk);
  EXPECT_EQ(text_width("8", kScale), kGlyphColumns * kScale);
  EXPECT_EQ(text_width("80", kScale), (2 * kGlyphColumns + 1) * kScale);
  int ink = 0;
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 40; ++x) {
      const bool inside = x >= kLeft && y >= kTop;
      const bool dot = inside && glyph_ink('8', (x - kLeft) / kScale, (y - kTop) / kScale);
      ink += dot;
      ASSERT_EQ(image.at(x, y), dot ? kInk : kWhite) << x << ", " << y;
    }
  EXPECT_GT(ink, 0);
}

TEST(LossCurve, EveryDataPointLiesOnItsCurve) {
  Series train{.name = "train", .x = {1, 2, 3, 4, 5}, .y = {3.0, 2.5, 1.0, 1.2, 0.4}, .colour = kBlue};
  Series eval{.name = "eval", .x = {2, 4}, .y = {2.0, 1.6}, .colour = kOrange, .markers = true};
  const std::vector<Series> series = {train, eval};
  const PlotAxes axes = fit_axes(series, 400, 300);
  const DecodedPng png = decode(encode_png(draw_plot(series, "training loss", 400, 300)));
  for (const Series& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i)
      EXPECT_EQ(pixel(png, axes.pixel_x(s.x[i]), axes.pixel_y(s.y[i])), s.colour) << "point " << i;
  // The axes run from tick to tick around the data; the background stays white away from it.
  EXPECT_EQ(axes.pixel_x(axes.x.min()), axes.left);
  EXPECT_EQ(axes.pixel_y(axes.y.max()), axes.top);
  EXPECT_EQ(axes.pixel_y(axes.y.min()), axes.bottom);
  EXPECT_LE(axes.y.min(), 0.4);
  EXPECT_GE(axes.y.max(), 3.0);
  EXPECT_EQ(pixel(png, axes.pixel_x(1.2), axes.pixel_y(0.6)), kWhite);
}

TEST(LossCurve, TitleTickLabelsAndLegendAreDrawnWhereTheLayoutSays) {
  Series train{.name = "train", .x = {10, 20, 30, 40, 50, 60}, .y = {3.1, 2.5, 1.9, 1.2, 0.9, 0.45}, .colour = kBlue};
  Series eval{.name = "eval", .x = {30, 60}, .y = {2.0, 1.1}, .colour = kOrange, .markers = true};
  const std::vector<Series> series = {train, eval};
  const DecodedPng png = decode(encode_png(draw_plot(series, "training loss", 800, 500)));
  const PlotAxes axes = fit_axes(series, 800, 500);
  const std::vector<TextLabel> labels = axis_labels(axes);

  const TextLabel title = title_label("training loss", 800);
  expect_label_drawn(png, title);
  EXPECT_LE(title.y + text_height(kTextScale), axes.top) << "the title sits above the plot";
  EXPECT_NEAR(title.x + text_width(title.text, kTextScale) / 2, 400, 1) << "centred";

  const TextLabel y_label = find_label(labels, "2.5");
  expect_label_drawn(png, y_label);
  EXPECT_LT(y_label.x + text_width(y_label.text, kTextScale), axes.left) << "left of the y axis";
  EXPECT_NEAR(y_label.y + kGlyphRows * kTextScale / 2, axes.pixel_y(2.5), 1) << "level with its tick";

  const TextLabel x_label = find_label(labels, "40");
  expect_label_drawn(png, x_label);
  EXPECT_GT(x_label.y, axes.bottom) << "below the x axis";
  EXPECT_NEAR(x_label.x + text_width(x_label.text, kTextScale) / 2, axes.pixel_x(40), 1) << "centred on its tick";

  const TextLabel name = find_label(labels, "step");
  expect_label_drawn(png, name);
  EXPECT_GE(name.y, x_label.y + text_height(kTextScale)) << "below the tick labels";

  const std::vector<TextLabel> legend = legend_labels(series, 800);
  ASSERT_EQ(legend.size(), 2u);
  for (const TextLabel& entry : legend) expect_label_drawn(png, entry);
  EXPECT_EQ(legend[0].text, "train");
  EXPECT_EQ(legend[1].text, "eval");
  EXPECT_TRUE(legend_labels({train}, 800).empty());
}

TEST(LossCurve, LogHistoryBecomesBothSmallImages) {
  const fs::path dir = fs::temp_directory_path() / "zt_loss_curve_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json history = nlohmann::json::parse(R"([
    {"loss": 2.0, "learning_rate": 1e-4, "step": 5}, {"eval_loss": 1.9, "step": 5},
    {"loss": 1.0, "learning_rate": 5e-5, "step": 10}, {"train_loss": 1.5, "step": 10}])");
  history.push_back({{"loss", std::nan("")}, {"step", 15}});  // a diverged step is left out
  EXPECT_EQ(series_from_log(history, "loss", {}).x, (std::vector<double>{5, 10}));
  write_loss_curves(dir.string(), history);
  for (const char* name : {"training_loss.png", "training_lr.png"}) {
    const std::string bytes = read_file(dir / name);
    ASSERT_FALSE(bytes.empty()) << name;
    EXPECT_LT(bytes.size(), 300u * 1000u) << name;
    const DecodedPng png = decode(bytes);
    EXPECT_EQ(png.width, 800u) << name;
    EXPECT_EQ(png.height, 500u) << name;
    EXPECT_LE(png.bit_depth, 4) << name;
  }
  fs::remove_all(dir);
}

// TensorBoard's smoothing, by hand with weight 0.6: the averages are 1.2, 1.12 and 1.472,
// divided by 1 - 0.6, 1 - 0.36 and 1 - 0.216.
TEST(LossCurve, SmoothingIsTensorBoardsDebiasedMovingAverage) {
  const std::vector<double> smoothed = debiased_moving_average({3.0, 1.0, 2.0});
  ASSERT_EQ(smoothed.size(), 3u);
  EXPECT_DOUBLE_EQ(smoothed[0], 3.0);
  EXPECT_DOUBLE_EQ(smoothed[1], 1.75);
  EXPECT_NEAR(smoothed[2], 1.472 / 0.784, 1e-12);
  // Weight 0.5: 1 / 0.5, then 2.5 / 0.75.
  const std::vector<double> half = debiased_moving_average({2.0, 4.0}, 0.5);
  EXPECT_DOUBLE_EQ(half[0], 2.0);
  EXPECT_NEAR(half[1], 2.5 / 0.75, 1e-12);
  EXPECT_EQ(debiased_moving_average({1.5, 1.5, 1.5}), (std::vector<double>{1.5, 1.5, 1.5}));
  EXPECT_EQ(debiased_moving_average({4.0, 1.0}, 0.0), (std::vector<double>{4.0, 1.0}));
  EXPECT_TRUE(debiased_moving_average({}).empty());
}

// The written image: the raw losses faint, their smoothed line solid blue, the evaluations
// orange, each where its data says, and a legend naming the three below the title.
TEST(LossCurve, TheLossImageShowsRawLossesTheirSmoothingAndEvaluations) {
  const fs::path dir = fs::temp_directory_path() / "zt_loss_curve_smoothing_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<double> steps = {1, 2, 3, 4, 5, 6, 7, 8}, losses = {4, 1, 4, 1, 4, 1, 4, 1};
  nlohmann::json history = nlohmann::json::array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    history.push_back({{"loss", losses[i]}, {"learning_rate", 1e-4}, {"step", steps[i]}});
    if (steps[i] == 4 || steps[i] == 8)
      history.push_back({{"eval_loss", steps[i] == 4 ? 0.5 : 0.6}, {"step", steps[i]}});
  }
  write_loss_curves(dir.string(), history);
  const DecodedPng png = decode(read_file(dir / "training_loss.png"));
  fs::remove_all(dir);

  constexpr Rgb kFaintBlue{177, 207, 229};
  const std::vector<double> smoothed = debiased_moving_average(losses);
  const std::vector<Series> series = {{.name = "train", .x = steps, .y = losses, .colour = kFaintBlue},
                                      {.name = "smoothed", .x = steps, .y = smoothed, .colour = kBlue},
                                      {.name = "eval", .x = {4, 8}, .y = {0.5, 0.6}, .colour = kOrange}};
  const PlotAxes axes = fit_axes(series, 800, 500);
  EXPECT_EQ(pixel(png, axes.pixel_x(3), axes.pixel_y(4)), kFaintBlue) << "a raw loss";
  EXPECT_EQ(pixel(png, axes.pixel_x(2), axes.pixel_y(1)), kFaintBlue) << "a raw loss";
  for (int step : {2, 5, 7})
    EXPECT_EQ(pixel(png, axes.pixel_x(step), axes.pixel_y(smoothed[step - 1])), kBlue) << "smoothed, step " << step;
  EXPECT_EQ(pixel(png, axes.pixel_x(4), axes.pixel_y(0.5)), kOrange) << "an evaluation";
  EXPECT_EQ(pixel(png, axes.pixel_x(8), axes.pixel_y(0.6)), kOrange) << "an evaluation";

  const std::vector<TextLabel> legend = legend_labels(series, 800);
  ASSERT_EQ(legend.size(), 3u);
  for (const TextLabel& entry : legend) expect_label_drawn(png, entry);
  const TextLabel title = title_label("training loss", 800);
  EXPECT_GE(legend.front().y, title.y + text_height(kTextScale)) << "the legend has a line of its own";
  EXPECT_LE(legend.front().y + text_height(kTextScale), axes.top) << "above the plot";
}

}  // namespace
}  // namespace zt::train
