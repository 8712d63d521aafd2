// The loss-curve images: the PNG encoder's bytes are read back here by an independent
// decoder (chunk CRCs, IHDR, stored deflate blocks, Adler-32, filter bytes), and the curves
// land where their data says.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "train/loss_curve.h"
#include "train/png_writer.h"

namespace zt::train {
namespace {
namespace fs = std::filesystem;

std::uint32_t read_u32(const std::string& bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes.at(at + i));
  return value;
}

// Bit by bit, unlike the encoder's table.
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
  std::string pixels;  // rows of r, g, b with the filter bytes removed
};

// Checks every chunk's CRC and the zlib stream's framing as it goes.
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
      out.width = read_u32(data, 0), out.height = read_u32(data, 4);
      EXPECT_EQ(data.substr(8), std::string("\x08\x02\x00\x00\x00", 5));
    }
    if (type == "IDAT") idat += data;
    types.push_back(type);
    at += 12 + length;
  }
  EXPECT_EQ(types.front(), "IHDR");
  EXPECT_EQ(types.back(), "IEND");
  EXPECT_EQ((static_cast<unsigned char>(idat[0]) * 256 + static_cast<unsigned char>(idat[1])) % 31, 0);
  std::string raw;
  std::size_t at = 2;
  for (bool last = false; !last;) {
    const auto header = static_cast<unsigned char>(idat.at(at));
    last = header & 1;
    EXPECT_EQ(header >> 1, 0) << "not a stored block";
    const std::uint32_t len = static_cast<unsigned char>(idat[at + 1]) | static_cast<unsigned char>(idat[at + 2]) << 8;
    const std::uint32_t nlen = static_cast<unsigned char>(idat[at + 3]) | static_cast<unsigned char>(idat[at + 4]) << 8;
    EXPECT_EQ(len ^ 0xFFFFu, nlen);
    raw += idat.substr(at + 5, len);
    at += 5 + len;
  }
  EXPECT_EQ(read_u32(idat, at), adler32(raw));
  EXPECT_EQ(at + 4, idat.size());
  const std::size_t row = out.width * 3;
  EXPECT_EQ(raw.size(), (row + 1) * out.height);
  for (std::uint32_t y = 0; y < out.height; ++y) {
    EXPECT_EQ(raw[y * (row + 1)], '\0') << "row " << y << " filter";
    out.pixels += raw.substr(y * (row + 1) + 1, row);
  }
  return out;
}

Rgb pixel(const DecodedPng& png, int x, int y) {
  const std::size_t i = (static_cast<std::size_t>(y) * png.width + static_cast<std::size_t>(x)) * 3;
  return {static_cast<std::uint8_t>(png.pixels[i]), static_cast<std::uint8_t>(png.pixels[i + 1]),
          static_cast<std::uint8_t>(png.pixels[i + 2])};
}

TEST(Png, ChecksumsMatchTheirStandardCheckValues) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(adler32("Wikipedia"), 0x11E60398u);
  EXPECT_EQ(adler32(""), 1u);
}

TEST(Png, ImageComesBackPixelForPixel) {
  // 200 x 150 x 3 bytes: more than one stored block of 65535.
  RgbImage image(200, 150, {1, 2, 3});
  image.set(0, 0, {255, 0, 0});
  image.set(199, 149, {0, 255, 0});
  image.set(-1, 5, {9, 9, 9});  // outside: ignored
  const DecodedPng png = decode(encode_png(image));
  ASSERT_EQ(png.width, 200u);
  ASSERT_EQ(png.height, 150u);
  EXPECT_EQ(pixel(png, 0, 0), (Rgb{255, 0, 0}));
  EXPECT_EQ(pixel(png, 199, 149), (Rgb{0, 255, 0}));
  EXPECT_EQ(pixel(png, 100, 70), (Rgb{1, 2, 3}));
}

TEST(LossCurve, EveryDataPointLiesOnItsCurve) {
  const Rgb blue{31, 119, 180}, orange{255, 127, 14};
  Series train{.x = {1, 2, 3, 4, 5}, .y = {3.0, 2.5, 1.0, 1.2, 0.4}, .colour = blue};
  Series eval{.x = {2, 4}, .y = {2.0, 1.6}, .colour = orange, .markers = true};
  const std::vector<Series> series = {train, eval};
  const PlotAxes axes = fit_axes(series, 400, 300);
  const DecodedPng png = decode(encode_png(draw_plot(series, 400, 300)));
  for (const Series& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i)
      EXPECT_EQ(pixel(png, axes.pixel_x(s.x[i]), axes.pixel_y(s.y[i])), s.colour) << "point " << i;
  // The extremes span the plot area; the background stays white away from the data.
  EXPECT_EQ(axes.pixel_x(1), axes.left);
  EXPECT_EQ(axes.pixel_y(3.0), axes.top);
  EXPECT_EQ(axes.pixel_y(0.4), axes.bottom);
  EXPECT_EQ(pixel(png, axes.pixel_x(1.2), axes.pixel_y(0.6)), (Rgb{255, 255, 255}));
}

TEST(LossCurve, LogHistoryBecomesBothImages) {
  const fs::path dir = fs::temp_directory_path() / "zt_loss_curve_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const nlohmann::json history = nlohmann::json::parse(R"([
    {"loss": 2.0, "learning_rate": 1e-4, "step": 5}, {"eval_loss": 1.9, "step": 5},
    {"loss": 1.0, "learning_rate": 5e-5, "step": 10}, {"train_loss": 1.5, "step": 10}])");
  EXPECT_EQ(series_from_log(history, "loss", {}).x, (std::vector<double>{5, 10}));
  write_loss_curves(dir.string(), history);
  for (const char* name : {"training_loss.png", "training_lr.png"}) {
    std::ifstream in(dir / name, std::ios::binary);
    ASSERT_TRUE(in) << name;
    std::stringstream bytes;
    bytes << in.rdbuf();
    const DecodedPng png = decode(bytes.str());
    EXPECT_EQ(png.width, 800u) << name;
    EXPECT_EQ(png.height, 500u) << name;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace zt::train
