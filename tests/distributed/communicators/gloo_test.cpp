// Gloo across real processes on the CPU: every collective and dtype on uneven sizes in forked
// ranks; a rank that stalls, throws or is killed makes the others fail within the timeout,
// naming themselves, the collective, its size and the elapsed time; `zerotune launch` trains
// the tiny model over Gloo to the weights of in-process ranks, and returns a failing rank's
// status. Every wait is bounded: a process still running past its limit is killed.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "distributed/communicators/gloo_communicator.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

namespace zt::distributed {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

#define ZT_SKIP_WITHOUT_GLOO()                                                                                    \
  do {                                                                                                            \
    if (!gloo_available())                                                                                        \
      GTEST_SKIP() << "zerotune was built without Gloo: install libgloo-dev (scripts/setup.sh does) and rebuild"; \
  } while (0)

fs::path test_root() { return zt::testing::test_folder("distributed_gloo_test", true); }

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

struct Outcome {
  int status = -1;       // exit code; 128 + signal when killed by one; -1 when it outlived its limit
  double seconds = 0.0;  // from the start of all processes to this one's end
};

// Waits for all `pids` until `limit`; any still running then is killed and reported as -1.
std::vector<Outcome> wait_all(const std::vector<pid_t>& pids, Clock::time_point start, std::chrono::seconds limit) {
  std::vector<Outcome> outcomes(pids.size());
  std::vector<bool> running(pids.size(), true);
  for (std::size_t left = pids.size(); left > 0;) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      int status = 0;
      if (!running[i] || waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      outcomes[i] = {exit_code(status), std::chrono::duration<double>(Clock::now() - start).count()};
      running[i] = false;
      --left;
    }
    if (left > 0 && Clock::now() - start > limit) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (!running[i]) continue;
        kill(-pids[i], SIGKILL);  // the process group: a launcher's ranks too
        kill(pids[i], SIGKILL);
        waitpid(pids[i], nullptr, 0);
        running[i] = false;
        --left;
      }
    }
    std::this_thread::sleep_for(5ms);
  }
  return outcomes;
}

// --- the communicator in forked ranks ---

struct RankResult {
  Outcome outcome;
  std::string error;  // what the rank threw
};

// Runs body(communicator) in `world` forked processes joined over Gloo. A rank exits 0 when
// body returns and 1 when it throws, leaving the message for the parent.
std::vector<RankResult> run_ranks(int world, std::chrono::milliseconds timeout,
                                  const std::function<void(Communicator&)>& body) {
  const fs::path root = test_root();
  RendezvousConfig config;
  config.port = zt::testing::free_loopback_port();
  config.token = "gloo-test";
  config.world_size = world;
  config.timeout = 20s;
  const auto start = Clock::now();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      int code = 0;
      try {
        std::unique_ptr<Communicator> communicator = connect_gloo(rank, config, timeout);
        body(*communicator);
      } catch (const std::exception& e) {
        std::ofstream(root / (std::to_string(rank) + ".error")) << e.what();
        code = 1;
      }
      _exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<RankResult> results;
  for (const Outcome& outcome : wait_all(pids, start, 60s))
    results.push_back({outcome, zt::testing::read_text(root / (std::to_string(results.size()) + ".error"))});
  return results;
}

std::string describe(const std::vector<RankResult>& results) {
  std::string text;
  for (std::size_t r = 0; r < results.size(); ++r)
    text += "rank " + std::to_string(r) + ": status " + std::to_string(results[r].outcome.status) + " after " +
            std::to_string(results[r].outcome.seconds) + " s: " + results[r].error + "\n";
  return text;
}

// Small integers, exact in every dtype, different on every rank and element.
std::vector<double> values_of(int rank, std::int64_t count) {
  std::vector<double> values;
  for (std::int64_t i = 0; i < count; ++i) values.push_back(static_cast<double>((i * 7 + rank * 5) % 13 - 6));
  return values;
}

void expect_values(const Tensor& got, const std::vector<double>& expected, const std::string& what, int rank) {
  const std::vector<double> values = got.to_vector();
  for (std::size_t i = 0; i < expected.size(); ++i)
    ZT_REQUIRE(values.size() == expected.size() && values[i] == expected[i],
               what + " on rank " + std::to_string(rank) + ": element " + std::to_string(i) + " is " +
                   std::to_string(values.at(i)) + ", expected " + std::to_string(expected[i]));
}

void check_every_collective(Communicator& comm, DType dtype, std::int64_t n) {
  const int rank = comm.rank(), world = comm.world_size();
  const std::string what = std::string(dtype_name(dtype)) + " x " + std::to_string(n);
  std::vector<double> sums(static_cast<std::size_t>(n), 0.0), maxima(static_cast<std::size_t>(n), -1e9), gathered;
  for (int r = 0; r < world; ++r) {
    const std::vector<double> theirs = values_of(r, n);
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      sums[i] += theirs[i];
      maxima[i] = std::max(maxima[i], theirs[i]);
    }
    gathered.insert(gathered.end(), theirs.begin(), theirs.end());
  }
  Tensor sum = Tensor::from_values(values_of(rank, n), {n}, dtype);
  comm.all_reduce(sum, ReduceOp::kSum);
  expect_values(sum, sums, "all_reduce(sum) " + what, rank);
  Tensor max = Tensor::from_values(values_of(rank, n), {n}, dtype);
  comm.all_reduce(max, ReduceOp::kMax);
  expect_values(max, maxima, "all_reduce(max) " + what, rank);

  // reduce_scatter: rank r's input is values_of(r, world * n); this rank keeps the sum of slice `rank`.
  const Tensor input = Tensor::from_values(values_of(rank, world * n), {world, n}, dtype);
  const std::vector<double> before = input.to_vector();
  Tensor scattered = Tensor::zeros({n}, dtype);
  comm.reduce_scatter(input, scattered);
  std::vector<double> slice_sums(static_cast<std::size_t>(n), 0.0);
  for (int r = 0; r < world; ++r) {
    const std::vector<double> theirs = values_of(r, world * n);
    for (std::int64_t i = 0; i < n; ++i)
      slice_sums[static_cast<std::size_t>(i)] += theirs[static_cast<std::size_t>(rank * n + i)];
  }
  expect_values(scattered, slice_sums, "reduce_scatter " + what, rank);
  expect_values(input, before, "reduce_scatter's input (left as it was) " + what, rank);

  Tensor all = Tensor::zeros({world * n}, dtype);
  comm.all_gather(Tensor::from_values(values_of(rank, n), {n}, dtype), all);
  expect_values(all, gathered, "all_gather " + what, rank);

  const int root = world - 1;
  Tensor broadcast = Tensor::from_values(values_of(rank, n), {n}, dtype);
  comm.broadcast(broadcast, root);
  expect_values(broadcast, values_of(root, n), "broadcast " + what, rank);
  comm.barrier();
}

TEST(Gloo, EveryCollectiveAndDtypeMatchesTheReferenceOnUnevenSizes) {
  ZT_SKIP_WITHOUT_GLOO();
  const auto results = run_ranks(3, 10s, [](Communicator& comm) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI32, DType::kI64})
      for (std::int64_t n : {1, 5, 1003}) check_every_collective(comm, dtype, n);
  });
  for (const RankResult& result : results) EXPECT_EQ(result.outcome.status, 0) << describe(results);
}

TEST(Gloo, SixteenBitSumsAreRoundedOnce) {
  ZT_SKIP_WITHOUT_GLOO();
  // 1 + e + e with e half a unit in the last place: rounding after each addition gives 1,
  // a float32 sum rounded once gives 1 + 2e.
  const auto results = run_ranks(3, 10s, [](Communicator& comm) {
    for (auto [dtype, e] :
         {std::pair{DType::kBF16, std::ldexp(1.0, -8)}, std::pair{DType::kF16, std::ldexp(1.0, -11)}}) {
      const double mine = comm.rank() == 0 ? 1.0 : e;
      Tensor sum = Tensor::full({999}, mine, dtype);
      comm.all_reduce(sum, ReduceOp::kSum);
      expect_values(sum, std::vector<double>(999, 1.0 + 2 * e), std::string("all_reduce ") + dtype_name(dtype),
                    comm.rank());
      Tensor part = Tensor::zeros({333}, dtype);
      comm.reduce_scatter(Tensor::full({999}, mine, dtype), part);
      expect_values(part, std::vector<double>(333, 1.0 + 2 * e), std::string("reduce_scatter ") + dtype_name(dtype),
                    comm.rank());
    }
  });
  for (const RankResult& result : results) EXPECT_EQ(result.outcome.status, 0) << describe(results);
}

TEST(Gloo, AStalledRankMakesTheOthersFailAtTheTimeout) {
  ZT_SKIP_WITHOUT_GLOO();
  const auto results = run_ranks(2, 1s, [](Communicator& comm) {
    if (comm.rank() == 1) {
      std::this_thread::sleep_for(3s);  // stalled, then gone without a collective
      return;
    }
    comm.all_reduce(Tensor::ones({10}, DType::kF32), ReduceOp::kSum);
  });
  const RankResult& waiting = results[0];
  EXPECT_EQ(waiting.outcome.status, 1) << describe(results);
  testing::expect_mentions(waiting.error, {"rank 0: all_reduce(sum) of 10 float32 elements (40 B)",
                                           "did not finish within the 1.00 s timeout (after 1.", "--ddp_timeout"});
  EXPECT_LT(waiting.outcome.seconds, 2.5) << "rank 0 must not wait for the stalled rank: " << describe(results);
}

// Rank 2 leaves before the collective; ranks 0 and 1 must fail at once, then refuse more.
void expect_others_fail_at_once(const std::function<void()>& leave) {
  const auto results = run_ranks(3, 20s, [&](Communicator& comm) {
    if (comm.rank() == 2) leave();
    const std::string first =
        testing::error_of([&] { comm.all_reduce(Tensor::ones({1000}, DType::kF32), ReduceOp::kSum); });
    const std::string then = testing::error_of([&] { comm.barrier(); });
    fail(first + "\nthen: " + then);
  });
  for (int rank = 0; rank < 2; ++rank) {
    const RankResult& survivor = results[static_cast<std::size_t>(rank)];
    EXPECT_EQ(survivor.outcome.status, 1) << describe(results);
    const std::string me = "rank " + std::to_string(rank) + ": ";
    testing::expect_mentions(
        survivor.error, {"of 1000 float32 elements (3.91 KiB)", " failed after ", "stopped at an earlier failure"});
    EXPECT_EQ(survivor.error.rfind(me, 0), 0u) << survivor.error;
    EXPECT_NE(survivor.error.find("then: " + me + "no barrier"), std::string::npos) << survivor.error;
    EXPECT_LT(survivor.outcome.seconds, 10.0) << "well within the 20 s timeout: " << describe(results);
  }
}

TEST(Gloo, ARankThatThrowsMakesTheOthersFailAtOnce) {
  ZT_SKIP_WITHOUT_GLOO();
  expect_others_fail_at_once([] { fail("rank 2 gave up"); });
}

TEST(Gloo, AKilledRankMakesTheOthersFailAtOnce) {
  ZT_SKIP_WITHOUT_GLOO();
  expect_others_fail_at_once([] { raise(SIGKILL); });
}

// --- zerotune train over Gloo, started as users start it ---

const fs::path kBinary = fs::path(ZT_BINARY_DIR) / "bin/zerotune";
const std::string kModel = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

// Starts zerotune with `args` and extra environment, its output into `log`, in its own process group.
pid_t start_zerotune(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                     const fs::path& log) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(out, STDOUT_FILENO);
  dup2(out, STDERR_FILENO);
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> argv = {const_cast<char*>(kBinary.c_str())};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

std::vector<std::string> train_args(const fs::path& output_dir, const std::string& train_file) {
  return {"train",
          "--model_name_or_path",
          kModel,
          "--train_file",
          train_file,
          "--finetuning_type",
          "full",
          "--template",
          "qwen",
          "--max_steps",
          "5",
          "--per_device_train_batch_size",
          "2",
          "--learning_rate",
          "1e-3",
          "--save_strategy",
          "no",
          "--device",
          "cpu",
          "--overwrite_output_dir",
          "--ddp_timeout",
          "10",
          "--output_dir",
          output_dir.string()};
}

const std::string kData = std::string(ZT_SOURCE_DIR) + "/examples/data/alpaca_demo.json";

Outcome run_zerotune(const std::vector<std::string>& args, const fs::path& log) {
  return wait_all({start_zerotune(args, {}, log)}, Clock::now(), 60s)[0];
}

// The largest difference between the files' tensors relative to the reference's largest value.
double relative_difference(const fs::path& file, const fs::path& reference) {
  SafetensorsFile x = SafetensorsFile::open(file.string()), y = SafetensorsFile::open(reference.string());
  EXPECT_EQ(x.names(), y.names());
  double worst = 0.0;
  for (const std::string& name : y.names()) {
    const std::vector<double> a = x.get(name).to_vector(), b = y.get(name).to_vector();
    double difference = 0.0, scale = 1e-30;
    for (std::size_t i = 0; i < b.size(); ++i) difference = std::max(difference, std::abs(a.at(i) - b[i]));
    for (double value : b) scale = std::max(scale, std::abs(value));
    worst = std::max(worst, difference / scale);
  }
  return worst;
}

TEST(GlooTraining, LaunchedProcessesEndWithTheWeightsOfInProcessRanks) {
  ZT_SKIP_WITHOUT_GLOO();
  ASSERT_TRUE(fs::exists(kBinary)) << "no " << kBinary << ": build the zerotune target first";
  const fs::path root = test_root();
  // Plain data parallelism (all-reduce), and ZeRO-2 (reduce-scatter, all-gather).
  const std::vector<std::vector<std::string>> variants = {
      {}, {"--deepspeed", std::string(ZT_SOURCE_DIR) + "/examples/ds_config_zero2.json"}};
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const fs::path launched = root / ("launched" + std::to_string(v)),
                   inprocess = root / ("inprocess" + std::to_string(v));
    std::vector<std::string> launch = {
        "launch",        "--nproc_per_node", "2", "--master_port", std::to_string(zt::testing::free_loopback_port()),
        kBinary.string()};
    std::vector<std::string> train = train_args(launched, kData);
    launch.insert(launch.end(), train.begin(), train.end());
    launch.insert(launch.end(), variants[v].begin(), variants[v].end());
    const Outcome launched_run = run_zerotune(launch, root / "launch.log");
    ASSERT_EQ(launched_run.status, 0) << zt::testing::read_text(root / "launch.log");
    EXPECT_NE(zt::testing::read_text(root / "launch.log").find("Gloo on the CPU"), std::string::npos)
        << zt::testing::read_text(root / "launch.log");

    std::vector<std::string> threads = train_args(inprocess, kData);
    threads.insert(threads.end(), {"--inprocess_ranks", "2"});
    threads.insert(threads.end(), variants[v].begin(), variants[v].end());
    ASSERT_EQ(run_zerotune(threads, root / "inprocess.log").status, 0)
        << zt::testing::read_text(root / "inprocess.log");

    EXPECT_LE(relative_difference(launched / "model.safetensors", inprocess / "model.safetensors"), 1e-6) << v;
    EXPECT_GT(relative_difference(launched / "model.safetensors", fs::path(kModel) / "model.safetensors"), 1e-4)
        << "training must have moved the weights";
  }
}

// Rank 1 fails after joining (its model folder has no tokenizer: what the checks before joining
// cannot see, since they load nothing), while rank 0 goes on into the first collective.
std::vector<std::string> rank_train_args(const fs::path& root, int rank) {
  std::vector<std::string> args = train_args(root / "out", kData);
  if (rank == 1) {
    fs::create_directories(root / "missing_model");  // a folder, empty: no tokenizer, no weights
    args[2] = (root / "missing_model").string();
  }
  return args;
}

TEST(GlooTraining, ARankThatFailsMakesTheOtherExitWithinTheTimeout) {
  ZT_SKIP_WITHOUT_GLOO();
  ASSERT_TRUE(fs::exists(kBinary)) << "no " << kBinary << ": build the zerotune target first";
  const fs::path root = test_root();
  const std::string port = std::to_string(zt::testing::free_loopback_port());
  const auto start = Clock::now();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    const std::map<std::string, std::string> env = {{"RANK", std::to_string(rank)},
                                                    {"LOCAL_RANK", std::to_string(rank)},
                                                    {"WORLD_SIZE", "2"},
                                                    {"MASTER_ADDR", "127.0.0.1"},
                                                    {"MASTER_PORT", port},
                                                    {"ZT_JOB_TOKEN", "gloo-train-test"}};
    pids.push_back(start_zerotune(rank_train_args(root, rank), env, root / ("rank" + std::to_string(rank) + ".log")));
  }
  const std::vector<Outcome> outcomes = wait_all(pids, start, 60s);
  const std::string rank0 = zt::testing::read_text(root / "rank0.log"),
                    rank1 = zt::testing::read_text(root / "rank1.log");
  EXPECT_NE(outcomes[1].status, 0) << rank1;
  EXPECT_NE(rank1.find("missing_model"), std::string::npos) << rank1;
  EXPECT_EQ(outcomes[0].status, 1) << rank0;
  testing::expect_mentions(rank0, {"error: rank 0: ", " elements (", " after ", "world size 2"});
  EXPECT_LT(outcomes[0].seconds, 10.0) << "within --ddp_timeout 10: " << rank0;
}

TEST(GlooTraining, TheLauncherReturnsTheFailingRanksStatus) {
  ZT_SKIP_WITHOUT_GLOO();
  ASSERT_TRUE(fs::exists(kBinary)) << "no " << kBinary << ": build the zerotune target first";
  const fs::path root = test_root();
  std::string command = "exec " + kBinary.string();
  for (const std::string& arg : rank_train_args(root, 0)) command += " '" + arg + "'";
  // The shell swaps in rank 1's missing data file.
  const std::string data_file = "'" + kData + "'";
  command.replace(
      command.find(data_file), data_file.size(),
      "\"$([ \"$RANK\" = 1 ] && echo '" + (root / "missing.json").string() + "' || echo '" + kData + "')\"");
  const Outcome outcome = run_zerotune({"launch", "--nproc_per_node", "2", "--master_port",
                                        std::to_string(zt::testing::free_loopback_port()), "sh", "-c", command},
                                       root / "launch.log");
  const std::string log = zt::testing::read_text(root / "launch.log");
  // Rank 0 fails too, at once, so the launcher may see either first: both exit with 1.
  EXPECT_EQ(outcome.status, 1) << log;
  testing::expect_mentions(log, {"[rank 1] zerotune train: error: ", "missing.json", "exited with status 1"});
  EXPECT_LT(outcome.seconds, 10.0) << log;
}

}  // namespace
}  // namespace zt::distributed
