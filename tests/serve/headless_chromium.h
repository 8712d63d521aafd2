// Debian's chromium, headless, driven through the DevTools protocol over a pipe
// (--remote-debugging-pipe: JSON messages ended by a NUL byte, the browser reading fd 3 and
// writing fd 4), for tests of pages that stream: --dump-dom dumps once the page has loaded and
// does not wait for a fetch whose body is still streaming. Every exchange is bounded in time;
// the browser is closed (killed, if it does not close) when the object goes out of scope.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/process_test_util.h"

extern char** environ;

namespace zt::testing {

// `chromium` on PATH, or empty when it is not installed.
inline std::string find_chromium() {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(folder) / "chromium";
    if (!folder.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

class HeadlessChromium {
 public:
  using json = nlohmann::json;
  using Clock = std::chrono::steady_clock;

  // Starts `binary` with a profile folder of its own (tests run side by side) and its output
  // in `log`.
  HeadlessChromium(const std::string& binary, const std::filesystem::path& profile, const std::filesystem::path& log) {
    std::signal(SIGPIPE, SIG_IGN);  // a browser gone mid-write fails the write instead
    int to_browser[2], from_browser[2];
    if (pipe(to_browser) != 0 || pipe(from_browser) != 0) return;
    to_browser_ = above_stdio(to_browser[1]);
    from_browser_ = above_stdio(from_browser[0]);
    const int browser_reads = above_stdio(to_browser[0]), browser_writes = above_stdio(from_browser[1]);
    std::vector<std::string> args{binary,
                                  "--headless",
                                  "--no-sandbox",
                                  "--disable-gpu",
                                  "--disable-dev-shm-usage",
                                  "--no-first-run",
                                  "--remote-debugging-pipe",
                                  "--user-data-dir=" + profile.string(),
                                  "about:blank"};
    pid_ = spawn_logged(args, log, {{3, browser_reads}, {4, browser_writes}});
    close(browser_reads);
    close(browser_writes);
  }
  ~HeadlessChromium() {
    if (pid_ > 0) {
      call("Browser.close", json::object(), "", std::chrono::seconds(5));
      int status = 0;
      const auto deadline = Clock::now() + std::chrono::seconds(5);
      while (waitpid(pid_, &status, WNOHANG) == 0 && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (waitpid(pid_, &status, WNOHANG) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
    }
    if (to_browser_ >= 0) close(to_browser_);
    if (from_browser_ >= 0) close(from_browser_);
  }
  HeadlessChromium(const HeadlessChromium&) = delete;
  HeadlessChromium& operator=(const HeadlessChromium&) = delete;

  bool started() const { return pid_ > 0; }

  // Opens `url` in a new tab that evaluate() then runs in; the error, or empty.
  std::string open(const std::string& url) {
    const json target = call("Target.createTarget", {{"url", url}});
    if (!target.contains("targetId")) return "Target.createTarget: " + target.dump();
    const json attached = call("Target.attachToTarget", {{"targetId", target["targetId"]}, {"flatten", true}});
    if (!attached.contains("sessionId")) return "Target.attachToTarget: " + attached.dump();
    session_ = attached["sessionId"];
    return "";
  }

  // The value of a JavaScript expression in the open tab (null when it could not be had).
  json evaluate(const std::string& expression) {
    const json result = call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}}, session_);
    return result.contains("result") ? result["result"].value("value", json()) : json();
  }

 private:
  // A file descriptor at 10 or above, closed on exec: the child's dup2 onto 3 and 4 never
  // meets one of these.
  static int above_stdio(int fd) {
    const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    return moved;
  }

  // Sends a command and waits for its answer's `result` ({"error": ...} on failure or timeout);
  // events on the way are skipped.
  json call(const std::string& method, const json& params, const std::string& session = "",
            Clock::duration timeout = std::chrono::seconds(30)) {
    json message = {{"id", ++next_id_}, {"method", method}, {"params", params}};
    if (!session.empty()) message["sessionId"] = session;
    const std::string text = message.dump() + '\0';
    if (write(to_browser_, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      return {{"error", "the browser is gone"}};
    const auto deadline = Clock::now() + timeout;
    for (std::string reply; next_message(reply, deadline);) {
      const json parsed = json::parse(reply, nullptr, false);
      if (parsed.is_object() && parsed.value("id", -1) == next_id_)
        return parsed.contains("result") ? parsed["result"] : json{{"error", parsed.value("error", json())}};
    }
    return {{"error", "no answer to " + method + " in time"}};
  }

  bool next_message(std::string& message, Clock::time_point deadline) {
    for (;;) {
      if (const std::size_t end = pending_.find('\0'); end != std::string::npos) {
        message = pending_.substr(0, end);
        pending_.erase(0, end + 1);
        return true;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd readable{.fd = from_browser_, .events = POLLIN, .revents = 0};
      if (left <= 0 || poll(&readable, 1, static_cast<int>(left)) <= 0) return false;
      char buffer[65536];
      const ssize_t n = read(from_browser_, buffer, sizeof(buffer));
      if (n <= 0) return false;
      pending_.append(buffer, static_cast<std::size_t>(n));
    }
  }

  pid_t pid_ = 0;
  int to_browser_ = -1, from_browser_ = -1;
  std::string pending_, session_;
  int next_id_ = 0;
};

}  // namespace zt::testing
