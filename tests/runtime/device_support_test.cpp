// Which GPUs zerotune computes on, decided from a GPU's properties alone (fake ones here, so no
// GPU is needed): compute capability 8.0 and newer run; older GPUs get an error naming the
// GPU, its capability and what to do. And what the CPU says it computes in for each dtype.
#include <gtest/gtest.h>

#include <string>

#include "runtime/device.h"

namespace zt {
namespace {

DeviceProperties gpu(const std::string& name, int major, int minor) {
  DeviceProperties p;
  p.index = 1;
  p.name = name;
  p.compute_major = major;
  p.compute_minor = minor;
  return p;
}

TEST(DeviceSupport, GpusFromAmpereOnAreSupported) {
  for (const DeviceProperties& p :
       {gpu("NVIDIA A100-SXM4-80GB", 8, 0), gpu("NVIDIA GeForce RTX 3090", 8, 6), gpu("NVIDIA A10", 8, 6),
        gpu("NVIDIA L40", 8, 9), gpu("NVIDIA GeForce RTX 4090", 8, 9), gpu("NVIDIA H200", 9, 0),
        gpu("a newer GPU", 12, 0)})
    EXPECT_EQ(unsupported_gpu_reason(p), "") << p.name;
}

TEST(DeviceSupport, OlderGpusAreRefusedNamingTheirCapabilityAndWhatToDo) {
  for (const DeviceProperties& p :
       {gpu("Tesla T4", 7, 5), gpu("Tesla V100-SXM2-32GB", 7, 0), gpu("Tesla P100", 6, 0)}) {
    const std::string reason = unsupported_gpu_reason(p);
    EXPECT_NE(reason.find("GPU 1 (" + p.name + ") has compute capability " + std::to_string(p.compute_major) + "." +
                          std::to_string(p.compute_minor)),
              std::string::npos)
        << reason;
    EXPECT_NE(reason.find("need 8.0 or newer"), std::string::npos) << reason;
    EXPECT_NE(reason.find("--device cpu"), std::string::npos) << reason;
    EXPECT_NE(reason.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << reason;
  }
}

TEST(DeviceSupport, NoGpuBelowTheFloorHasBfloat16AndNoneAboveLacksIt) {
  // The floor makes a separate --bf16 check unnecessary: every supported GPU has bf16.
  EXPECT_TRUE(gpu("A100", kMinComputeMajor, 0).supports_bf16());
  EXPECT_FALSE(gpu("T4", kMinComputeMajor - 1, 5).supports_bf16());
}

TEST(DeviceSupport, TheCpuSaysWhatItComputesIn) {
  EXPECT_EQ(cpu_arithmetic(DType::kF32), "float32");
  EXPECT_EQ(cpu_arithmetic(DType::kF64), "float64");
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const std::string name = dtype_name(dtype);
    const std::string said = cpu_arithmetic(dtype);
    EXPECT_EQ(said.rfind(name + " weights and activations, float32 arithmetic inside every op", 0), 0u) << said;
    EXPECT_NE(said.find("rounded to " + name), std::string::npos) << said;
  }
}

}  // namespace
}  // namespace zt
