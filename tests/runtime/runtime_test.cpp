#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/rank.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using testing::error_of;

TEST(Check, CudaFailureNamesCallLocationAndReason) {
  std::string m = error_of([] { ZT_CUDA_CHECK(cudaErrorInvalidValue); });
  EXPECT_NE(m.find("CUDA call `cudaErrorInvalidValue` failed at"), std::string::npos) << m;
  EXPECT_NE(m.find("runtime_test.cpp:"), std::string::npos) << m;
  EXPECT_NE(m.find("cudaErrorInvalidValue"), std::string::npos) << m;
  EXPECT_NO_THROW(ZT_CUDA_CHECK(cudaSuccess));
}

TEST(Check, NoDeviceBecomesNoGpuError) { EXPECT_THROW(ZT_CUDA_CHECK(cudaErrorNoDevice), NoGpuError); }

TEST(Check, LibraryFailuresNameTheLibraryAndTheRank) {
  ProcessRank rank;
  rank.rank = 3;
  rank.world_size = 4;
  rank.distributed = true;
  set_thread_rank(rank);
  std::string cublas = error_of([] { ZT_CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED); });
  EXPECT_NE(cublas.find("cuBLAS call"), std::string::npos) << cublas;
  EXPECT_NE(cublas.find("on rank 3"), std::string::npos) << cublas;
  EXPECT_NE(cublas.find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos) << cublas;
  std::string nccl = error_of([] { ZT_NCCL_CHECK(ncclInvalidArgument); });
  EXPECT_NE(nccl.find("NCCL call"), std::string::npos) << nccl;
  EXPECT_NE(nccl.find("NCCL_DEBUG=INFO"), std::string::npos) << nccl;
  std::string cudnn = error_of([] { ZT_CUDNN_CHECK(CUDNN_STATUS_BAD_PARAM); });
  EXPECT_NE(cudnn.find("cuDNN call"), std::string::npos) << cudnn;
  EXPECT_NE(cudnn.find("BAD_PARAM"), std::string::npos) << cudnn;
  set_thread_rank(rank_from_environment());
}

TEST(Rank, ReadsEachLauncherEnvironment) {
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  setenv("OMPI_COMM_WORLD_RANK", "5", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  ProcessRank mpi = rank_from_environment();
  EXPECT_EQ(mpi.launcher, "openmpi");
  EXPECT_EQ(mpi.rank, 5);
  EXPECT_EQ(mpi.world_size, 8);
  EXPECT_EQ(mpi.local_rank, 1);
  EXPECT_EQ(mpi.local_world_size, 1) << "unknown without OMPI_COMM_WORLD_LOCAL_SIZE";
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  EXPECT_EQ(rank_from_environment().local_world_size, 4);
  setenv("RANK", "2", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  const ProcessRank torchrun = rank_from_environment();
  EXPECT_EQ(torchrun.launcher, "torchrun");  // torchrun's variables win
  EXPECT_EQ(torchrun.local_world_size, 2);
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                           "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    unsetenv(name);
  setenv("SLURM_PROCID", "not-a-number", 1);
  setenv("SLURM_NTASKS", "2", 1);
  EXPECT_FALSE(rank_from_environment().distributed);
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");
}

TEST(Log, LevelsPrefixesAndRankZeroOnly) {
  EXPECT_EQ(log::parse_level("warn"), log::Level::kWarn);
  EXPECT_THROW(log::parse_level("loud"), Error);
  ProcessRank rank;
  rank.rank = 1;
  rank.world_size = 2;
  rank.distributed = true;
  set_thread_rank(rank);
  EXPECT_EQ(log::prefix(log::Level::kWarn), "[zerotune rank 1/2 W] ");
  EXPECT_EQ(log::prefix(log::Level::kDebug), "[zerotune rank 1/2 D] ");
  EXPECT_EQ(log::prefix(log::Level::kInfo), "[zerotune rank 1/2 I] ");
  EXPECT_EQ(log::prefix(log::Level::kError), "[zerotune rank 1/2 E] ");
  log::set_level(log::Level::kInfo);
  EXPECT_FALSE(log::enabled(log::Level::kInfo));  // not rank 0
  EXPECT_TRUE(log::enabled(log::Level::kWarn));
  rank.rank = 0;
  set_thread_rank(rank);
  EXPECT_TRUE(log::enabled(log::Level::kInfo));
  EXPECT_FALSE(log::enabled(log::Level::kDebug));
  log::set_level(log::Level::kError);
  EXPECT_FALSE(log::enabled(log::Level::kWarn));
  log::set_level(log::Level::kInfo);
  set_thread_rank(rank_from_environment());
}

TEST(Device, ParsesDeviceNames) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::cuda(2).str(), "cuda:2");
  EXPECT_THROW(parse_device("cuda:x"), Error);
  EXPECT_THROW(parse_device("tpu"), Error);
}

TEST(Device, AbsenceOfAGpuIsReportedNotThrown) {
  if (cuda_available()) {
    EXPECT_GT(cuda_device_count(), 0);
    EXPECT_TRUE(cuda_unavailable_reason().empty());
    EXPECT_NO_THROW(require_gpu("this test"));
  } else {
    EXPECT_EQ(cuda_device_count(), 0);
    EXPECT_FALSE(cuda_unavailable_reason().empty());
    std::string m = error_of([] { require_gpu("training on cuda:0"); });
    EXPECT_NE(m.find("training on cuda:0 needs an NVIDIA GPU"), std::string::npos) << m;
    EXPECT_THROW(require_gpu("x"), NoGpuError);
    EXPECT_THROW(device_properties(0), Error);
  }
}

}  // namespace
}  // namespace zt
