// Brings the files of one revision of a hub repo into the cache, one at a time, as
// huggingface_hub's hf_hub_download does: a HEAD request on
// {endpoint}/{repo}/resolve/{revision}/{file} gives the commit (X-Repo-Commit), the blob's
// name (X-Linked-Etag or ETag) and size, and for LFS files a redirect to the CDN; the bytes
// then go to blobs/<etag>.incomplete (resumed with a Range request when a download was cut),
// are checked against the size and, for LFS files, the sha256 the ETag is, renamed into
// blobs/<etag>, and linked from snapshots/<commit>/<file>. The first answer pins the commit:
// every later file comes from that commit, so one resolution never mixes two.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/hub/hub_cache.h"
#include "models/hub/hub_errors.h"
#include "models/hub/hub_settings.h"
#include "models/hub/model_files.h"

namespace zt::models::hub {

class RepoDownloader : public SnapshotFiles {
 public:
  RepoDownloader(const HubSettings& settings, const RepoCache& cache, std::string repo_id, std::string revision);

  // True when `filename` is in the snapshot: it was already, or it is now. False when the repo
  // has no such file (a 404), which is remembered in .no_exist/. Other failures throw.
  bool provide(const std::string& filename) override;
  // Throws the 404 message of the file's last request.
  void missing(const std::string& filename, const std::string& why) override;
  std::filesystem::path folder() const override;

 private:
  struct Metadata {
    std::string etag;
    std::string download_url;  // the CDN's URL of an LFS file, else the resolve URL
    std::uint64_t size = 0;    // 0: not given
  };

  FileRequest request_for(const std::string& filename) const;
  std::optional<Metadata> metadata(const std::string& filename);  // nothing: the repo has no such file
  void pin(const std::string& commit, const FileRequest& request);
  void download_blob(const FileRequest& request, const Metadata& metadata) const;
  // One GET into the partial blob; false when it was cut (the partial blob keeps what came).
  bool download_attempt(const FileRequest& request, const Metadata& metadata, std::string& error) const;
  void verify_and_place(const FileRequest& request, const Metadata& metadata) const;

  const HubSettings& settings_;
  const RepoCache& cache_;
  std::string repo_id_;
  std::string revision_;
  std::optional<std::string> commit_;
  std::optional<HttpReply> last_not_found_;
};

}  // namespace zt::models::hub
