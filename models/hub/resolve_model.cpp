#include "models/hub/resolve_model.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "models/hub/hub_cache.h"
#include "models/hub/hub_errors.h"
#include "models/hub/hub_http.h"
#include "models/hub/repo_downloader.h"
#include "models/hub/repo_id.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/terminal/closest_name.h"

namespace zt::models::hub {
namespace {

// A snapshot as the cache alone has it. A file is settled when it is there or known absent
// (.no_exist/); a snapshot with every file settled needs no request at all.
class CachedSnapshot : public SnapshotFiles {
 public:
  CachedSnapshot(const RepoCache& cache, std::string commit) : cache_(cache), commit_(std::move(commit)) {}

  bool provide(const std::string& filename) override {
    if (cache_.has_file(commit_, filename)) return true;
    if (!cache_.known_absent(commit_, filename)) ++unsettled_;
    return false;
  }
  void missing(const std::string& filename, const std::string& why) override {
    if (!missing_) missing_ = filename + " (" + why + ")";
  }
  std::filesystem::path folder() const override { return cache_.snapshot(commit_); }

  bool settled() const { return unsettled_ == 0 && !missing_; }
  const std::optional<std::string>& missing_file() const { return missing_; }

 private:
  const RepoCache& cache_;
  std::string commit_;
  int unsettled_ = 0;
  std::optional<std::string> missing_;
};

std::string described(const std::string& repo_id, const std::string& revision) {
  return repo_id + " (revision " + revision + ")";
}

[[noreturn]] void fail_offline(const std::string& repo_id, const std::string& revision, const RepoCache& cache,
                               const std::string& problem) {
  fail("offline mode (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set) and " + described(repo_id, revision) + " " +
       problem + " in the hub cache " + cache.folder().string() + "; '" + repo_id +
       "' is not a local folder either. Run once with the network to download it, or download it by hand: " +
       manual_download_hint(repo_id, revision));
}

[[noreturn]] void fail_without_downloader(const std::string& repo_id, const std::string& revision,
                                          const RepoCache& cache) {
  fail(described(repo_id, revision) + " is not a local folder, nor complete in the hub cache " +
       cache.folder().string() +
       ", and this zerotune was built without the downloader (libcurl). Download the model by hand: " +
       manual_download_hint(repo_id, revision) + "; or install libcurl4-openssl-dev and rebuild zerotune");
}

// The nearest existing folder on the way to `path` (its deepest existing ancestor), "." for a
// relative path none of whose parts exists.
std::filesystem::path nearest_existing_folder(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path at = path.lexically_normal();
  while (at.has_relative_path() && !at.empty() && !std::filesystem::is_directory(at, ec)) at = at.parent_path();
  return at.empty() ? std::filesystem::path(".") : at;
}

// The folder in `folder` whose name is close to `name`'s, when there is one.
std::optional<std::filesystem::path> close_folder(const std::filesystem::path& folder, const std::string& name) {
  std::error_code ec;
  std::vector<std::string> entries;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) entries.push_back(it->path().filename().string());
  const std::optional<std::string> close = closest_name(name, entries);
  if (!close) return std::nullopt;
  return folder == "." ? std::filesystem::path(".") / *close : folder / *close;
}

// A local path (models/hub/repo_id.h tells) that is not a folder: what is there instead, the
// nearest folder that exists on its way, and the closest name in it.
[[noreturn]] void fail_no_folder(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    fail(path + " is a file, not a model folder: give the folder that holds config.json and the weights");
  if (path.front() == '~')
    fail("no such folder: " + path +
         " (zerotune does not expand ~: leave it unquoted for the shell to expand, or "
         "write the path out)");
  const std::filesystem::path missing = std::filesystem::path(path).lexically_normal();
  const std::filesystem::path nearest = nearest_existing_folder(missing.parent_path());
  const std::filesystem::path rest = missing.lexically_relative(nearest);
  const std::string next = (rest.empty() ? missing.filename() : *rest.begin()).string();
  const std::optional<std::filesystem::path> close = close_folder(nearest, next);
  fail("no such folder: " + path + " (" + (nearest == "." ? std::string("the current folder") : nearest.string()) +
       " has no " + next + (close ? "; did you mean " + close->string() + "?" : std::string()) +
       "); give the path of a model folder, or a hub id such as Qwen/Qwen2.5-0.5B");
}

// The snapshot folder of hub id `name_or_path` at `wanted`, from the cache or downloaded into it.
std::string resolve_hub_id(const std::string& name_or_path, const std::string& wanted, ModelParts parts,
                           const HubSettings& settings) {
  const std::filesystem::path revision_path(wanted);
  ZT_REQUIRE(
      revision_path.is_relative() && std::find(revision_path.begin(), revision_path.end(), "..") == revision_path.end(),
      "--revision " + wanted + ": a branch, tag or commit neither starts with '/' nor has '..' in it");
  const RepoCache cache(settings.cache, name_or_path);
  std::optional<std::string> usable;  // a cached snapshot with every file the model needs
  if (const std::optional<std::string> commit = cache.commit_for(wanted)) {
    CachedSnapshot snapshot(cache, *commit);
    collect_model_files(snapshot, parts);
    if (!snapshot.missing_file()) usable = snapshot.folder().string();
    if (snapshot.settled() || (settings.offline && usable)) return snapshot.folder().string();
    if (settings.offline) fail_offline(name_or_path, wanted, cache, "has no " + *snapshot.missing_file());
  } else if (settings.offline) {
    fail_offline(name_or_path, wanted, cache, "is not");
  }
  if (!downloader_available()) {
    if (usable) return *usable;  // what is cached is all this build can offer
    fail_without_downloader(name_or_path, wanted, cache);
  }
  RepoDownloader downloader(settings, cache, name_or_path, wanted);
  try {
    collect_model_files(downloader, parts);
  } catch (const HubUnreachableError& e) {
    if (!usable) throw;
    ZT_LOG(kWarn, "using the cached snapshot " << *usable << " of " << described(name_or_path, wanted)
                                               << ": the hub is out of reach (" << e.what()
                                               << "). HF_HUB_OFFLINE=1 skips the attempt");
    return *usable;
  }
  return downloader.folder().string();
}

}  // namespace

std::string resolve_model_path(const std::string& name_or_path, const std::string& revision, ModelParts parts) {
  // A local folder needs no hub settings, so a stray HF_ENDPOINT cannot fail its command.
  const bool hub = is_hub_model_id(name_or_path);
  return resolve_model_path(name_or_path, revision, parts, hub ? hub_settings_from_environment() : HubSettings{});
}

std::string resolve_model_path(const std::string& name_or_path, const std::string& revision, ModelParts parts,
                               const HubSettings& settings) {
  const std::string wanted = revision.empty() ? "main" : revision;
  if (!is_hub_model_id(name_or_path)) {
    std::error_code ec;
    if (!std::filesystem::is_directory(name_or_path, ec)) fail_no_folder(name_or_path);
    if (wanted != "main")
      ZT_LOG(kWarn, "--revision " << wanted << " is ignored: " << name_or_path << " is a local folder");
    return name_or_path;
  }
  try {
    return resolve_hub_id(name_or_path, wanted, parts, settings);
  } catch (const Error& e) {
    // `qwen-7b` for the local folder qwen_7b reads as a hub id: name the folder it may mean.
    const std::optional<std::filesystem::path> close =
        name_or_path.find('/') == std::string::npos ? close_folder(".", name_or_path) : std::nullopt;
    if (!close) throw;
    fail(std::string(e.what()) + ". Or did you mean the local folder " + close->string() + "?");
  }
}

}  // namespace zt::models::hub
