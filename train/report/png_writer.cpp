#include "train/report/png_writer.h"

#include <algorithm>
#include <array>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace zt::train {
namespace {

void put_u32_be(std::string& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xFF));
}

void put_chunk(std::string& out, std::string_view type, std::string_view data) {
  put_u32_be(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t checked_from = out.size();
  out.append(type);
  out.append(data);
  put_u32_be(out, crc32(std::string_view(out).substr(checked_from)));  // over type and data
}

// A zlib stream of `raw` in stored deflate blocks (at most 65535 bytes each).
std::string zlib_stored(std::string_view raw) {
  std::string out = {'\x78', '\x01'};  // deflate, 32K window, no dictionary; (0x7801 % 31 == 0)
  constexpr std::size_t kMaxBlock = 65535;
  std::size_t offset = 0;
  do {
    const std::size_t size = std::min(kMaxBlock, raw.size() - offset);
    const bool last = offset + size == raw.size();
    out.push_back(last ? '\x01' : '\x00');  // BFINAL, BTYPE 00 (stored)
    const auto len = static_cast<std::uint16_t>(size);
    const auto nlen = static_cast<std::uint16_t>(~len);
    out.push_back(static_cast<char>(len & 0xFF)), out.push_back(static_cast<char>(len >> 8));
    out.push_back(static_cast<char>(nlen & 0xFF)), out.push_back(static_cast<char>(nlen >> 8));
    out.append(raw.substr(offset, size));
    offset += size;
  } while (offset < raw.size());
  put_u32_be(out, adler32(raw));
  return out;
}

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
      ZT_REQUIRE(out.palette.size() < 256, "PNG: the image has more than 256 colours; the encoder writes indexed colour only");
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

std::string palette_chunk_data(const std::vector<Rgb>& palette) {
  std::string data;
  for (const Rgb& colour : palette)
    data += {static_cast<char>(colour.r), static_cast<char>(colour.g), static_cast<char>(colour.b)};
  return data;
}

// Each row: filter type None, then the indices packed high bits first.
std::string packed_rows(const std::vector<std::uint8_t>& indices, int width, int height, int bits) {
  const std::size_t row_bytes = (static_cast<std::size_t>(width) * bits + 7) / 8;
  std::string raw((row_bytes + 1) * static_cast<std::size_t>(height), '\0');
  for (int y = 0; y < height; ++y) {
    char* row = raw.data() + static_cast<std::size_t>(y) * (row_bytes + 1) + 1;
    for (int x = 0; x < width; ++x) {
      const int bit = x * bits;
      const std::uint8_t index = indices[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + x];
      row[bit / 8] = static_cast<char>(static_cast<unsigned char>(row[bit / 8]) | index << (8 - bits - bit % 8));
    }
  }
  return raw;
}

}  // namespace

RgbImage::RgbImage(int width, int height, Rgb background) : width_(width), height_(height) {
  ZT_REQUIRE(width > 0 && height > 0, "RgbImage: size " + std::to_string(width) + "x" + std::to_string(height) +
                                          " must be positive");
  bytes_.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  for (std::size_t i = 0; i < bytes_.size(); i += 3)
    bytes_[i] = background.r, bytes_[i + 1] = background.g, bytes_[i + 2] = background.b;
}

void RgbImage::set(int x, int y, Rgb colour) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
  bytes_[i] = colour.r, bytes_[i + 1] = colour.g, bytes_[i + 2] = colour.b;
}

Rgb RgbImage::at(int x, int y) const {
  ZT_REQUIRE(x >= 0 && y >= 0 && x < width_ && y < height_,
             "RgbImage::at(" + std::to_string(x) + ", " + std::to_string(y) + ") is outside the " +
                 std::to_string(width_) + "x" + std::to_string(height_) + " image");
  const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
  return {bytes_[i], bytes_[i + 1], bytes_[i + 2]};
}

std::uint32_t crc32(std::string_view bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) c = table[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t adler32(std::string_view bytes) {
  constexpr std::uint32_t kModulus = 65521;
  std::uint32_t a = 1, b = 0;
  for (unsigned char byte : bytes) {
    a = (a + byte) % kModulus;
    b = (b + a) % kModulus;
  }
  return (b << 16) | a;
}

std::string encode_png(const RgbImage& image) {
  const IndexedPixels pixels = index_colours(image);
  const int bits = bit_depth(pixels.palette.size());
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string header;
  put_u32_be(header, static_cast<std::uint32_t>(image.width()));
  put_u32_be(header, static_cast<std::uint32_t>(image.height()));
  header += {static_cast<char>(bits), '\x03', '\x00', '\x00', '\x00'};  // palette, deflate, no filter set, no interlace
  put_chunk(png, "IHDR", header);
  put_chunk(png, "PLTE", palette_chunk_data(pixels.palette));
  put_chunk(png, "IDAT", zlib_stored(packed_rows(pixels.indices, image.width(), image.height(), bits)));
  put_chunk(png, "IEND", "");
  return png;
}

void write_png(const std::string& path, const RgbImage& image) {
  AtomicFile file(path);
  file.write(encode_png(image));
  file.commit();
}

}  // namespace zt::train
