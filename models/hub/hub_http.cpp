#include "models/hub/hub_http.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>

#if ZT_HAVE_DOWNLOADER
#include <curl/curl.h>
#endif

#include "runtime/ascii_lower.h"
#include "zerotune/build_info.h"

namespace zt::models::hub {
namespace {

// "scheme://host:port" of a URL in lower case, the scheme's default port filled in.
std::string origin_of(const std::string& url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "";
  const std::string scheme = ascii_lower(url.substr(0, scheme_end));
  const std::size_t start = scheme_end + 3;
  std::string authority = ascii_lower(url.substr(start, url.find_first_of("/?#", start) - start));
  authority = authority.substr(authority.rfind('@') == std::string::npos ? 0 : authority.rfind('@') + 1);
  const bool has_port = authority.rfind(':') != std::string::npos && authority.back() != ']';
  if (!has_port) authority += scheme == "https" ? ":443" : ":80";
  return scheme + "://" + authority;
}

}  // namespace

std::string HttpReply::header(const std::string& name) const {
  const auto found = headers.find(ascii_lower(name));
  return found == headers.end() ? "" : found->second;
}

bool same_origin(const std::string& a, const std::string& b) { return origin_of(a) == origin_of(b); }

#if ZT_HAVE_DOWNLOADER

namespace {

constexpr long kMaxRedirects = 10;

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& reply = *static_cast<HttpReply*>(user);
  const std::string line(data, size * count);
  if (line.starts_with("HTTP/")) {
    reply.headers.clear();  // a new response: keep only the last one's headers
    return size * count;
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string value = line.substr(colon + 1);
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  value.erase(value.begin(), std::find_if_not(value.begin(), value.end(), space));
  value.erase(std::find_if_not(value.rbegin(), value.rend(), space).base(), value.end());
  reply.headers[ascii_lower(line.substr(0, colon))] = value;
  return size * count;
}

// One request's curl handle, with what every request shares: the user agent, the header
// collector, no signals (threads), and the token when given.
class Request {
 public:
  Request(const std::string& url, const std::string& token) {
    static std::once_flag initialised;
    std::call_once(initialised, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    handle_ = curl_easy_init();
    ZT_REQUIRE(handle_ != nullptr, "cannot start an HTTP request (curl_easy_init failed)");
    curl_easy_setopt(handle_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(handle_, CURLOPT_USERAGENT, (std::string("zerotune/") + build::kVersion).c_str());
    curl_easy_setopt(handle_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle_, CURLOPT_ERRORBUFFER, error_);
    curl_easy_setopt(handle_, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(handle_, CURLOPT_HEADERDATA, &reply_);
    if (!token.empty()) {
      headers_ = curl_slist_append(headers_, ("Authorization: Bearer " + token).c_str());
      curl_easy_setopt(handle_, CURLOPT_HTTPHEADER, headers_);
    }
  }
  ~Request() {
    curl_slist_free_all(headers_);
    curl_easy_cleanup(handle_);
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  CURL* handle() const { return handle_; }

  // The exchange; CURLE_WRITE_ERROR is left to the caller, who knows why it wrote nothing.
  CURLcode perform() {
    const CURLcode code = curl_easy_perform(handle_);
    if (code != CURLE_OK && code != CURLE_WRITE_ERROR)
      throw TransferError(error_[0] != '\0' ? std::string(error_) : curl_easy_strerror(code));
    curl_easy_getinfo(handle_, CURLINFO_RESPONSE_CODE, &reply_.status);
    return code;
  }

  HttpReply& reply() { return reply_; }

 private:
  CURL* handle_ = nullptr;
  curl_slist* headers_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
  HttpReply reply_;
};

// Where a GET's body goes: the file for a 200 or 206, nowhere for an error status.
struct BodySink {
  CURL* handle = nullptr;
  const Download* download = nullptr;
  std::uint64_t held = 0;  // bytes the file holds
  bool decided = false;
  bool to_file = false;
  int write_errno = 0;
};

// A 200 to a Range request is the whole file: what the file held goes.
bool restart_file(BodySink& sink) {
  if (::ftruncate(sink.download->fd, 0) != 0 || ::lseek(sink.download->fd, 0, SEEK_SET) != 0) return false;
  sink.held = 0;
  return true;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& sink = *static_cast<BodySink*>(user);
  const size_t bytes = size * count;
  if (!sink.decided) {
    long status = 0;
    curl_easy_getinfo(sink.handle, CURLINFO_RESPONSE_CODE, &status);
    sink.decided = true;
    sink.to_file = status == 200 || status == 206;
    if (status == 200 && sink.held > 0 && !restart_file(sink)) {
      sink.write_errno = errno;
      return 0;
    }
  }
  if (!sink.to_file) return bytes;
  for (size_t done = 0; done < bytes;) {
    const ssize_t wrote = ::write(sink.download->fd, data + done, bytes - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      sink.write_errno = errno;
      return 0;
    }
    done += static_cast<size_t>(wrote);
  }
  sink.held += bytes;
  if (sink.download->progress) sink.download->progress(sink.held);
  return bytes;
}

}  // namespace

bool downloader_available() { return true; }

HttpReply http_head(const std::string& url, const std::string& token, std::chrono::seconds timeout) {
  std::string current = url;
  for (long redirects = 0;; ++redirects) {
    Request request(current, token);
    curl_easy_setopt(request.handle(), CURLOPT_NOBODY, 1L);
    curl_easy_setopt(request.handle(), CURLOPT_TIMEOUT, static_cast<long>(timeout.count()));
    curl_easy_setopt(request.handle(), CURLOPT_CONNECTTIMEOUT, static_cast<long>(timeout.count()));
    request.perform();
    HttpReply reply = std::move(request.reply());
    char* target = nullptr;
    curl_easy_getinfo(request.handle(), CURLINFO_REDIRECT_URL, &target);
    if (reply.status < 300 || reply.status >= 400 || target == nullptr) return reply;
    // Only a relative Location is followed, as huggingface_hub follows it: an absolute one,
    // even to the same host, is where the file's bytes are, and this answer has its metadata.
    const std::string location = reply.header("location");
    const bool relative = location.starts_with('/') && !location.starts_with("//");
    if (!relative || redirects == kMaxRedirects) {
      reply.location = target;
      return reply;
    }
    current = target;
  }
}

HttpReply http_get(const Download& download) {
  Request request(download.url, same_origin(download.url, download.token_host) ? download.token : "");
  CURL* handle = request.handle();
  BodySink sink{.handle = handle, .download = &download, .held = download.offset};
  ZT_REQUIRE(::lseek(download.fd, 0, SEEK_END) == static_cast<off_t>(download.offset),
             "the partial download does not hold the " + std::to_string(download.offset) + " bytes expected");
  const std::string range = std::to_string(download.offset) + "-";
  if (download.offset > 0) curl_easy_setopt(handle, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(handle, CURLOPT_MAXREDIRS, kMaxRedirects);
  curl_easy_setopt(handle, CURLOPT_UNRESTRICTED_AUTH, 0L);  // no token to another host
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT, static_cast<long>(download.stall_timeout.count()));
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, static_cast<long>(download.stall_timeout.count()));
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &sink);
  if (request.perform() == CURLE_WRITE_ERROR || sink.write_errno != 0)
    fail("cannot write the download of " + download.url + " to disk: " + std::strerror(sink.write_errno));
  if (request.reply().status == 200 && !sink.decided && sink.held > 0 && !restart_file(sink))
    fail("cannot empty the partial download of " + download.url + ": " + std::strerror(errno));
  return std::move(request.reply());
}

#else  // built without libcurl

namespace {

[[noreturn]] void no_downloader() {
  fail("this zerotune was built without the downloader (libcurl): install libcurl4-openssl-dev and rebuild");
}

}  // namespace

bool downloader_available() { return false; }

HttpReply http_head(const std::string&, const std::string&, std::chrono::seconds) { no_downloader(); }

HttpReply http_get(const Download&) { no_downloader(); }

#endif

}  // namespace zt::models::hub
