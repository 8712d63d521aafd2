#include "distributed/launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "runtime/error.h"

namespace zt::distributed {
namespace {

using Clock = std::chrono::steady_clock;
volatile sig_atomic_t pending_signal = 0;

void remember_signal(int signal_number) { pending_signal = signal_number; }

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int output = -1;  // read end of the child's stdout+stderr
  std::string partial_line;
  bool running = true;
  int status = 0;
};

std::string random_token() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char bytes[16] = {};
  urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  std::string hex;
  for (unsigned char b : bytes) {
    const char* digits = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

std::string own_executable() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  ZT_REQUIRE(n > 0, "cannot find the zerotune binary's own path");
  return std::string(path, static_cast<std::size_t>(n));
}

// The rank's process running `command` (argv), with torchrun's environment and the job's token.
Child start(const LaunchOptions& options, const std::vector<std::string>& command, int local_rank,
            const std::string& token) {
  int pipe_fds[2];
  ZT_REQUIRE(pipe2(pipe_fds, O_CLOEXEC) == 0, std::string("pipe failed: ") + std::strerror(errno));
  Child child;
  child.rank = options.node_rank * options.nproc_per_node + local_rank;
  child.output = pipe_fds[0];
  // A stop signal must never meet the child between fork and exec with the launcher's
  // handler still installed (it would be swallowed): block them across the fork.
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop_signals, &previous);
  child.pid = fork();
  ZT_REQUIRE(child.pid >= 0, std::string("fork failed: ") + std::strerror(errno));
  if (child.pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    setpgid(0, 0);  // its own process group, so a signal reaches everything the rank started
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    const int world = options.nnodes * options.nproc_per_node;
    setenv("RANK", std::to_string(child.rank).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("LOCAL_WORLD_SIZE", std::to_string(options.nproc_per_node).c_str(), 1);
    setenv("MASTER_ADDR", options.master_addr.c_str(), 1);
    setenv("MASTER_PORT", std::to_string(options.master_port).c_str(), 1);
    setenv("ZT_JOB_TOKEN", token.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "zerotune launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child.pid, child.pid);  // also here: no race with the child's own call
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  close(pipe_fds[1]);
  return child;
}

// Forwards whole lines of a child's output with its rank in front.
void relay(Child& child, bool flush_partial) {
  char buffer[4096];
  ssize_t n;
  while ((n = read(child.output, buffer, sizeof(buffer))) > 0) {
    child.partial_line.append(buffer, static_cast<std::size_t>(n));
    for (std::size_t end; (end = child.partial_line.find('\n')) != std::string::npos;) {
      std::cout << "[rank " << child.rank << "] " << child.partial_line.substr(0, end + 1);
      child.partial_line.erase(0, end + 1);
    }
    if (static_cast<std::size_t>(n) < sizeof(buffer)) break;
  }
  if (flush_partial && !child.partial_line.empty()) {
    std::cout << "[rank " << child.rank << "] " << child.partial_line << "\n";
    child.partial_line.clear();
  }
  std::cout.flush();
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

void signal_all(std::vector<Child>& children, int signal_number) {
  for (Child& child : children)
    if (child.running) kill(-child.pid, signal_number);
}

}  // namespace

int launch(const LaunchOptions& options) {
  std::string token = std::getenv("ZT_JOB_TOKEN") ? std::getenv("ZT_JOB_TOKEN") : "";
  ZT_REQUIRE(!token.empty() || options.nnodes == 1,
             "zerotune launch: with --nnodes > 1 set ZT_JOB_TOKEN to the same secret on every node, so the "
             "rendezvous admits this job's ranks only");
  if (token.empty()) token = random_token();
  ZT_REQUIRE(!options.command.empty(), "zerotune launch: no command to start");
  std::vector<std::string> command = options.command;
  if (command[0] == "zerotune") command[0] = own_executable();  // this very binary, not one on PATH
  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::vector<Child> children;
  for (int local = 0; local < options.nproc_per_node; ++local)
    children.push_back(start(options, command, local, token));
  int result = 0;
  std::string failure;
  Clock::time_point kill_at = Clock::time_point::max();
  for (std::size_t running = children.size(); running > 0;) {
    std::vector<pollfd> fds;
    for (const Child& child : children) fds.push_back({child.output, POLLIN, 0});
    poll(fds.data(), fds.size(), 100);
    for (std::size_t c = 0; c < children.size(); ++c)
      if (fds[c].revents & POLLIN) relay(children[c], false);
    if (pending_signal) {
      signal_all(children, pending_signal);
      if (result == 0) result = 128 + pending_signal;
      kill_at = std::min(kill_at, Clock::now() + options.grace);
      pending_signal = 0;
    }
    for (Child& child : children) {
      if (!child.running || waitpid(child.pid, &child.status, WNOHANG) != child.pid) continue;
      child.running = false;
      --running;
      relay(child, true);
      if (exit_code(child.status) != 0 && failure.empty()) {
        result = exit_code(child.status);
        failure = "rank " + std::to_string(child.rank) + " exited with status " + std::to_string(result) +
                  "; stopping the other ranks";
        std::cout << "zerotune launch: " << failure << std::endl;
        signal_all(children, SIGTERM);
        kill_at = Clock::now() + options.grace;
      }
    }
    if (Clock::now() > kill_at) signal_all(children, SIGKILL);
  }
  for (Child& child : children) close(child.output);
  if (!failure.empty()) std::cerr << "zerotune launch: error: " << failure << "\n";
  return result;
}

}  // namespace zt::distributed
