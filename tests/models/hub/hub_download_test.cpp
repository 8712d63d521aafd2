// Hub ids downloaded from a hub of the test's own on loopback (tests/common/loopback_hub_server.h),
// serving examples/tiny-qwen: the cache layout huggingface_hub writes, no request for what
// the cache settles, resumed downloads, checksums, tokens kept from other hosts, revisions,
// and the messages of 401, 404, offline mode and an unreachable hub.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "models/hub/resolve_model.h"
#include "runtime/error.h"
#include "tests/common/loopback_hub_server.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

#if ZT_HAVE_DOWNLOADER

namespace zt::models::hub {
namespace {

namespace fs = std::filesystem;
using testing::LoopbackHub;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";
const std::string kDevCommit = "fedcba9876543210fedcba9876543210fedcba98";
const fs::path kTinyQwen = fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen";

using testing::error_of;

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class HubDownload : public testing::FolderTest {
 protected:
  void SetUp() override {
    FolderTest::SetUp();
    files_ = testing::files_of_folder(kTinyQwen);
    hub_.add_commit("org/tiny-qwen", kCommit, files_);
    settings_.endpoint = hub_.endpoint();
    settings_.cache = dir_ / "cache";
    repo_ = settings_.cache / "models--org--tiny-qwen";
    settings_.progress_bars = false;
    settings_.metadata_timeout = settings_.stall_timeout = std::chrono::seconds(5);
  }

  std::string resolve(const std::string& revision = "main", ModelParts parts = kWholeModel) {
    return resolve_model_path("org/tiny-qwen", revision, parts, settings_);
  }
  int requests_for(const std::string& path_start, const std::string& method = "GET") const {
    int count = 0;
    for (const auto& request : hub_.requests())
      count += request.method == method && request.path.starts_with(path_start);
    return count;
  }

  LoopbackHub hub_;
  std::map<std::string, std::string> files_;
  HubSettings settings_;
  fs::path repo_;  // the repo's folder in the cache
};

TEST_F(HubDownload, WritesTheLayoutHuggingfaceHubWrites) {
  const fs::path snapshot = resolve();
  const fs::path& repo = repo_;
  EXPECT_EQ(snapshot, repo / "snapshots" / kCommit);
  EXPECT_EQ(bytes_of(repo / "refs/main"), kCommit);
  ASSERT_EQ(files_.size(), 5u);
  for (const auto& [name, bytes] : files_) {
    const fs::path link = snapshot / name;
    ASSERT_TRUE(fs::is_symlink(link)) << name;
    const std::string etag =
        name.ends_with(".safetensors") ? testing::sha256_hex(bytes) : testing::git_blob_sha1(bytes);
    EXPECT_EQ(fs::read_symlink(link), fs::path("../../blobs") / etag) << name;
    EXPECT_EQ(bytes_of(link), bytes) << name;
  }
  // Optional files the repo lacks are remembered as absent; nothing half-written is left.
  for (const char* absent : {"vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja"})
    EXPECT_TRUE(fs::exists(repo / ".no_exist" / kCommit / absent)) << absent;
  for (const auto& entry : fs::directory_iterator(repo / "blobs"))
    EXPECT_FALSE(entry.path().string().ends_with(".incomplete")) << entry.path();
  EXPECT_TRUE(fs::exists(dir_ / "cache/.locks/models--org--tiny-qwen"));
}

TEST_F(HubDownload, ASecondResolutionMakesNoRequest) {
  const std::string first = resolve();
  hub_.forget_requests();
  EXPECT_EQ(resolve(), first);
  EXPECT_EQ(resolve("main", kTokenizerOnly), first);
  EXPECT_TRUE(hub_.requests().empty()) << hub_.requests().size() << " requests, the first " << hub_.requests()[0].path;
}

TEST_F(HubDownload, TheTokenizerAloneLeavesTheWeights) {
  const fs::path snapshot = resolve("main", kTokenizerOnly);
  EXPECT_TRUE(fs::exists(snapshot / "tokenizer.json"));
  EXPECT_FALSE(fs::exists(snapshot / "model.safetensors"));
  EXPECT_EQ(requests_for("/cdn/"), 0);
  resolve();  // the weights join the same snapshot later
  EXPECT_TRUE(fs::exists(snapshot / "model.safetensors"));
}

TEST_F(HubDownload, TheTokenGoesToTheHubAndNotToTheCdn) {
  hub_.require_token("hf_secret");
  settings_.token = "hf_secret";
  resolve();
  int to_cdn = 0;
  for (const auto& request : hub_.requests()) {
    if (request.path.starts_with("/cdn/")) {
      ++to_cdn;
      EXPECT_EQ(request.authorization, "") << "the token went to " << request.host;
      EXPECT_TRUE(request.host.starts_with("localhost:")) << request.host;
    } else {
      EXPECT_EQ(request.authorization, "Bearer hf_secret") << request.path;
    }
  }
  EXPECT_EQ(to_cdn, 1);
}

TEST_F(HubDownload, ACutDownloadResumesWithARangeRequest) {
  hub_.cut_downloads(1, 100);
  const fs::path snapshot = resolve();
  EXPECT_EQ(bytes_of(snapshot / "model.safetensors"), files_.at("model.safetensors"));
  std::vector<std::string> ranges;
  for (const auto& request : hub_.requests())
    if (request.path.starts_with("/cdn/")) ranges.push_back(request.range);
  EXPECT_EQ(ranges, (std::vector<std::string>{"", "bytes=100-"}));
}

TEST_F(HubDownload, ADownloadCutEveryTimeIsKeptForTheNextRun) {
  hub_.cut_downloads(5, 100);  // each of the five attempts gets 100 more bytes
  const std::string message = error_of([&] { resolve(); });
  EXPECT_NE(message.find("cannot download model.safetensors of org/tiny-qwen (revision main) from " + hub_.endpoint() +
                         "/org/tiny-qwen/resolve/" + kCommit + "/model.safetensors"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("tried 5 times; the 500 B received are kept in"), std::string::npos) << message;
  const fs::path partial = repo_ / "blobs" / (testing::sha256_hex(files_.at("model.safetensors")) + ".incomplete");
  EXPECT_EQ(fs::file_size(partial), 500u);
  hub_.forget_requests();
  const fs::path snapshot = resolve();
  EXPECT_EQ(bytes_of(snapshot / "model.safetensors"), files_.at("model.safetensors"));
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_EQ(hub_.requests().back().range, "bytes=500-");
}

TEST_F(HubDownload, ADamagedDownloadNeverEntersTheCache) {
  hub_.damage_downloads(true);
  const std::string message = error_of([&] { resolve(); });
  EXPECT_NE(message.find("the download of model.safetensors of org/tiny-qwen from http://localhost:"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("is damaged: its sha256 is"), std::string::npos) << message;
  EXPECT_NE(message.find("It was removed; run the command again"), std::string::npos) << message;
  const std::string sha = testing::sha256_hex(files_.at("model.safetensors"));
  EXPECT_FALSE(fs::exists(repo_ / "blobs" / sha));
  EXPECT_FALSE(fs::exists(repo_ / "blobs" / (sha + ".incomplete")));
  hub_.damage_downloads(false);
  EXPECT_EQ(bytes_of(fs::path(resolve()) / "model.safetensors"), files_.at("model.safetensors"));
}

TEST_F(HubDownload, RevisionsByBranchAndByCommit) {
  std::map<std::string, std::string> dev = files_;
  dev["config.json"] = "{\"model_type\": \"qwen2\", \"note\": \"dev\"}";
  hub_.add_commit("org/tiny-qwen", kDevCommit, dev);
  hub_.set_branch("org/tiny-qwen", "dev", kDevCommit);
  const fs::path on_dev = resolve("dev");
  EXPECT_EQ(on_dev, repo_ / "snapshots" / kDevCommit);
  EXPECT_EQ(bytes_of(repo_ / "refs/dev"), kDevCommit);
  EXPECT_EQ(bytes_of(on_dev / "config.json"), dev["config.json"]);
  // The weights are the same blob: linked again, not downloaded again.
  EXPECT_EQ(requests_for("/cdn/"), 1);
  const fs::path at_commit = resolve(kCommit);
  EXPECT_EQ(at_commit, repo_ / "snapshots" / kCommit);
  EXPECT_FALSE(fs::exists(repo_ / "refs" / kCommit));  // a commit hash needs no ref
  EXPECT_EQ(bytes_of(at_commit / "config.json"), files_.at("config.json"));
  EXPECT_EQ(requests_for("/cdn/"), 1);
}

TEST_F(HubDownload, ARenamedRepoIsFollowedToItsNewName) {
  hub_.rename_repo("org/old-name", "org/tiny-qwen");
  const fs::path snapshot = resolve_model_path("org/old-name", "main", kWholeModel, settings_);
  EXPECT_EQ(snapshot, settings_.cache / "models--org--old-name" / "snapshots" / kCommit);
  EXPECT_EQ(bytes_of(snapshot / "model.safetensors"), files_.at("model.safetensors"));
  EXPECT_GT(requests_for("/org/tiny-qwen/resolve/", "HEAD"), 0);
}

TEST_F(HubDownload, ShardedWeightsAndRemoteCodeFollowTheirIndexAndAutoMap) {
  const std::map<std::string, std::string> glm = {
      {"config.json", R"({"model_type": "chatglm", "auto_map": {"AutoConfig": "configuration_chatglm.ChatGLMConfig",
                          "AutoModel": "other/repo--modeling_other.Model"}})"},
      {"tokenizer_config.json", R"({"auto_map": {"AutoTokenizer": ["tokenization_chatglm.ChatGLMTokenizer", null]}})"},
      {"tokenizer.model", "sentencepiece bytes"},
      {"configuration_chatglm.py", "# config"},
      {"tokenization_chatglm.py", "# tokenizer"},
      {"model.safetensors.index.json",
       R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})"},
      {"model-00001-of-00002.safetensors", "shard one"},
      {"model-00002-of-00002.safetensors", "shard two"}};
  hub_.add_commit("org/glm", kCommit, glm);
  const fs::path snapshot = resolve_model_path("org/glm", "main", kWholeModel, settings_);
  for (const auto& [name, bytes] : glm) EXPECT_EQ(bytes_of(snapshot / name), bytes) << name;
  EXPECT_FALSE(fs::exists(snapshot / "modeling_other.py"));  // another repo's code is not fetched
}

TEST_F(HubDownload, WeightsThatAreNotSafetensorsAreNamed) {
  hub_.add_commit("org/bin-only", kCommit, {{"config.json", "{}"}, {"pytorch_model.bin", "x"}});
  const std::string message = error_of([&] { resolve_model_path("org/bin-only", "main", kWholeModel, settings_); });
  EXPECT_NE(message.find("org/bin-only (revision main): the repo has no model.safetensors"), std::string::npos)
      << message;
  EXPECT_NE(message.find("only PyTorch .bin files needs them converted"), std::string::npos) << message;
}

TEST_F(HubDownload, GatedOrPrivateReposAskForAToken) {
  hub_.require_token("hf_secret");
  std::string message = error_of([&] { resolve(); });
  EXPECT_NE(message.find("cannot download config.json of org/tiny-qwen (revision main): HTTP 401 from " +
                         hub_.endpoint() + "/org/tiny-qwen/resolve/main/config.json"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("gated or private"), std::string::npos) << message;
  EXPECT_NE(message.find("set HF_TOKEN"), std::string::npos) << message;
  EXPECT_NE(message.find("(HF_TOKEN is not set)"), std::string::npos) << message;
  settings_.token = "hf_wrong";
  message = error_of([&] { resolve(); });
  EXPECT_NE(message.find("a token was sent, but it has no access"), std::string::npos) << message;
}

TEST_F(HubDownload, UnknownReposRevisionsAndFilesAreNamed) {
  std::string message = error_of([&] { resolve_model_path("org/no-such-model", "main", kWholeModel, settings_); });
  EXPECT_NE(message.find("org/no-such-model (revision main): the hub has no repo org/no-such-model"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'org/no-such-model' is not a local folder either"), std::string::npos) << message;
  message = error_of([&] { resolve("v9"); });
  EXPECT_NE(message.find("org/tiny-qwen (revision v9): the repo has no revision 'v9'"), std::string::npos) << message;
  // A mirror that sends no X-Error-Code: the 404 of config.json still names id and revision.
  hub_.send_error_codes(false);
  message = error_of([&] { resolve_model_path("org/no-such-model", "main", kWholeModel, settings_); });
  EXPECT_NE(message.find("org/no-such-model (revision main): repo or file not found: config.json (every model has "
                         "one) is not at " +
                         hub_.endpoint() + "/org/no-such-model/resolve/main/config.json (HTTP 404)"),
            std::string::npos)
      << message;
}

TEST_F(HubDownload, OfflineModeReadsTheCacheOnly) {
  settings_.offline = true;
  std::string message = error_of([&] { resolve(); });
  EXPECT_NE(message.find("offline mode (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set) and org/tiny-qwen "
                         "(revision main) is not in the hub cache"),
            std::string::npos)
      << message;
  settings_.offline = false;
  const fs::path snapshot = resolve();
  fs::remove(snapshot / "model.safetensors");
  fs::remove_all(repo_ / ".no_exist");
  settings_.offline = true;
  hub_.forget_requests();
  message = error_of([&] { resolve(); });
  EXPECT_NE(message.find("org/tiny-qwen (revision main) has no model.safetensors"), std::string::npos) << message;
  EXPECT_EQ(resolve("main", kTokenizerOnly), snapshot);  // what the tokenizer needs is there
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(HubDownload, AnUnreachableHubSaysHowToDownloadByHand) {
  settings_.endpoint = "http://127.0.0.1:" + std::to_string(testing::free_loopback_port());
  const std::string message = error_of([&] { resolve(); });
  EXPECT_NE(message.find("cannot download config.json of org/tiny-qwen (revision main) from " + settings_.endpoint +
                         "/org/tiny-qwen/resolve/main/config.json: "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("HF_ENDPOINT"), std::string::npos) << message;
  EXPECT_NE(message.find("`huggingface-cli download org/tiny-qwen --local-dir DIR`, then pass "
                         "--model_name_or_path DIR"),
            std::string::npos)
      << message;
}

TEST_F(HubDownload, AServerThatIsNotTheHubIsNamed) {
  hub_.omit_commit_header(true);
  const std::string message = error_of([&] { resolve(); });
  EXPECT_NE(message.find("answered without an X-Repo-Commit header"), std::string::npos) << message;
  EXPECT_NE(message.find("point HF_ENDPOINT at the hub or a mirror of it"), std::string::npos) << message;
}

}  // namespace
}  // namespace zt::models::hub

#else

TEST(HubDownload, NeedsTheDownloader) { GTEST_SKIP() << "built without the downloader (install libcurl4-openssl-dev)"; }

#endif  // ZT_HAVE_DOWNLOADER
