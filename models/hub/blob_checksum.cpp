#include "models/hub/blob_checksum.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#if ZT_HAVE_DOWNLOADER
#include <openssl/evp.h>
#endif

#include "runtime/error.h"

namespace zt::models::hub {

bool is_sha256_etag(const std::string& etag) {
  if (etag.size() != 64) return false;
  for (char c : etag)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string lower_hex(const unsigned char* bytes, std::size_t count) {
  std::string hex;
  char pair[3];
  for (std::size_t i = 0; i < count; ++i) {
    std::snprintf(pair, sizeof(pair), "%02x", bytes[i]);
    hex += pair;
  }
  return hex;
}

#if ZT_HAVE_DOWNLOADER

std::string sha256_of_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  ZT_REQUIRE(in, "cannot open " + path.string() + " to check its sha256");
  const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  ZT_REQUIRE(context && EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) == 1,
             "cannot start a sha256 digest (libcrypto)");
  std::vector<char> buffer(std::size_t{1} << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(context.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  ZT_REQUIRE(in.eof(), "cannot read " + path.string() + " to check its sha256");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest, &length);
  return lower_hex(digest, length);
}

#else

std::string sha256_of_file(const std::filesystem::path& path) {
  fail("cannot check the sha256 of " + path.string() + ": this zerotune was built without libcrypto");
}

#endif

}  // namespace zt::models::hub
