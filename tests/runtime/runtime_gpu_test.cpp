// Devices, streams and events on a real GPU.
#include <gtest/gtest.h>

#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/env_report.h"
#include "runtime/error.h"
#include "runtime/streams/stream.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

TEST(RuntimeGpu, DevicePropertiesAreSensible) {
  ZT_SKIP_WITHOUT_GPU();
  DeviceProperties p = device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.total_memory, std::size_t{1} << 30);
  EXPECT_GE(p.compute_major, 7);
  EXPECT_GT(p.multiprocessors, 0);
  MemoryInfo info = device_memory_info(0);
  EXPECT_GT(info.free, 0u);
  EXPECT_LE(info.free, info.total);
  EXPECT_THROW(device_properties(cuda_device_count()), Error);
  {
    DeviceGuard guard(0);
    EXPECT_EQ(current_cuda_device(), 0);
  }
}

TEST(RuntimeGpu, StreamsAndEventsOrderAndTimeWork) {
  ZT_SKIP_WITHOUT_GPU();
  Stream producer = Stream::create();
  Stream consumer = Stream::create(-1);
  void* buffer = nullptr;
  ZT_CUDA_CHECK(cudaMalloc(&buffer, 64 << 20));
  Event start(true), stop(true), ready;
  start.record(producer.get());
  ZT_CUDA_CHECK(cudaMemsetAsync(buffer, 7, 64 << 20, producer.get()));
  stop.record(producer.get());
  ready.record(producer.get());
  ready.wait_on(consumer.get());
  unsigned char byte = 0;
  ZT_CUDA_CHECK(
      cudaMemcpyAsync(&byte, static_cast<char*>(buffer) + (63 << 20), 1, cudaMemcpyDeviceToHost, consumer.get()));
  consumer.synchronize();
  EXPECT_EQ(byte, 7);
  EXPECT_TRUE(stop.query());
  EXPECT_TRUE(producer.query());
  EXPECT_GT(start.elapsed_ms(stop), 0.0f);
  Stream moved = std::move(producer);
  EXPECT_EQ(producer.get(), nullptr);
  EXPECT_NE(moved.get(), nullptr);
  ZT_CUDA_CHECK(cudaFree(buffer));
}

TEST(RuntimeGpu, EnvironmentReportListsTheGpu) {
  ZT_SKIP_WITHOUT_GPU();
  nlohmann::json report = collect_environment_report();
  ASSERT_EQ(report["gpus"].size(), static_cast<std::size_t>(cuda_device_count()));
  EXPECT_EQ(report["gpus"][0]["name"], device_properties(0).name);
  EXPECT_NE(report["libraries"]["cuda_driver"], "none");
  EXPECT_FALSE(report.contains("gpu_unavailable_reason"));
}

}  // namespace
}  // namespace zt
