// The messages of a hub id that cannot be resolved: each names the repo, the revision, the
// file and the URL, says what went wrong and what to do, and ends, where the network is the
// problem, with how to download the model by hand.
#pragma once

#include <string>

#include "models/hub/hub_http.h"

namespace zt::models::hub {

// The hub could not be reached at all: a cached snapshot with every file the model needs may
// stand in, as huggingface_hub falls back to its cache.
class HubUnreachableError : public Error {
 public:
  using Error::Error;
};

// What a request was for: a file of a repo's revision, at a URL.
struct FileRequest {
  std::string repo_id;
  std::string revision;
  std::string filename;
  std::string url;
};

// "huggingface-cli download Org/Name --local-dir DIR, then pass --model_name_or_path DIR".
std::string manual_download_hint(const std::string& repo_id, const std::string& revision);

// 401/403: gated or private. `token_set`: whether a token went with the request.
[[noreturn]] void fail_access_denied(const FileRequest& request, const HttpReply& reply, bool token_set);
// 404 of a file the model needs (`why` says what needs it), or of the repo or revision the
// hub says does not exist (`why` empty).
[[noreturn]] void fail_not_found(const FileRequest& request, const HttpReply& reply, const std::string& why);
// Any other error status.
[[noreturn]] void fail_status(const FileRequest& request, const HttpReply& reply);
// No answer (DNS, connection, TLS, timeout, cut transfer): `detail` is the transfer's error.
// Throws HubUnreachableError.
[[noreturn]] void fail_unreachable(const FileRequest& request, const std::string& detail);

}  // namespace zt::models::hub
