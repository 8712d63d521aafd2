// A minimal PNG encoder for the loss-curve images: indexed colour, the palette being the
// image's distinct colours (at most 256) at the smallest bit depth that holds them, which
// keeps a few-colour chart at a quarter of RGB's size or less; no interlacing; the image data
// in stored (uncompressed) deflate blocks, so it needs no compression library. CRC-32 and
// Adler-32 are computed here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
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

std::uint32_t crc32(std::string_view bytes);  // ISO-HDLC, as PNG and zlib use
std::uint32_t adler32(std::string_view bytes);

// The PNG file's bytes; throws zt::Error when the image has more than 256 colours.
std::string encode_png(const RgbImage& image);
// Writes atomically; throws zt::Error naming `path` when it cannot.
void write_png(const std::string& path, const RgbImage& image);

}  // namespace zt::train
