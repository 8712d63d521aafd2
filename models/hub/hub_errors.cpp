#include "models/hub/hub_errors.h"

#include "runtime/error.h"

namespace zt::models::hub {
namespace {

std::string what_of(const FileRequest& request) {
  return request.filename + " of " + request.repo_id + " (revision " + request.revision + ")";
}

std::string status_of(const HttpReply& reply, const FileRequest& request) {
  return "HTTP " + std::to_string(reply.status) + " from " + request.url;
}

}  // namespace

std::string manual_download_hint(const std::string& repo_id, const std::string& revision) {
  return "`huggingface-cli download " + repo_id + (revision == "main" ? "" : " --revision " + revision) +
         " --local-dir DIR`, then pass --model_name_or_path DIR";
}

void fail_access_denied(const FileRequest& request, const HttpReply& reply, bool token_set) {
  fail("cannot download " + what_of(request) + ": " + status_of(reply, request) +
       ". The repo is gated or private (or does not exist): for a gated repo, accept its terms on its page on the "
       "hub, then set HF_TOKEN to an access token of that account" +
       (token_set ? " (a token was sent, but it has no access to this repo)" : " (HF_TOKEN is not set)") +
       "; check the id too");
}

void fail_not_found(const FileRequest& request, const HttpReply& reply, const std::string& why) {
  const std::string code = reply.header("x-error-code");
  std::string problem = "repo or file not found";
  if (code == "RepoNotFound") problem = "the hub has no repo " + request.repo_id;
  if (code == "RevisionNotFound") problem = "the repo has no revision '" + request.revision + "'";
  if (code == "EntryNotFound") problem = "the repo has no " + request.filename + " at this revision";
  fail(request.repo_id + " (revision " + request.revision + "): " + problem + ": " + request.filename +
       (why.empty() ? "" : " (" + why + ")") + " is not at " + request.url + " (HTTP " + std::to_string(reply.status) +
       "). Check the id (org/name, as on the hub) and --revision; '" + request.repo_id +
       "' is not a local folder either");
}

void fail_status(const FileRequest& request, const HttpReply& reply) {
  fail("cannot download " + what_of(request) + ": " + status_of(reply, request) +
       (reply.status >= 500 ? "; the hub has a problem, try again later, or " : "; ") +
       "download the model by hand: " + manual_download_hint(request.repo_id, request.revision));
}

void fail_unreachable(const FileRequest& request, const std::string& detail) {
  throw HubUnreachableError(
      "cannot download " + what_of(request) + " from " + request.url + ": " + detail +
      ". Check the network, or HF_ENDPOINT (a mirror such as https://hf-mirror.com where the hub is out of "
      "reach); or download the model by hand: " +
      manual_download_hint(request.repo_id, request.revision));
}

}  // namespace zt::models::hub
