// What the tests that start processes or open sockets share: a folder of their own per test
// (ctest runs tests as separate processes, several at once), and a fixture that gives each of
// its tests one, empty, and removes it afterwards; environment variables set for a scope; a
// process started with its output in a log; a free loopback port; and the built `zerotune`
// binary run as a user runs it, on the shipped
// tiny model and demo data, with what its chat answered.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace zt::testing {

// ZT_BINARY_DIR/<suite>/<test name>, created (and emptied when `fresh`).
inline std::filesystem::path test_folder(const std::string& suite, bool fresh = false) {
  const std::filesystem::path folder =
      std::filesystem::path(ZT_BINARY_DIR) / suite / ::testing::UnitTest::GetInstance()->current_test_info()->name();
  if (fresh) std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  return folder;
}

// Each test of a fixture derived from this one starts with dir_, an empty folder of its own
// (test_folder of the fixture's name), and leaves nothing there when it ends.
class FolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_folder(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name(), /*fresh=*/true);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

// Sets environment variables for one scope (std::nullopt unsets one) and puts the old values
// back; the time zone is read again each time (TZ).
class ScopedEnvironment {
 public:
  using Variables = std::vector<std::pair<std::string, std::optional<std::string>>>;
  explicit ScopedEnvironment(const Variables& variables) {
    for (const auto& [name, value] : variables) {
      const char* old = std::getenv(name.c_str());
      old_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      set(name, value);
    }
  }
  ScopedEnvironment(const std::string& name, const std::optional<std::string>& value)
      : ScopedEnvironment(Variables{{name, value}}) {}
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;
  ~ScopedEnvironment() {
    for (auto it = old_.rbegin(); it != old_.rend(); ++it) set(it->first, it->second);
  }

 private:
  static void set(const std::string& name, const std::optional<std::string>& value) {
    value ? setenv(name.c_str(), value->c_str(), 1) : unsetenv(name.c_str());
    tzset();
  }
  Variables old_;
};

// Starts `args` (the program first) with its stdout and stderr in `log` and, for each pair of
// `descriptors`, the parent's descriptor `.second` as the child's `.first`; its pid, 0 when it
// did not start.
inline pid_t spawn_logged(std::vector<std::string> args, const std::filesystem::path& log,
                          const std::vector<std::pair<int, int>>& descriptors = {}) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  for (const auto& [child, parent] : descriptors) posix_spawn_file_actions_adddup2(&actions, parent, child);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid = 0;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// A port nobody listens on right now (the kernel's pick for an ephemeral bind).
inline int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

inline std::string read_text(const std::filesystem::path& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

struct CliRun {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// `zerotune <arguments>` through the shell, its output kept in `folder`/last_run.log;
// `environment` ("NAME=value ...") is set for that run alone.
inline CliRun run_zerotune(const std::string& arguments, const std::filesystem::path& folder,
                           const std::string& environment = "") {
  const std::filesystem::path binary = std::filesystem::path(ZT_BINARY_DIR) / "bin/zerotune";
  if (!std::filesystem::exists(binary)) return {-1, "no " + binary.string() + ": build the zerotune target first"};
  const std::filesystem::path log = folder / "last_run.log";
  const std::string command = environment + " " + binary.string() + " " + arguments + " > " + log.string() + " 2>&1";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(log)};
}

// The shipped tiny Qwen2 and Alpaca demo data that the command-line tests run on.
inline const std::string kTinyQwen = (std::filesystem::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();
inline const std::string kAlpacaDemo =
    (std::filesystem::path(ZT_SOURCE_DIR) / "examples/data/alpaca_demo.json").string();

// A FolderTest whose zerotune(arguments) runs the binary with its output kept in the test's
// folder.
class CliTest : public FolderTest {
 protected:
  CliRun zerotune(const std::string& arguments) const { return run_zerotune(arguments, dir_); }
};

// The answers `zerotune chat` printed: after each "assistant> ", up to the next "user>".
inline std::vector<std::string> chat_answers(const std::string& output) {
  std::vector<std::string> answers;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    for (std::size_t at = line.find("assistant> "); at != std::string::npos; at = line.find("assistant> ", at + 1))
      answers.push_back(line.substr(at + 11, line.find("user>", at) - at - 11));
  return answers;
}

}  // namespace zt::testing
