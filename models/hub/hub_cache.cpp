#include "models/hub/hub_cache.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <fstream>
#include <sstream>

#include "models/hub/repo_id.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::models::hub {
namespace {

namespace fs = std::filesystem;

// create_directories with the path named in the error, instead of a raw filesystem message.
void make_folder(const fs::path& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  ZT_REQUIRE(!ec, "cannot create " + folder.string() + " in the hub cache: " + ec.message() +
                      "; set HF_HUB_CACHE to a writable folder");
}

std::string read_trimmed(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string value = text.str();
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
  return value;
}

}  // namespace

void check_commit_name(const std::string& commit, const std::string& source) {
  ZT_REQUIRE(is_commit_hash(commit), source + " names commit '" + commit + "', which is not a 40-digit commit hash");
}

void check_etag_name(const std::string& etag, const std::string& source) {
  bool plain = !etag.empty() && etag != "." && etag != "..";
  for (char c : etag)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  ZT_REQUIRE(plain, source + " gives the ETag '" + etag + "', which cannot name a file in the hub cache");
}

void check_file_name(const std::string& filename, const std::string& source) {
  const fs::path path(filename);
  bool plain = !filename.empty() && path.is_relative() && filename.find('\\') == std::string::npos;
  for (const fs::path& part : path) plain = plain && part != ".." && part != "." && !part.empty();
  ZT_REQUIRE(plain, source + " names the file '" + filename + "', which is not a plain relative path");
}

RepoCache::RepoCache(const fs::path& cache, const std::string& repo_id)
    : cache_(cache), folder_name_(repo_folder_name(repo_id)), folder_(cache / folder_name_) {}

std::optional<std::string> RepoCache::commit_for(const std::string& revision) const {
  std::error_code ec;
  if (is_commit_hash(revision) && fs::is_directory(snapshot(revision), ec)) return revision;
  const fs::path ref = folder_ / "refs" / revision;
  if (!fs::is_regular_file(ref, ec)) return std::nullopt;
  const std::string commit = read_trimmed(ref);
  check_commit_name(commit, ref.string());
  return commit;
}

void RepoCache::record_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  const fs::path ref = folder_ / "refs" / revision;
  try {
    make_folder(ref.parent_path());
    write_file_atomically(ref.string(), commit);
  } catch (const Error& e) {
    // A cache others share may be read-only: this run goes on at the commit it was given.
    ZT_LOG(kWarn, "cannot record " << revision << " = " << commit << " in the hub cache: " << e.what());
  }
}

fs::path RepoCache::snapshot(const std::string& commit) const { return folder_ / "snapshots" / commit; }

bool RepoCache::has_file(const std::string& commit, const std::string& filename) const {
  std::error_code ec;
  return fs::is_regular_file(snapshot(commit) / filename, ec);
}

bool RepoCache::known_absent(const std::string& commit, const std::string& filename) const {
  std::error_code ec;
  return fs::exists(folder_ / ".no_exist" / commit / filename, ec);
}

void RepoCache::record_absent(const std::string& commit, const std::string& filename) const {
  // Only a shortcut for the next run: a cache that cannot take it (read-only) is not an error.
  const fs::path marker = folder_ / ".no_exist" / commit / filename;
  std::error_code ec;
  fs::create_directories(marker.parent_path(), ec);
  std::ofstream{marker};
}

fs::path RepoCache::blob(const std::string& etag) const { return folder_ / "blobs" / etag; }

fs::path RepoCache::partial_blob(const std::string& etag) const { return folder_ / "blobs" / (etag + ".incomplete"); }

fs::path RepoCache::lock_file(const std::string& etag) const {
  const fs::path lock = cache_ / ".locks" / folder_name_ / (etag + ".lock");
  make_folder(lock.parent_path());
  return lock;
}

void RepoCache::link(const std::string& commit, const std::string& filename, const std::string& etag) const {
  const fs::path target = snapshot(commit) / filename;
  make_folder(target.parent_path());
  // From snapshots/<commit>/<dirs...>/ back up to the repo folder, then into blobs/.
  const fs::path relative = blob(etag).lexically_relative(target.parent_path());
  static std::atomic<unsigned> links_made{0};
  const fs::path temporary =
      target.string() + ".link-" + std::to_string(::getpid()) + "-" + std::to_string(links_made++);
  std::error_code ec;
  fs::remove(temporary, ec);
  fs::create_symlink(relative, temporary, ec);
  if (!ec) fs::rename(temporary, target, ec);
  ZT_REQUIRE(!ec, "cannot link " + target.string() + " to its blob " + blob(etag).string() + ": " + ec.message());
}

}  // namespace zt::models::hub
