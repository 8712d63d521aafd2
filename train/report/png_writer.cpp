#include "train/report/png_writer.h"

#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace zt::train {
namespace {

// The image's distinct colours in order of first appearance, and each pixel's index into them.
struct IndexedPixels {
  std::vector<Rgb> palette;
  std::vector<std::uint8_t> indices;
};

IndexedPixels index_colours(const RgbImage& image) {
  IndexedPixels out;
  const std::vector<std::uint8_t>& bytes = image.bytes();
  out.indices.reserve(bytes.size() / 3);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const Rgb colour{bytes[i], bytes[i + 1], bytes[i + 2]};
    auto found = std::find(out.palette.begin(), out.palette.end(), colour);
    if (found == out.palette.end()) {
      ZT_REQUIRE(out.palette.size() < 256,
                 "PNG: the image has more than 256 colours; the encoder writes indexed colour only");
      out.palette.push_back(colour);
      found = out.palette.end() - 1;
    }
    out.indices.push_back(static_cast<std::uint8_t>(found - out.palette.begin()));
  }
  return out;
}

// 1, 2, 4 or 8: PNG's palette depths.
int bit_depth(std::size_t colours) {
  int bits = 1;
  while ((std::size_t{1} << bits) < colours) bits *= 2;
  return bits;
}

// libpng reports failures by calling this and never returning: it jumps back to the
// setjmp in encode_indexed(), which throws with the message kept here.
struct WriteState {
  std::string* out;
  char message[256];
};

void on_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<WriteState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void on_write(png_structp png, png_bytep data, png_size_t size) {
  static_cast<WriteState*>(png_get_io_ptr(png))->out->append(reinterpret_cast<const char*>(data), size);
}

void on_flush(png_structp) {}

// Only plain data lives across the setjmp, so the jump back skips no destructor. Returns
// false, with state.message set, when libpng failed.
bool encode_indexed(WriteState& state, int width, int height, int bits, const png_color* palette, int colours,
                    const std::uint8_t* indices) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &state, on_error, on_warning);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, &state, on_write, on_flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), bits,
               PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_PLTE(png, info, palette, colours);
  // Row filters predict from neighbouring bytes, which says nothing about palette indices.
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
  png_set_compression_level(png, 9);
  png_write_info(png, info);
  png_set_packing(png);  // one index a byte in, packed to `bits` a pixel in the file
  for (int y = 0; y < height; ++y)
    png_write_row(png, indices + static_cast<std::size_t>(y) * static_cast<std::size_t>(width));
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

RgbImage::RgbImage(int width, int height, Rgb background) : width_(width), height_(height) {
  ZT_REQUIRE(width > 0 && height > 0,
             "RgbImage: size " + std::to_string(width) + "x" + std::to_string(height) + " must be positive");
  bytes_.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  for (std::size_t i = 0; i < bytes_.size(); i += 3)
    bytes_[i] = background.r, bytes_[i + 1] = background.g, bytes_[i + 2] = background.b;
}

void RgbImage::set(int x, int y, Rgb colour) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const std::size_t i =
      (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
  bytes_[i] = colour.r, bytes_[i + 1] = colour.g, bytes_[i + 2] = colour.b;
}

Rgb RgbImage::at(int x, int y) const {
  ZT_REQUIRE(x >= 0 && y >= 0 && x < width_ && y < height_,
             "RgbImage::at(" + std::to_string(x) + ", " + std::to_string(y) + ") is outside the " +
                 std::to_string(width_) + "x" + std::to_string(height_) + " image");
  const std::size_t i =
      (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
  return {bytes_[i], bytes_[i + 1], bytes_[i + 2]};
}

std::string encode_png(const RgbImage& image) {
  const IndexedPixels pixels = index_colours(image);
  std::vector<png_color> palette;
  for (const Rgb& colour : pixels.palette) palette.push_back({colour.r, colour.g, colour.b});
  std::string png;
  WriteState state{&png, "out of memory"};
  const bool written = encode_indexed(state, image.width(), image.height(), bit_depth(pixels.palette.size()),
                                      palette.data(), static_cast<int>(palette.size()), pixels.indices.data());
  ZT_REQUIRE(written, std::string("PNG: libpng could not encode the ") + std::to_string(image.width()) + "x" +
                          std::to_string(image.height()) + " image: " + state.message);
  return png;
}

void write_png(const std::string& path, const RgbImage& image) {
  AtomicFile file(path);
  file.write(encode_png(image));
  file.commit();
}

}  // namespace zt::train
