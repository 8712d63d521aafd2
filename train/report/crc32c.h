// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78), the checksum of TFRecord files, and
// the mask TFRecord applies to it: a checksum stored next to the bytes it covers is rotated
// and offset, so that the CRC of a buffer holding its own CRC is not trivially zero.
#pragma once

#include <cstdint>
#include <string_view>

namespace zt::train {

// The CRC-32C of `bytes` (crc32c("123456789") == 0xE3069283).
std::uint32_t crc32c(std::string_view bytes);

// TFRecord's masked form of a CRC-32C: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t masked_crc32c(std::string_view bytes);

}  // namespace zt::train
