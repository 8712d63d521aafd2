// PNG images of the loss curves, encoded by libpng: indexed colour, the palette being the
// image's distinct colours (at most 256) at the smallest bit depth that holds them, which
// keeps a few-colour chart at a quarter of RGB's size or less before deflate compresses it;
// no interlacing, no row filters (they do not help palette indices).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt::train {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

class RgbImage {
 public:
  RgbImage(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  // (0, 0) is the top left; points outside the image are ignored, so shapes may overhang.
  void set(int x, int y, Rgb colour);
  Rgb at(int x, int y) const;
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }  // rows of r, g, b

 private:
  int width_, height_;
  std::vector<std::uint8_t> bytes_;
};

// The PNG file's bytes; throws zt::Error when the image has more than 256 colours.
std::string encode_png(const RgbImage& image);
// Writes atomically; throws zt::Error naming `path` when it cannot.
void write_png(const std::string& path, const RgbImage& image);

}  // namespace zt::train
