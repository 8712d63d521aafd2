// The built binary given a hub id, as a user runs it: HF_ENDPOINT points at a hub of the
// test's own on loopback serving examples/tiny-qwen, HF_HUB_CACHE at a fresh folder. The
// commands must do exactly what they do with the local folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/common/loopback_hub_server.h"
#include "tests/common/process_test_util.h"
#include "text/tokenizer/tokenizer.h"

#if ZT_HAVE_DOWNLOADER

namespace zt::cli {
namespace {

namespace fs = std::filesystem;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";
const fs::path kTinyQwen = fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen";

class HubModelCommand : public testing::FolderTest {
 protected:
  void SetUp() override {
    if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
    FolderTest::SetUp();
    hub_.add_commit("org/tiny-qwen", kCommit, testing::files_of_folder(kTinyQwen));
    std::ofstream(dir_ / "lines.txt") << "hello world\nThe quick brown fox\n";
  }

  // `zerotune <arguments>` with the hub's variables set (and `extra` ones).
  testing::CliRun run(const std::string& arguments, const std::string& extra = "") const {
    return testing::run_zerotune(arguments, dir_,
                                 "HF_ENDPOINT=" + hub_.endpoint() + " HF_HUB_CACHE=" + (dir_ / "cache").string() +
                                     " HF_HUB_ETAG_TIMEOUT=5 " + extra);
  }

  testing::LoopbackHub hub_;
};

TEST_F(HubModelCommand, TokenizeReadsTheTokenizerOfAHubId) {
  const std::string input = " < " + (dir_ / "lines.txt").string();
  const testing::CliRun local = run("tokenize --model_name_or_path " + kTinyQwen.string() + input);
  ASSERT_EQ(local.exit_code, 0) << local.output;
  const testing::CliRun hub = run("tokenize --model_name_or_path org/tiny-qwen" + input, "ZT_LOG_LEVEL=warn");
  ASSERT_EQ(hub.exit_code, 0) << hub.output;
  EXPECT_EQ(hub.output, local.output);  // no download lines below info
  EXPECT_FALSE(fs::exists(dir_ / "cache/models--org--tiny-qwen/snapshots" / kCommit / "model.safetensors"));
  // Offline, the cache serves the next run with no request.
  hub_.forget_requests();
  const testing::CliRun offline =
      run("tokenize --model_name_or_path=org/tiny-qwen --revision main" + input, "HF_HUB_OFFLINE=1");
  EXPECT_EQ(offline.exit_code, 0) << offline.output;
  EXPECT_EQ(offline.output, local.output);
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(HubModelCommand, GenerateRunsAHubIdAsItsLocalFolder) {
  const std::string flags = " --prompt hello --max_new_tokens 4 --device cpu --output_format ids";
  const testing::CliRun local = run("generate --model_name_or_path " + kTinyQwen.string() + flags);
  ASSERT_EQ(local.exit_code, 0) << local.output;
  const testing::CliRun hub = run("generate --model_name_or_path org/tiny-qwen --revision " + kCommit + flags);
  ASSERT_EQ(hub.exit_code, 0) << hub.output;
  EXPECT_EQ(hub.output.substr(hub.output.rfind('[')), local.output.substr(local.output.rfind('[')));
  EXPECT_NE(hub.output.find("downloading org/tiny-qwen model.safetensors"), std::string::npos) << hub.output;
}

TEST_F(HubModelCommand, TrainRecordsTheIdAndRevisionAsGiven) {
  const fs::path out = dir_ / "out";
  const testing::CliRun r =
      run("train --model_name_or_path org/tiny-qwen --revision " + kCommit + " --train_file " + ZT_SOURCE_DIR +
          "/examples/data/alpaca_demo.json --template qwen"
          " --finetuning_type lora --max_steps 1 --per_device_train_batch_size 2 --save_steps 1"
          " --device cpu --output_dir " +
          out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // As PEFT and HF Trainer record it: the id, not the cache folder it was read from.
  const auto adapter = nlohmann::json::parse(testing::read_text(out / "adapter_config.json"));
  EXPECT_EQ(adapter["base_model_name_or_path"], "org/tiny-qwen");
  const auto args = nlohmann::json::parse(testing::read_text(out / "checkpoint-1/training_args.json"));
  EXPECT_EQ(args["model_name_or_path"], "org/tiny-qwen");
  EXPECT_EQ(args["model_revision"], kCommit);
}

TEST_F(HubModelCommand, ErrorsExitNonZeroNamingTheIdAndWhatToDo) {
  testing::CliRun r = run("tokenize --model_name_or_path org/tiny-qwen < /dev/null", "HF_HUB_OFFLINE=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("offline mode"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("huggingface-cli download org/tiny-qwen --local-dir DIR"), std::string::npos) << r.output;
  r = run("estimate --model_name_or_path org/missing --num_gpus 1 --gpu_memory 80");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("org/missing (revision main): the hub has no repo org/missing"), std::string::npos)
      << r.output;
  // A path keeps the local folder's message.
  r = run("tokenize --model_name_or_path ./no-such-folder < /dev/null");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no such folder: ./no-such-folder (the current folder has no no-such-folder"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(hub_.requests().size() == 1) << "only estimate's request for org/missing reaches the hub";
}

}  // namespace
}  // namespace zt::cli

#else

TEST(HubModelCommand, NeedsTheDownloader) {
  GTEST_SKIP() << "built without the downloader (install libcurl4-openssl-dev)";
}

#endif  // ZT_HAVE_DOWNLOADER
