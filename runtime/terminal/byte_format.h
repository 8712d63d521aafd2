// Byte counts as people read them in messages: "512 B", "1.50 KiB", "2.00 GiB".
#pragma once

#include <cstddef>
#include <string>

namespace zt {

std::string format_bytes(std::size_t bytes);

}  // namespace zt
