#include "distributed/launch/rendezvous_wire.h"

#include <cstring>

namespace zt::distributed::wire {

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

std::uint32_t get_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

std::vector<std::uint8_t> encode_request(const Request& request) {
  std::vector<std::uint8_t> out = {'Z', 'T', 'R', 'V'};
  put_u32(out, kVersion);
  put_u32(out, request.rank);
  put_u32(out, request.world_size);
  put_u32(out, static_cast<std::uint32_t>(request.token.size()));
  out.insert(out.end(), request.token.begin(), request.token.end());
  return out;
}

std::optional<std::size_t> announced_token_length(const std::uint8_t* header, std::size_t max_token) {
  if (std::memcmp(header, "ZTRV", 4) != 0 || get_u32(header + 4) != kVersion) return std::nullopt;
  std::size_t length = get_u32(header + 16);
  if (length > max_token) return std::nullopt;
  return length;
}

Request decode_request(const std::uint8_t* bytes, std::size_t token_length) {
  Request request;
  request.rank = get_u32(bytes + 8);
  request.world_size = get_u32(bytes + 12);
  request.token.assign(reinterpret_cast<const char*>(bytes + kRequestHeaderBytes), token_length);
  return request;
}

std::vector<std::uint8_t> encode_reply(const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> out = {'Z', 'T', 'O', 'K'};
  put_u32(out, static_cast<std::uint32_t>(payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace zt::distributed::wire
