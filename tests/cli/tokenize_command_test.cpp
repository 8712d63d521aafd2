// `zerotune tokenize` run as a user runs it: the built binary, stdin to stdout, exit codes.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/common/process_test_util.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

const fs::path kBinary = fs::path(ZT_BINARY_DIR) / "bin/zerotune";
const fs::path kTiny = fs::path(ZT_SOURCE_DIR) / "tests/data/tokenizer/tiny_tiktoken";

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

class TokenizeCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tokenizers_available()) GTEST_SKIP() << tokenizer_support_message();
    ASSERT_TRUE(fs::exists(kBinary)) << kBinary << " is missing: build the zerotune target first";
    dir_ = fs::temp_directory_path() / ("zt_cli_tok_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CommandResult run(const std::string& args, const std::string& input) const {
    std::ofstream(dir_ / "in", std::ios::binary) << input;
    const std::string command = kBinary.string() + " tokenize " + args + " < " + (dir_ / "in").string() + " > " +
                                (dir_ / "out").string() + " 2> " + (dir_ / "err").string();
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::read_text(dir_ / "out"),
            testing::read_text(dir_ / "err")};
  }
  fs::path dir_;
};

// Ids worked out in tests/data/tokenizer/tiny_tiktoken/README.md: [gMASK] 262, <sop> 264,
// "abc" 258, "12" 259, <|user|> 267.
TEST_F(TokenizeCommand, EncodesEachLineToAJsonArray) {
  const std::string model = "--model_name_or_path " + kTiny.string();
  CommandResult r = run(model, "abc\n123<|user|>\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[262,264,258]\n[262,264,259,51,267]\n");
  for (const char* off : {" --add_special_tokens false", " --add_special_tokens=false"}) {
    r = run(model + off, "abc\n");
    EXPECT_EQ(r.out, "[258]\n") << off;
  }
  r = run(model + " --add_special_tokens", "abc\n");
  EXPECT_EQ(r.out, "[262,264,258]\n");
}

TEST_F(TokenizeCommand, DecodesJsonArraysToText) {
  const std::string model = "--model_name_or_path " + kTiny.string();
  CommandResult r = run(model + " --decode", "[262,264,258]\n[97, 98]\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[gMASK]<sop>abc\nab\n");
  r = run(model + " --decode true --skip_special_tokens", "[262,264,258]\n");
  EXPECT_EQ(r.out, "abc\n");
}

TEST_F(TokenizeCommand, ErrorsExitNonZeroWithAMessage) {
  const std::string model = "--model_name_or_path " + kTiny.string();
  CommandResult r = run(model + " --decode", "[1]\nnot json\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, std::string("\x01\n"));  // the line before the bad one was written
  EXPECT_NE(r.err.find("stdin line 2: expected a JSON array of token ids"), std::string::npos) << r.err;
  r = run(model + " --decode", "[1e400]\n");  // nlohmann's out_of_range, not a parse_error
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stdin line 1: expected a JSON array of token ids"), std::string::npos) << r.err;
  r = run(model + " --decode", "[99999]\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("token id 99999 is out of range"), std::string::npos) << r.err;
  r = run(model, "ok\n\xFF\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stdin line 2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("invalid UTF-8 at byte offset 0"), std::string::npos) << r.err;
  r = run("--model_name_or_path " + dir_.string(), "x\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no tokenizer"), std::string::npos) << r.err;
  EXPECT_EQ(run("", "").exit_code, 2);
  EXPECT_EQ(run(model + " --nope", "").exit_code, 2);
  EXPECT_EQ(run(model + " --decode=maybe", "").exit_code, 2);
}

}  // namespace
}  // namespace zt::models
