// A stand-in for the Hugging Face hub on 127.0.0.1, on a port the kernel picks, for tests of
// models/hub/ that must not leave the machine. It serves the hub's resolve URLs,
// {endpoint}/{repo}/resolve/{revision}/{file}, to HEAD and GET with the headers
// huggingface_hub reads: X-Repo-Commit, ETag (W/"<git blob sha1>" for plain files),
// X-Linked-Etag and X-Linked-Size. "LFS" files (*.safetensors) are answered with a redirect to
// /cdn/<sha256> on another host name (localhost), as the hub sends them to its CDN; a renamed
// repo's requests get a relative redirect to the new name. It honours
// Range requests, answers 401 without the token it may require, 404 for what it lacks (with the
// hub's X-Error-Code header), can cut a download mid-file or damage it, and records every
// request. Builds with the downloader only (ZT_HAVE_DOWNLOADER): it hashes with libcrypto.
#pragma once

#if ZT_HAVE_DOWNLOADER

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "models/hub/blob_checksum.h"

namespace zt::testing {

struct HubRequestRecord {
  std::string method, path, range, authorization, host;
};

inline std::string hex_digest(const EVP_MD* algorithm, const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, algorithm, nullptr);
  return models::hub::lower_hex(digest, length);
}

inline std::string sha256_hex(const std::string& bytes) { return hex_digest(EVP_sha256(), bytes); }
// The name git gives a file's contents, which the hub sends as the ETag of a plain file.
inline std::string git_blob_sha1(const std::string& bytes) {
  return hex_digest(EVP_sha1(), "blob " + std::to_string(bytes.size()) + '\0' + bytes);
}

inline std::map<std::string, std::string> files_of_folder(const std::filesystem::path& folder) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    files[entry.path().filename().string()] = bytes.str();
  }
  return files;
}

class LoopbackHub {
 public:
  LoopbackHub() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    listen(listener_, 16);
    socklen_t length = sizeof(address);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackHub() {
    stop_ = true;
    thread_.join();
    close(listener_);
  }
  LoopbackHub(const LoopbackHub&) = delete;
  LoopbackHub& operator=(const LoopbackHub&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // `repo_id` at `commit` holds `files` (name -> bytes); `main` names that commit unless a
  // branch was set.
  void add_commit(const std::string& repo_id, const std::string& commit, std::map<std::string, std::string> files) {
    std::lock_guard lock(mutex_);
    for (const auto& [name, bytes] : files)
      if (is_lfs(name)) lfs_blobs_[sha256_hex(bytes)] = bytes;
    repos_[repo_id].commits[commit] = std::move(files);
    repos_[repo_id].branches.emplace("main", commit);
  }
  void set_branch(const std::string& repo_id, const std::string& branch, const std::string& commit) {
    std::lock_guard lock(mutex_);
    repos_[repo_id].branches[branch] = commit;
  }
  // Requests for `old_id` are sent on to `new_id` by a relative redirect, as the hub does for
  // a renamed repo.
  void rename_repo(const std::string& old_id, const std::string& new_id) {
    std::lock_guard lock(mutex_);
    renamed_[old_id] = new_id;
  }
  void require_token(const std::string& token) {
    std::lock_guard lock(mutex_);
    token_ = token;
  }
  // The next `count` bodies from /cdn/ stop after `bytes` bytes, the connection closed.
  void cut_downloads(int count, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    cuts_left_ = count;
    cut_after_ = bytes;
  }
  // /cdn/ sends bytes that do not match the sha256 the ETag names.
  void damage_downloads(bool damage) {
    std::lock_guard lock(mutex_);
    damage_ = damage;
  }
  // X-Error-Code on 401 and 404 answers (RepoNotFound, RevisionNotFound, EntryNotFound), as the hub sends.
  void send_error_codes(bool send) {
    std::lock_guard lock(mutex_);
    error_codes_ = send;
  }
  // No X-Repo-Commit header: a server that is not the hub.
  void omit_commit_header(bool omit) {
    std::lock_guard lock(mutex_);
    omit_commit_ = omit;
  }

  std::vector<HubRequestRecord> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  void forget_requests() {
    std::lock_guard lock(mutex_);
    requests_.clear();
  }

 private:
  struct Repo {
    std::map<std::string, std::map<std::string, std::string>> commits;
    std::map<std::string, std::string> branches;
  };
  struct Reply {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    bool cut = false;  // send only cut_after_ bytes of the body
  };

  static bool is_lfs(const std::string& name) { return name.ends_with(".safetensors"); }

  static std::string url_decoded(const std::string& text) {
    std::string decoded;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '%' && i + 2 < text.size()) {
        decoded += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += text[i];
      }
    }
    return decoded;
  }

  void serve() {
    while (!stop_) {
      pollfd waiting{listener_, POLLIN, 0};
      if (poll(&waiting, 1, 50) <= 0) continue;
      const int client = accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      timeval timeout{5, 0};
      setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
      handle(client);
      close(client);
    }
  }

  static std::string read_head(int client) {
    std::string head;
    char buffer[4096];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
      const ssize_t got = recv(client, buffer, sizeof(buffer), 0);
      if (got <= 0) break;
      head.append(buffer, static_cast<std::size_t>(got));
    }
    return head;
  }

  static void send_all(int client, const std::string& bytes) {
    for (std::size_t sent = 0; sent < bytes.size();) {
      const ssize_t wrote = send(client, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (wrote <= 0) return;
      sent += static_cast<std::size_t>(wrote);
    }
  }

  void handle(int client) {
    std::istringstream head(read_head(client));
    HubRequestRecord request;
    std::string line;
    std::getline(head, line);
    std::istringstream(line) >> request.method >> request.path;
    while (std::getline(head, line) && line != "\r") {
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon), value = line.substr(colon + 1);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      value.erase(0, value.find_first_not_of(' '));
      if (!value.empty() && value.back() == '\r') value.pop_back();
      if (name == "range") request.range = value;
      if (name == "authorization") request.authorization = value;
      if (name == "host") request.host = value;
    }
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    const Reply reply = request.path.starts_with("/cdn/") ? cdn(request) : resolve(request);
    respond(client, request, reply);
  }

  // What `status` with `code` (the hub's X-Error-Code) looks like.
  Reply error(int status, const std::string& code, const std::string& commit = "") const {
    Reply reply{.status = status, .headers = {}, .body = code + "\n"};
    if (error_codes_) reply.headers.emplace_back("X-Error-Code", code);
    if (!commit.empty()) reply.headers.emplace_back("X-Repo-Commit", commit);
    return reply;
  }

  Reply resolve(const HubRequestRecord& request) const {
    const std::size_t marker = request.path.find("/resolve/");
    if (marker == std::string::npos) return error(404, "RepoNotFound");
    if (!token_.empty() && request.authorization != "Bearer " + token_) return error(401, "GatedRepo");
    const std::string rest = request.path.substr(marker + 9);
    if (const auto renamed = renamed_.find(request.path.substr(1, marker - 1)); renamed != renamed_.end())
      return Reply{.status = 307, .headers = {{"Location", "/" + renamed->second + "/resolve/" + rest}}, .body = ""};
    const auto repo = repos_.find(request.path.substr(1, marker - 1));
    if (repo == repos_.end()) return error(404, "RepoNotFound");
    const std::string revision = url_decoded(rest.substr(0, rest.find('/')));
    const std::string filename = url_decoded(rest.substr(rest.find('/') + 1));
    const auto branch = repo->second.branches.find(revision);
    const std::string commit = branch != repo->second.branches.end() ? branch->second : revision;
    const auto files = repo->second.commits.find(commit);
    if (files == repo->second.commits.end()) return error(404, "RevisionNotFound");
    const auto file = files->second.find(filename);
    if (file == files->second.end()) return error(404, "EntryNotFound", commit);
    Reply reply;
    if (!omit_commit_) reply.headers.emplace_back("X-Repo-Commit", commit);
    if (!is_lfs(filename)) {
      reply.headers.emplace_back("ETag", "W/\"" + git_blob_sha1(file->second) + "\"");
      reply.body = file->second;
      return reply;
    }
    const std::string sha = sha256_hex(file->second);
    reply.status = 302;
    reply.headers.emplace_back("X-Linked-Etag", "\"" + sha + "\"");
    reply.headers.emplace_back("X-Linked-Size", std::to_string(file->second.size()));
    reply.headers.emplace_back("ETag", "\"" + sha + "\"");
    reply.headers.emplace_back("Location", "http://localhost:" + std::to_string(port_) + "/cdn/" + sha);
    return reply;
  }

  Reply cdn(const HubRequestRecord& request) {
    const auto blob = lfs_blobs_.find(request.path.substr(5));
    if (blob == lfs_blobs_.end()) return error(404, "EntryNotFound");
    Reply reply{.status = 200, .headers = {}, .body = blob->second};
    if (damage_) reply.body[reply.body.size() / 2] ^= 0x5a;
    reply.cut = request.method == "GET" && cuts_left_ > 0;
    if (reply.cut) --cuts_left_;
    return reply;
  }

  // Range "bytes=N-" gives the tail from N (206), past the end 416; otherwise the whole body.
  void respond(int client, const HubRequestRecord& request, Reply reply) const {
    const std::size_t size = reply.body.size();
    if (reply.status == 200 && request.range.starts_with("bytes=")) {
      const std::size_t from = std::stoull(request.range.substr(6));
      if (from >= size) {
        reply = Reply{.status = 416, .headers = {{"Content-Range", "bytes */" + std::to_string(size)}}, .body = ""};
      } else {
        reply.status = 206;
        reply.headers.emplace_back("Content-Range", "bytes " + std::to_string(from) + "-" + std::to_string(size - 1) +
                                                        "/" + std::to_string(size));
        reply.body = reply.body.substr(from);
      }
    }
    std::string text = "HTTP/1.1 " + std::to_string(reply.status) + " Status\r\nConnection: close\r\n";
    text += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
    for (const auto& [name, value] : reply.headers) text += name + ": " + value + "\r\n";
    text += "\r\n";
    send_all(client, text);
    if (request.method == "HEAD") return;
    send_all(client, reply.cut ? reply.body.substr(0, std::min(cut_after_, reply.body.size())) : reply.body);
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<std::string, Repo> repos_;
  std::map<std::string, std::string> renamed_;    // old id -> new id
  std::map<std::string, std::string> lfs_blobs_;  // sha256 -> bytes
  std::string token_;
  int cuts_left_ = 0;
  std::size_t cut_after_ = 0;
  bool damage_ = false;
  bool error_codes_ = true;
  bool omit_commit_ = false;
  std::vector<HubRequestRecord> requests_;
};

}  // namespace zt::testing

#endif  // ZT_HAVE_DOWNLOADER
