// One repo's folder in the hub cache, in the layout huggingface_hub writes and reads:
//
//   <cache>/models--Org--Name/
//     refs/<revision>                 the commit a branch or tag named when it was fetched
//     blobs/<etag>                    each file's bytes once, named by its ETag (sha256 for
//                                     LFS files, the git blob sha1 for others)
//     blobs/<etag>.incomplete         a download under way or cut off, resumed from its size
//     snapshots/<commit>/<filename>   a relative symlink to ../../blobs/<etag>
//     .no_exist/<commit>/<filename>   an empty file: the repo has no such file at that commit
//   <cache>/.locks/models--Org--Name/<etag>.lock   held while a blob is downloaded
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace zt::models::hub {

class RepoCache {
 public:
  RepoCache(const std::filesystem::path& cache, const std::string& repo_id);

  const std::filesystem::path& folder() const { return folder_; }

  // The commit `revision` stands for here: itself when it is a commit hash with a snapshot,
  // else what refs/<revision> holds; nothing when neither is cached.
  std::optional<std::string> commit_for(const std::string& revision) const;
  // Writes refs/<revision> (atomically); nothing when the revision is the commit itself. Like
  // record_absent, a cache that cannot be written (read-only, shared) only earns a warning.
  void record_ref(const std::string& revision, const std::string& commit) const;

  std::filesystem::path snapshot(const std::string& commit) const;
  bool has_file(const std::string& commit, const std::string& filename) const;
  bool known_absent(const std::string& commit, const std::string& filename) const;
  void record_absent(const std::string& commit, const std::string& filename) const;

  std::filesystem::path blob(const std::string& etag) const;
  std::filesystem::path partial_blob(const std::string& etag) const;
  std::filesystem::path lock_file(const std::string& etag) const;
  // snapshots/<commit>/<filename> -> the blob, replacing any link there in one rename.
  void link(const std::string& commit, const std::string& filename, const std::string& etag) const;

 private:
  std::filesystem::path cache_;
  std::string folder_name_;
  std::filesystem::path folder_;
};

// Names a server sends become paths here: a commit must be a commit hash, an ETag plain
// letters, digits, - _ . and a file name relative with no "..". Each throws zt::Error naming
// what `source` sent otherwise.
void check_commit_name(const std::string& commit, const std::string& source);
void check_etag_name(const std::string& etag, const std::string& source);
void check_file_name(const std::string& filename, const std::string& source);

}  // namespace zt::models::hub
