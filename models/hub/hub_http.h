// HTTP for the hub through libcurl: a HEAD that reads a file's metadata, and a GET that
// appends a file's bytes to an open file from a given offset (an HTTP Range request), so a
// cut download resumes. The token goes only to the host it was meant for: a redirect to
// another host (the hub sends LFS files to its CDN) is followed without it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "runtime/error.h"

namespace zt::models::hub {

struct HttpReply {
  long status = 0;
  std::map<std::string, std::string> headers = {};    // of the last response, names in lower case
  std::string location = {};                          // a redirect's absolute target, when not followed
  std::string header(const std::string& name) const;  // "" when absent
};

// No answer at all: the name did not resolve, the connection or TLS failed, the transfer
// timed out or was cut. The message is curl's; the caller names the URL.
class TransferError : public Error {
 public:
  using Error::Error;
};

// Whether this build has the downloader (libcurl); without it the functions below throw.
bool downloader_available();

// HEAD `url` with the token, following relative redirects (the hub's renamed repos) and
// returning an absolute one with `location` set (the hub's CDN), unfollowed.
HttpReply http_head(const std::string& url, const std::string& token, std::chrono::seconds timeout);

// GET `url` and append the body to the file open as `fd`, which holds `offset` bytes: from
// byte `offset` on (Range) when that is not 0. A server that answers 200 to a Range request
// sends the whole file: `fd` is emptied first. Redirects are followed; the token is sent to
// `token_host`'s host only. The body of an error status is not written. `progress` gets the
// bytes the file holds, as they arrive. A transfer that receives nothing for `stall_timeout`
// fails.
struct Download {
  std::string url;
  std::string token;
  std::string token_host;  // a URL on the host the token belongs to (the endpoint)
  int fd = -1;
  std::uint64_t offset = 0;
  std::chrono::seconds stall_timeout{10};
  std::function<void(std::uint64_t)> progress;
};
HttpReply http_get(const Download& download);

// Whether two URLs have the same scheme, host and port.
bool same_origin(const std::string& a, const std::string& b);

}  // namespace zt::models::hub
