// The rendezvous request on the wire, fixed little-endian fields:
//   "ZTRV" | version u32 | rank u32 | world_size u32 | token length u32 | token bytes
// and the reply: "ZTOK" | payload length u32 | payload bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zt::distributed::wire {

inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::size_t kRequestHeaderBytes = 20;

struct Request {
  std::uint32_t rank = 0;
  std::uint32_t world_size = 0;
  std::string token;
};

std::vector<std::uint8_t> encode_request(const Request& request);
// The token length announced by a complete header, or nullopt when the header is not one of
// ours (wrong magic or version) or announces more than max_token bytes.
std::optional<std::size_t> announced_token_length(const std::uint8_t* header, std::size_t max_token);
Request decode_request(const std::uint8_t* bytes, std::size_t token_length);

std::vector<std::uint8_t> encode_reply(const std::vector<std::uint8_t>& payload);

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value);
std::uint32_t get_u32(const std::uint8_t* p);

}  // namespace zt::distributed::wire
