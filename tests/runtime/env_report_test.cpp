#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/device.h"
#include "runtime/env_report.h"

namespace zt {
namespace {

TEST(EnvReport, HasBuildLibrariesAndLauncherVariables) {
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("MASTER_PORT", "29500", 1);
  setenv("UNRELATED_VARIABLE", "x", 1);
  nlohmann::json report = collect_environment_report();
  EXPECT_FALSE(report["zerotune"]["version"].get<std::string>().empty());
  EXPECT_FALSE(report["zerotune"]["cuda_architectures"].get<std::string>().empty());
  for (const char* lib : {"cuda_runtime", "cublas", "nccl", "cudnn"})
    EXPECT_NE(report["libraries"][lib].get<std::string>(), "unknown") << lib;
  EXPECT_EQ(report["environment"]["NCCL_DEBUG"], "INFO");
  EXPECT_EQ(report["environment"]["MASTER_PORT"], "29500");
  EXPECT_FALSE(report["environment"].contains("UNRELATED_VARIABLE"));
  std::string text = format_environment_report(report);
  EXPECT_NE(text.find("NCCL_DEBUG"), std::string::npos);
  if (!cuda_available()) {
    EXPECT_TRUE(report["gpus"].empty());
    EXPECT_NE(text.find("no GPU: "), std::string::npos) << text;
  }
  unsetenv("NCCL_DEBUG");
  unsetenv("MASTER_PORT");
  unsetenv("UNRELATED_VARIABLE");
}

}  // namespace
}  // namespace zt
