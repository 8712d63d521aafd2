#include "models/hub/repo_downloader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <thread>

#include "models/hub/blob_checksum.h"
#include "models/hub/download_progress.h"
#include "models/hub/file_lock.h"
#include "models/hub/repo_id.h"
#include "runtime/error.h"
#include "runtime/terminal/byte_format.h"

namespace zt::models::hub {
namespace {

namespace fs = std::filesystem;

// A cut download is resumed this many times within one run (huggingface_hub's count), after
// a pause that grows with each attempt.
constexpr int kAttempts = 5;
constexpr auto kPauseStep = std::chrono::milliseconds(250);

// huggingface_hub's reading of an ETag: without a weak W/ and the quotes.
std::string normalised_etag(std::string etag) {
  if (etag.starts_with("W/")) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

std::uint64_t number_header(const HttpReply& reply, const std::string& name) {
  const std::string text = reply.header(name);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19) return 0;
  return std::stoull(text);
}

// The file's size: X-Linked-Size for an LFS file, whose answer is a redirect, else the
// answer's own Content-Length.
std::uint64_t file_size_of(const HttpReply& reply) {
  if (const std::uint64_t linked = number_header(reply, "x-linked-size")) return linked;
  return reply.status < 300 ? number_header(reply, "content-length") : 0;
}

std::uint64_t size_on_disk(const fs::path& path) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

class OpenFile {
 public:
  explicit OpenFile(const fs::path& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) {
    ZT_REQUIRE(fd_ >= 0, "cannot write " + path.string() + ": " + std::strerror(errno) +
                             "; set HF_HUB_CACHE to a writable folder with room for the model");
  }
  ~OpenFile() { ::close(fd_); }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

RepoDownloader::RepoDownloader(const HubSettings& settings, const RepoCache& cache, std::string repo_id,
                               std::string revision)
    : settings_(settings), cache_(cache), repo_id_(std::move(repo_id)), revision_(std::move(revision)) {
  if (is_commit_hash(revision_)) commit_ = revision_;
}

fs::path RepoDownloader::folder() const {
  ZT_REQUIRE(commit_.has_value(), "no file of " + repo_id_ + " has been fetched yet, so its commit is unknown");
  return cache_.snapshot(*commit_);
}

FileRequest RepoDownloader::request_for(const std::string& filename) const {
  const std::string url = settings_.endpoint + "/" + repo_id_ + "/resolve/" +
                          url_escaped(commit_.value_or(revision_), false) + "/" + url_escaped(filename, true);
  return {.repo_id = repo_id_, .revision = revision_, .filename = filename, .url = url};
}

bool RepoDownloader::provide(const std::string& filename) {
  if (commit_ && cache_.has_file(*commit_, filename)) return true;
  if (commit_ && cache_.known_absent(*commit_, filename)) return false;
  const std::optional<Metadata> found = metadata(filename);
  if (!found) {
    if (commit_) cache_.record_absent(*commit_, filename);
    return false;
  }
  if (cache_.has_file(*commit_, filename)) return true;  // the commit just pinned is cached
  std::error_code ec;
  if (!fs::is_regular_file(cache_.blob(found->etag), ec)) {
    const FileLock lock(cache_.lock_file(found->etag));
    // Another process may have finished this blob while this one waited for the lock.
    if (!fs::is_regular_file(cache_.blob(found->etag), ec)) download_blob(request_for(filename), *found);
  }
  cache_.link(*commit_, filename, found->etag);
  return true;
}

void RepoDownloader::missing(const std::string& filename, const std::string& why) {
  fail_not_found(request_for(filename), last_not_found_.value_or(HttpReply{.status = 404}), why);
}

std::optional<RepoDownloader::Metadata> RepoDownloader::metadata(const std::string& filename) {
  const FileRequest request = request_for(filename);
  HttpReply reply;
  try {
    reply = http_head(request.url, settings_.token, settings_.metadata_timeout);
  } catch (const TransferError& e) {
    fail_unreachable(request, e.what());
  }
  if (reply.status == 401 || reply.status == 403) fail_access_denied(request, reply, !settings_.token.empty());
  if (reply.status == 404) {
    const std::string code = reply.header("x-error-code");
    if (code == "RepoNotFound" || code == "RevisionNotFound") fail_not_found(request, reply, "");
    if (const std::string commit = reply.header("x-repo-commit"); !commit.empty()) pin(commit, request);
    last_not_found_ = reply;
    return std::nullopt;
  }
  if (reply.status < 200 || reply.status >= 400) fail_status(request, reply);
  const std::string commit = reply.header("x-repo-commit");
  ZT_REQUIRE(!commit.empty(), request.url + " answered without an X-Repo-Commit header, so " + settings_.endpoint +
                                  " (HF_ENDPOINT) does not serve the hub's API: point HF_ENDPOINT at the hub or a "
                                  "mirror of it");
  pin(commit, request);
  const std::string linked = reply.header("x-linked-etag");
  Metadata found{.etag = normalised_etag(linked.empty() ? reply.header("etag") : linked),
                 .download_url = reply.location.empty() ? request.url : reply.location,
                 .size = file_size_of(reply)};
  ZT_REQUIRE(!found.etag.empty(), request.url + " answered without an ETag, which names the file in the cache");
  check_etag_name(found.etag, request.url);
  return found;
}

void RepoDownloader::pin(const std::string& commit, const FileRequest& request) {
  check_commit_name(commit, request.url);
  if (commit_) {
    ZT_REQUIRE(*commit_ == commit, request.url + " is at commit " + commit + ", but the files before it came from " +
                                       *commit_ + ": run the command again");
    return;
  }
  commit_ = commit;
  cache_.record_ref(revision_, commit);
}

void RepoDownloader::download_blob(const FileRequest& request, const Metadata& metadata) const {
  std::error_code ec;
  fs::create_directories(cache_.blob(metadata.etag).parent_path(), ec);
  ZT_REQUIRE(!ec, "cannot create " + cache_.blob(metadata.etag).parent_path().string() + ": " + ec.message() +
                      "; set HF_HUB_CACHE to a writable folder");
  std::string error;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    if (download_attempt(request, metadata, error)) return verify_and_place(request, metadata);
    if (attempt < kAttempts) std::this_thread::sleep_for(kPauseStep * attempt);
  }
  const fs::path partial = cache_.partial_blob(metadata.etag);
  fail_unreachable(request, error + " (tried " + std::to_string(kAttempts) + " times; the " +
                                format_bytes(size_on_disk(partial)) + " received are kept in " + partial.string() +
                                " and the next run resumes from there)");
}

bool RepoDownloader::download_attempt(const FileRequest& request, const Metadata& metadata, std::string& error) const {
  const fs::path partial = cache_.partial_blob(metadata.etag);
  const OpenFile file(partial);
  std::uint64_t held = size_on_disk(partial);
  if (metadata.size > 0 && held == metadata.size) return true;  // complete, but not yet checked and placed
  if (metadata.size > 0 && held > metadata.size) {
    ZT_REQUIRE(::ftruncate(file.fd(), 0) == 0, "cannot empty " + partial.string() + ": " + std::strerror(errno));
    held = 0;
  }
  DownloadProgress progress(repo_id_, request.filename, metadata.size, held, settings_.progress_bars);
  HttpReply reply;
  try {
    reply = http_get({.url = metadata.download_url,
                      .token = settings_.token,
                      .token_host = settings_.endpoint,
                      .fd = file.fd(),
                      .offset = held,
                      .stall_timeout = settings_.stall_timeout,
                      .progress = [&progress](std::uint64_t bytes) { progress.update(bytes); }});
  } catch (const TransferError& e) {
    progress.finish();
    error = e.what();
    return false;
  }
  progress.finish();
  if (reply.status == 401 || reply.status == 403) fail_access_denied(request, reply, !settings_.token.empty());
  if (reply.status == 404) fail_not_found(request, reply, "its metadata was there a moment ago");
  if (reply.status == 416 || reply.status >= 500) {
    if (reply.status == 416) fs::resize_file(partial, 0);  // the bytes held no longer fit the file
    error = "HTTP " + std::to_string(reply.status) + " from " + metadata.download_url;
    return false;
  }
  if (reply.status != 200 && reply.status != 206) fail_status(request, reply);
  const std::uint64_t now_held = size_on_disk(partial);
  if (metadata.size > 0 && now_held < metadata.size) {
    error = "the connection closed after " + format_bytes(now_held) + " of " + format_bytes(metadata.size);
    return false;
  }
  return true;
}

void RepoDownloader::verify_and_place(const FileRequest& request, const Metadata& metadata) const {
  const fs::path partial = cache_.partial_blob(metadata.etag), blob = cache_.blob(metadata.etag);
  const std::uint64_t size = size_on_disk(partial);
  std::string problem;
  if (metadata.size > 0 && size != metadata.size)
    problem = std::to_string(size) + " bytes arrived where the hub announced " + std::to_string(metadata.size);
  if (problem.empty() && is_sha256_etag(metadata.etag)) {
    std::string expected = metadata.etag;
    std::transform(expected.begin(), expected.end(), expected.begin(), [](unsigned char c) { return std::tolower(c); });
    if (const std::string digest = sha256_of_file(partial); digest != expected)
      problem = "its sha256 is " + digest + ", not " + expected + " as the hub gives it";
  }
  std::error_code ec;
  if (!problem.empty()) {
    fs::remove(partial, ec);
    fail("the download of " + request.filename + " of " + repo_id_ + " from " + metadata.download_url +
         " is damaged: " + problem + ". It was removed; run the command again");
  }
  fs::rename(partial, blob, ec);
  ZT_REQUIRE(!ec, "cannot move " + partial.string() + " to " + blob.string() + ": " + ec.message());
}

}  // namespace zt::models::hub
