// zerotune serve run as a user runs it, for the tests of tests/serve/: a server process on
// the shipped tiny model (CPU) on a port the system picks, and requests through cpp-httplib's
// client, whole and streamed.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/common/process_test_util.h"

extern char** environ;

namespace zt::testing::serve {

namespace fs = std::filesystem;
using nlohmann::json;

inline const std::string kModel = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

// A `zerotune serve` process on a free port, of `model` (the tiny model unless given);
// killed when it goes out of scope.
class ServerProcess {
 public:
  ServerProcess(const fs::path& folder, std::vector<std::string> extra = {}, const std::string& model = kModel)
      : log_(folder / "server.log") {
    std::vector<std::string> args{(fs::path(ZT_BINARY_DIR) / "bin/zerotune").string(),
                                  "serve",
                                  "--model_name_or_path",
                                  model,
                                  "--device",
                                  "cpu",
                                  "--port",
                                  "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = spawn_logged(args, log_);
    EXPECT_GT(pid_, 0) << "cannot start " << args[0];
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    for (int tries = 0; tries < 300 && port_ == 0; ++tries) {
      std::smatch match;
      const std::string text = log();
      if (std::regex_search(text, match, listening))
        port_ = std::stoi(match[1]);
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_NE(port_, 0) << "the server did not start: " << log();
  }
  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  int port() const { return port_; }
  std::string log() const { return zt::testing::read_text(log_); }
  httplib::Client client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(std::chrono::seconds(60));
    return client;
  }
  // Sends `signal` and waits (up to 60 s) for the exit status.
  int stop(int signal) {
    kill(pid_, signal);
    int status = 0;
    for (int tries = 0; tries < 600; ++tries) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -2;
  }

 private:
  fs::path log_;
  pid_t pid_ = 0;
  int port_ = 0;
  bool exited_ = false;
};

// The fixture base of a suite whose tests share one `zerotune serve` process, started once per
// test process in a folder of its own: ctest runs each test as its own process, in parallel,
// and a shared folder would be emptied under a running server.
//   class Serve : public SuiteServer<Serve> {
//    public:
//     static constexpr const char* kName = "serve_command_test";  // names the folder
//   };
// A suite that serves something else than the tiny model with its defaults also defines
//   static std::unique_ptr<ServerProcess> start_server(const fs::path& folder);
template <typename Suite>
class SuiteServer : public ::testing::Test {
 public:
  static std::unique_ptr<ServerProcess> start_server(const fs::path& folder) {
    return std::make_unique<ServerProcess>(folder);
  }

 protected:
  static void SetUpTestSuite() {
    folder_ = fs::path(ZT_BINARY_DIR) / (std::string(Suite::kName) + "_" + std::to_string(getpid()));
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    server_ = Suite::start_server(folder_);
  }
  static void TearDownTestSuite() {
    server_.reset();
    std::error_code ignored;
    fs::remove_all(folder_, ignored);
  }

  static const fs::path& suite_folder() { return folder_; }
  static ServerProcess& server() { return *server_; }

 private:
  static inline fs::path folder_;
  static inline std::unique_ptr<ServerProcess> server_;
};

inline json post(httplib::Client& client, const std::string& path, const json& body, int expected_status = 200) {
  const httplib::Result result = client.Post(path, body.dump(), "application/json");
  if (!result) return {{"transport_error", httplib::to_string(result.error())}};
  EXPECT_EQ(result->status, expected_status) << path << " " << body.dump() << " -> " << result->body;
  json parsed = json::parse(result->body, nullptr, false);
  EXPECT_FALSE(parsed.is_discarded()) << result->body;
  return parsed;
}

// The `data:` payloads of a server-sent event stream, [DONE] included.
inline std::vector<std::string> events_of(const std::string& stream) {
  std::vector<std::string> events;
  std::istringstream in(stream);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("data: ", 0) == 0) events.push_back(line.substr(6));
  return events;
}

struct Streamed {
  std::string text;
  std::string finish_reason;
  json usage;
  std::vector<std::string> events;
};

inline Streamed stream(httplib::Client& client, const std::string& path, json body) {
  body["stream"] = true;
  std::string raw;
  // No retry on a transport failure: the server lengthens cpp-httplib's listen backlog of 5
  // (serve/server.cpp), without which some of 32 simultaneous connects were reset.
  const httplib::Result result = client.Post(path, httplib::Headers{}, body.dump(), "application/json");
  Streamed out;
  if (!result) {
    ADD_FAILURE() << "stream " << path << ": no response (" << httplib::to_string(result.error()) << ")";
    return out;
  }
  EXPECT_EQ(result->status, 200) << result->body;
  EXPECT_NE(result->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  out.events = events_of(result->body);
  for (const std::string& event : out.events) {
    if (event == "[DONE]") continue;
    const json chunk = json::parse(event);
    if (chunk.contains("usage") && !chunk["usage"].is_null()) out.usage = chunk["usage"];
    if (chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (choice.contains("delta") && choice["delta"].contains("content")) out.text += choice["delta"]["content"];
    if (choice.contains("text")) out.text += choice["text"].get<std::string>();
    if (!choice["finish_reason"].is_null()) out.finish_reason = choice["finish_reason"];
  }
  return out;
}

}  // namespace zt::testing::serve
