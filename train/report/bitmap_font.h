// A 5 × 7 bitmap font for the labels of the loss-curve images: digits, '.', '-', '+' and the
// lowercase letters of the titles, axis name and legend ("train", "smoothed", "eval"). g and p
// hang kDescent rows below the baseline, so a line of text is kLineRows tall. A character
// without a glyph (a space) leaves a blank gap.
#pragma once

#include <string_view>

#include "train/report/png_writer.h"

namespace zt::train {

constexpr int kGlyphColumns = 5, kGlyphRows = 7, kDescent = 2;
constexpr int kLineRows = kGlyphRows + kDescent;

bool has_glyph(char c);
// Whether the unscaled pixel (column, row) of `c` is ink; rows count from the top of the line.
bool glyph_ink(char c, int column, int row);

// Pixels from the first glyph's left edge to the last one's right edge, at `scale` pixels a dot.
int text_width(std::string_view text, int scale);
constexpr int text_height(int scale) { return kLineRows * scale; }
// (x, y) is the top left of the line.
void draw_text(RgbImage& image, int x, int y, std::string_view text, int scale, Rgb colour);

}  // namespace zt::train
