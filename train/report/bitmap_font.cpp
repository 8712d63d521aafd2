#include "train/report/bitmap_font.h"

#include <array>

namespace zt::train {
namespace {

// Glyphs side by side so their shapes can be read here: kGlyphColumns dots each ('#' is ink),
// one space between neighbours.
struct GlyphSheet {
  std::string_view characters;
  std::array<std::string_view, kGlyphRows> rows;
};

constexpr std::array<GlyphSheet, 2> kSheets{{
    {"0123456789.-+",
     {".###. ..#.. .###. .###. ...#. ##### ..##. ##### .###. .###. ..... ..... .....",
      "#...# .##.. #...# #...# ..##. #.... .#... ....# #...# #...# ..... ..... ..#..",
      "#..## ..#.. ....# ....# .#.#. ####. #.... ...#. #...# #...# ..... ..... ..#..",
      "#.#.# ..#.. ...#. ..##. #..#. ....# ####. ..#.. .###. .#### ..... .###. #####",
      "##..# ..#.. ..#.. ....# ##### ....# #...# .#... #...# ....# ..... ..... ..#..",
      "#...# ..#.. .#... #...# ...#. #...# #...# .#... #...# ...#. .##.. ..... ..#..",
      ".###. .###. ##### .###. ...#. .###. .###. .#... .###. .##.. .##.. ..... ....."}},
    {"adeghilmnoprstv",
     {"..... ....# ..... .#### #.... ..#.. .##.. ..... ..... ..... ####. ..... ..... .#... .....",
      "..... ....# ..... #...# #.... ..... ..#.. ..... ..... ..... #...# ..... ..... .#... .....",
      ".###. .##.# .###. #...# #.##. .##.. ..#.. ##.#. #.##. .###. #...# #.##. .#### ####. #...#",
      "....# #..## #...# #...# ##..# ..#.. ..#.. #.#.# ##..# #...# #...# ##..# #.... .#... #...#",
      ".#### #...# ##### .#### #...# ..#.. ..#.. #.#.# #...# #...# ####. #.... .###. .#... #...#",
      "#...# #...# #.... ....# #...# ..#.. ..#.. #...# #...# #...# #.... #.... ....# .#..# .#.#.",
      ".#### .#### .###. .###. #...# .###. .###. #...# #...# .###. #.... #.... ####. ..##. ..#.."}},
}};
constexpr std::string_view kDescenders = "gp";

constexpr int kAdvance = kGlyphColumns + 1;  // one blank column between characters

void dot(RgbImage& image, int x, int y, int scale, Rgb colour) {
  for (int dy = 0; dy < scale; ++dy)
    for (int dx = 0; dx < scale; ++dx) image.set(x + dx, y + dy, colour);
}

}  // namespace

bool has_glyph(char c) {
  for (const GlyphSheet& sheet : kSheets)
    if (sheet.characters.find(c) != std::string_view::npos) return true;
  return false;
}

bool glyph_ink(char c, int column, int row) {
  if (column < 0 || column >= kGlyphColumns) return false;
  if (kDescenders.find(c) != std::string_view::npos) row -= kDescent;
  if (row < 0 || row >= kGlyphRows) return false;
  for (const GlyphSheet& sheet : kSheets)
    if (const std::size_t index = sheet.characters.find(c); index != std::string_view::npos)
      return sheet.rows[row][index * kAdvance + column] == '#';
  return false;
}

int text_width(std::string_view text, int scale) {
  return text.empty() ? 0 : (static_cast<int>(text.size()) * kAdvance - 1) * scale;
}

void draw_text(RgbImage& image, int x, int y, std::string_view text, int scale, Rgb colour) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int left = x + static_cast<int>(i) * kAdvance * scale;
    for (int row = 0; row < kLineRows; ++row)
      for (int column = 0; column < kGlyphColumns; ++column)
        if (glyph_ink(text[i], column, row)) dot(image, left + column * scale, y + row * scale, scale, colour);
  }
}

}  // namespace zt::train
