// The 16 values each 4-bit code stands for, bitsandbytes' lookup tables in float32, as
// constants: the one home of the numbers the CPU reference (code_books.h) and the GPU kernels
// (cuda/quant4/, which copy them into constant memory) decode with. Plain C++ with no
// dependency, so nvcc reads it too.
#pragma once

namespace zt::ops::quant4 {

struct CodeBookValues {
  float values[16];
};

// bitsandbytes' nf4_dequantization_lut: create_normal_map(offset=0.9677083) rounded to float32.
inline constexpr CodeBookValues kNf4Values{
    {-1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,
     -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f,
     0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f}};

// get_4bit_type("fp4"): the magnitudes [0, 0.0625, 8, 12, 4, 6, 2, 3] and their negatives (code
// | 0b1000), each divided by 12 in float32 (a constant division rounds as the run-time one);
// the sign bit of code 8 gives -0.
inline constexpr CodeBookValues kFp4Values{{0.0f / 12.0f, 0.0625f / 12.0f, 8.0f / 12.0f, 12.0f / 12.0f, 4.0f / 12.0f,
                                            6.0f / 12.0f, 2.0f / 12.0f, 3.0f / 12.0f, -0.0f / 12.0f, -0.0625f / 12.0f,
                                            -8.0f / 12.0f, -12.0f / 12.0f, -4.0f / 12.0f, -6.0f / 12.0f, -2.0f / 12.0f,
                                            -3.0f / 12.0f}};

}  // namespace zt::ops::quant4
