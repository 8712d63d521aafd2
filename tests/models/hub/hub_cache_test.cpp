// Hub ids resolved from the cache alone, with no server: what is a hub id, the settings the
// environment gives, and resolution against a cache laid out by hand as huggingface_hub lays it
// out (refs/, snapshots/ linking into blobs/, .no_exist/), at a branch and at a commit hash.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "models/hub/download_progress.h"
#include "models/hub/hub_http.h"
#include "models/hub/repo_id.h"
#include "models/hub/resolve_model.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

namespace zt::models::hub {
namespace {

namespace fs = std::filesystem;

const std::string kMain = "1111111111111111111111111111111111111111";
const std::string kDev = "2222222222222222222222222222222222222222";

using testing::error_of;

using testing::ScopedEnvironment;

TEST(HubModelId, PathsStayPathsAndOrgNameIsAnId) {
  EXPECT_TRUE(is_hub_model_id("Qwen/Qwen2.5-0.5B"));
  EXPECT_TRUE(is_hub_model_id("THUDM/chatglm3-6b"));
  EXPECT_TRUE(is_hub_model_id("gpt2"));
  for (const char* path : {"/models/qwen", "./qwen", "../qwen", "~/qwen", "a/b/c", "Org/Name/", "Org--x/Name",
                           "Org/Na..me", "-Org/Name", "Org/Name-", "", "Org/Na me"})
    EXPECT_FALSE(is_hub_model_id(path)) << path;
  EXPECT_FALSE(is_hub_model_id(std::string(97, 'a')));
  // A folder that exists is a folder, whatever its name looks like.
  const fs::path cwd = fs::current_path();
  fs::current_path(ZT_SOURCE_DIR);
  EXPECT_FALSE(is_hub_model_id("examples/tiny-qwen"));
  // So is one whose first part exists: the rest is a mistyped path, not a repo.
  EXPECT_FALSE(is_hub_model_id("examples/tiny-qwn"));
  EXPECT_TRUE(is_hub_model_id("Qwen/tiny-qwen")) << "no folder Qwen here";
  fs::current_path(cwd);
}

TEST(HubModelId, CacheFolderAndUrlNames) {
  EXPECT_EQ(repo_folder_name("Qwen/Qwen2.5-0.5B"), "models--Qwen--Qwen2.5-0.5B");
  EXPECT_EQ(repo_folder_name("gpt2"), "models--gpt2");
  EXPECT_TRUE(is_commit_hash(kMain));
  EXPECT_FALSE(is_commit_hash("main"));
  EXPECT_FALSE(is_commit_hash("ABCDEF1111111111111111111111111111111111"));
  EXPECT_EQ(url_escaped("refs/pr/1", false), "refs%2Fpr%2F1");
  EXPECT_EQ(url_escaped("sub dir/a+b.json", true), "sub%20dir/a%2Bb.json");
}

TEST(HubSettings, ReadFromTheEnvironmentAsHuggingfaceHubReadsThem) {
  const ScopedEnvironment cleared({{"HOME", "/home/user"},
                                   {"HF_HUB_CACHE", ""},
                                   {"HUGGINGFACE_HUB_CACHE", ""},
                                   {"XDG_CACHE_HOME", ""},
                                   {"HF_TOKEN", ""},
                                   {"HUGGING_FACE_HUB_TOKEN", ""},
                                   {"HF_ENDPOINT", ""},
                                   {"HF_HUB_OFFLINE", ""},
                                   {"TRANSFORMERS_OFFLINE", ""}});
  {
    const ScopedEnvironment hf_home("HF_HOME", "");
    const HubSettings settings = hub_settings_from_environment();
    EXPECT_EQ(settings.cache, fs::path("/home/user/.cache/huggingface/hub"));
    EXPECT_EQ(settings.endpoint, "https://huggingface.co");
    EXPECT_FALSE(settings.offline);
  }
  const fs::path dir = testing::test_folder("hub_cache", true);
  std::ofstream(dir / "token") << "hf_from_file\n";
  const ScopedEnvironment hf_home("HF_HOME", dir.string());
  EXPECT_EQ(hub_settings_from_environment().cache, dir / "hub");
  EXPECT_EQ(hub_settings_from_environment().token, "hf_from_file");  // as `huggingface-cli login` left it
  {
    const ScopedEnvironment set({{"HF_HUB_CACHE", "~/hub-cache"},
                                 {"HF_TOKEN", "hf_abc"},
                                 {"HF_ENDPOINT", "https://hf-mirror.com/"},
                                 {"TRANSFORMERS_OFFLINE", "yes"}});
    const HubSettings settings = hub_settings_from_environment();
    EXPECT_EQ(settings.cache, fs::path("/home/user/hub-cache"));
    EXPECT_EQ(settings.token, "hf_abc");
    EXPECT_EQ(settings.endpoint, "https://hf-mirror.com");
    EXPECT_TRUE(settings.offline);
  }
  const ScopedEnvironment endpoint("HF_ENDPOINT", "hf-mirror.com");
  EXPECT_NE(error_of([] { hub_settings_from_environment(); }).find("HF_ENDPOINT=hf-mirror.com: expected"),
            std::string::npos);
  fs::remove_all(dir);
}

// A cache laid out by hand, as huggingface_hub leaves it: main and dev point at two commits
// whose snapshots link into blobs/.
class HandMadeCache : public testing::FolderTest {
 protected:
  void SetUp() override {
    FolderTest::SetUp();
    repo_ = dir_ / "models--org--tiny";
    fs::create_directories(repo_ / "refs");
    std::ofstream(repo_ / "refs/main") << kMain;  // huggingface_hub writes no newline
    std::ofstream(repo_ / "refs/dev") << kDev << "\n";
    add_file(kMain, "config.json", "{\"model_type\": \"qwen2\"}", "aaa1");
    add_file(kMain, "tokenizer.json", "{}", "aaa2");
    add_file(kMain, "model.safetensors", "weights", std::string(64, 'b'));
    add_file(kDev, "config.json", "{\"model_type\": \"qwen3\"}", "ddd1");
    settings_.cache = dir_;
    settings_.endpoint = "http://127.0.0.1:" + std::to_string(testing::free_loopback_port());  // nobody there
  }

  void add_file(const std::string& commit, const std::string& name, const std::string& bytes, const std::string& etag) {
    fs::create_directories(repo_ / "blobs");
    fs::create_directories(repo_ / "snapshots" / commit);
    std::ofstream(repo_ / "blobs" / etag) << bytes;
    fs::create_symlink(fs::path("../../blobs") / etag, repo_ / "snapshots" / commit / name);
  }

  // Marks every optional file the cache lacks as absent, as a resolution that asked leaves it.
  void mark_absent(const std::string& commit) {
    for (const char* name :
         {"generation_config.json", "tokenizer_config.json", "vocab.json", "merges.txt", "tokenizer.model",
          "special_tokens_map.json", "added_tokens.json", "chat_template.jinja", "chat_template.json"}) {
      fs::create_directories(repo_ / ".no_exist" / commit);
      std::ofstream(repo_ / ".no_exist" / commit / name);
    }
  }

  fs::path repo_;
  HubSettings settings_;
};

TEST_F(HandMadeCache, OfflineResolvesTheSnapshotOfABranchOrACommit) {
  settings_.offline = true;
  EXPECT_EQ(resolve_model_path("org/tiny", "main", kWholeModel, settings_), (repo_ / "snapshots" / kMain).string());
  EXPECT_EQ(resolve_model_path("org/tiny", "", kWholeModel, settings_), (repo_ / "snapshots" / kMain).string());
  EXPECT_EQ(resolve_model_path("org/tiny", "dev", kConfigOnly, settings_), (repo_ / "snapshots" / kDev).string());
  EXPECT_EQ(resolve_model_path("org/tiny", kMain, kWholeModel, settings_), (repo_ / "snapshots" / kMain).string());
  std::ifstream config(fs::path(resolve_model_path("org/tiny", "dev", kConfigOnly, settings_)) / "config.json");
  std::string text;
  std::getline(config, text);
  EXPECT_EQ(text, "{\"model_type\": \"qwen3\"}");
}

TEST_F(HandMadeCache, OfflineNamesWhatIsMissing) {
  settings_.offline = true;
  std::string message = error_of([&] { resolve_model_path("org/tiny", "dev", kWholeModel, settings_); });
  EXPECT_NE(message.find("offline mode"), std::string::npos) << message;
  EXPECT_NE(message.find("org/tiny (revision dev) has no model.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("huggingface-cli download org/tiny --revision dev --local-dir DIR"), std::string::npos)
      << message;
  message = error_of([&] { resolve_model_path("org/tiny", "v2", kWholeModel, settings_); });
  EXPECT_NE(message.find("org/tiny (revision v2) is not in the hub cache " + repo_.string()), std::string::npos)
      << message;
  message = error_of([&] { resolve_model_path("org/other", "main", kWholeModel, settings_); });
  EXPECT_NE(message.find("'org/other' is not a local folder either"), std::string::npos) << message;
}

TEST_F(HandMadeCache, ASettledSnapshotNeedsNoNetwork) {
  // Nothing listens at the endpoint: any request would fail the resolution.
  mark_absent(kMain);
  EXPECT_EQ(resolve_model_path("org/tiny", "main", kWholeModel, settings_), (repo_ / "snapshots" / kMain).string());
}

TEST_F(HandMadeCache, WithTheHubOutOfReachACompleteSnapshotStandsIn) {
  // Optional files unsettled: the hub is asked, does not answer, and the cache serves, as
  // huggingface_hub falls back to it.
  EXPECT_EQ(resolve_model_path("org/tiny", "main", kWholeModel, settings_), (repo_ / "snapshots" / kMain).string());
  // dev lacks the weights: only the hub has them.
  const std::string message = error_of([&] { resolve_model_path("org/tiny", "dev", kWholeModel, settings_); });
  if (downloader_available()) {
    EXPECT_NE(message.find("cannot download config.json of org/tiny (revision dev) from " + settings_.endpoint +
                           "/org/tiny/resolve/dev/config.json: "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("huggingface-cli download org/tiny --revision dev --local-dir DIR"), std::string::npos)
        << message;
  } else {
    EXPECT_NE(message.find("built without the downloader (libcurl)"), std::string::npos) << message;
  }
}

TEST_F(HandMadeCache, ARevisionCannotLeaveTheRepoFolder) {
  settings_.offline = true;
  for (const char* revision : {"../../../etc", "/abs", "refs/../../x"}) {
    const std::string message = error_of([&] { resolve_model_path("org/tiny", revision, kWholeModel, settings_); });
    EXPECT_NE(message.find(std::string("--revision ") + revision + ": a branch, tag or commit neither starts"),
              std::string::npos)
        << message;
  }
  // A pull request's ref nests, as huggingface_hub stores it.
  fs::create_directories(repo_ / "refs/refs/pr");
  std::ofstream(repo_ / "refs/refs/pr/1") << kDev;
  EXPECT_EQ(resolve_model_path("org/tiny", "refs/pr/1", kConfigOnly, settings_), (repo_ / "snapshots" / kDev).string());
}

TEST_F(HandMadeCache, LocalPathsAreReturnedAsGiven) {
  fs::create_directories(dir_ / "models/qwen-7b");
  for (const std::string& path : std::vector<std::string>{dir_.string(), (dir_ / "models/qwen-7b").string()})
    EXPECT_EQ(resolve_model_path(path, "main", kWholeModel, settings_), path);
}

void expect_parts(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in " << message;
}

// A local path that is no folder is said to be one, with what does exist on its way and the
// closest name there, never tried on the hub (whose error would be about the network).
TEST_F(HandMadeCache, AMistypedLocalPathIsNoSuchFolder) {
  fs::create_directories(dir_ / "models/qwen-7b");
  std::ofstream(dir_ / "models/config.json") << "{}";
  const std::string mistyped = (dir_ / "models/qwen-7c").string();
  expect_parts(error_of([&] { resolve_model_path(mistyped, "main", kWholeModel, settings_); }),
               {"no such folder: " + mistyped, (dir_ / "models").string() + " has no qwen-7c",
                "did you mean " + (dir_ / "models/qwen-7b").string() + "?"});
  expect_parts(
      error_of([&] { resolve_model_path((dir_ / "modles/qwen-7b").string(), "main", kWholeModel, settings_); }),
      {dir_.string() + " has no modles", "did you mean " + (dir_ / "models").string() + "?"});
  expect_parts(error_of([&] { resolve_model_path("/no/such/model", "main", kWholeModel, settings_); }),
               {"no such folder: /no/such/model", "/ has no no"});
  expect_parts(
      error_of([&] { resolve_model_path((dir_ / "models/config.json").string(), "main", kWholeModel, settings_); }),
      {"is a file, not a model folder"});
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  const std::string message = error_of([&] { resolve_model_path("models/qwen7b", "main", kWholeModel, settings_); });
  fs::current_path(cwd);
  EXPECT_NE(message.find("no such folder: models/qwen7b (models has no qwen7b; did you mean models/qwen-7b?)"),
            std::string::npos)
      << message;
}

TEST(DownloadProgressLine, ShowsShareBytesTimeAndSpeed) {
  EXPECT_EQ(progress_bar_line({.label = "model.safetensors",
                               .held = 512 * 1024,
                               .total = 1024 * 1024,
                               .resumed_from = 0,
                               .elapsed_seconds = 2.0}),
            "model.safetensors 50%|##########          | 512.00 KiB/1.00 MiB [00:02<00:02, 256.00 KiB/s]");
  // Bytes held from an earlier run count towards the share, not the speed.
  EXPECT_EQ(progress_bar_line({.label = "a", .held = 300, .total = 400, .resumed_from = 200, .elapsed_seconds = 1.0}),
            "a 75%|###############     | 300 B/400 B [00:01<00:01, 100 B/s]");
  EXPECT_EQ(progress_bar_line({.label = "b", .held = 10, .total = 0, .resumed_from = 0, .elapsed_seconds = 0.0}),
            "b 10 B [00:00]");
}

}  // namespace
}  // namespace zt::models::hub
