// The sha256 of a downloaded file, checked against the ETag the hub gives LFS files (their
// sha256, 64 hex digits), so a corrupted or truncated download never enters the cache.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace zt::models::hub {

// True when `etag` is a sha256 (64 hex digits): the hub's ETag of an LFS file.
bool is_sha256_etag(const std::string& etag);

// A digest's bytes as lower-case hex digits, two a byte.
std::string lower_hex(const unsigned char* bytes, std::size_t count);

// The sha256 of the file, 64 lower-case hex digits; throws zt::Error naming it when it cannot
// be read, or when the build has no libcrypto.
std::string sha256_of_file(const std::filesystem::path& path);

}  // namespace zt::models::hub
