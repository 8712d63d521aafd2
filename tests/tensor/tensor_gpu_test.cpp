// Tensor copies, casts, fills and random draws on the GPU, checked against the CPU path.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/streams/stream.h"
#include "tensor/tensor.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using Values = std::vector<double>;

TEST(TensorGpu, CastsEveryDTypePairOnStridedViewsLikeTheCpu) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor host = Tensor::normal({7, 13, 5}, 3, 0, 0.0, 40.0, DType::kF64);
  for (DType from : kAllDTypes) {
    Tensor cpu_src = host.to(from).permute({2, 0, 1}).slice(2, 1, 13, 3);  // strided, offset
    Tensor gpu_src = host.to(from).to(Device::cuda()).permute({2, 0, 1}).slice(2, 1, 13, 3);
    for (DType to : kAllDTypes) {
      Tensor expected = Tensor::empty(cpu_src.shape(), to);
      expected.copy_from(cpu_src);
      Tensor on_gpu = Tensor::empty({cpu_src.size(0), cpu_src.size(2), cpu_src.size(1)}, to, Device::cuda())
                          .transpose(1, 2);  // strided destination
      on_gpu.copy_from(gpu_src);
      ASSERT_EQ(on_gpu.to_vector(), expected.to_vector()) << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

TEST(TensorGpu, CrossDeviceCopiesWithCastAndStrides) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor host = Tensor::uniform({33, 17}, 5, 0);
  Tensor gpu_bf16 = Tensor::empty({17, 33}, DType::kBF16, Device::cuda());
  gpu_bf16.copy_from(host.transpose(0, 1));  // CPU strided f32 -> GPU contiguous bf16
  Tensor back = Tensor::empty({33, 17}, DType::kF32).transpose(0, 1);
  back.copy_from(gpu_bf16);  // GPU bf16 -> CPU strided f32
  EXPECT_EQ(back.to_vector(), host.transpose(0, 1).to(DType::kBF16).to(DType::kF32).to_vector());
  EXPECT_EQ(Tensor::zeros({0, 4}, DType::kF32, Device::cuda()).to(Device::cpu()).numel(), 0);
}

TEST(TensorGpu, AsyncCopiesThroughPinnedMemoryOnAStream) {
  ZT_SKIP_WITHOUT_GPU();
  Stream stream = Stream::create();
  Tensor pinned = Tensor::empty_pinned({1 << 20}, DType::kF32);
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(Tensor::empty({4}, DType::kF32).is_pinned());
  pinned.copy_from(Tensor::arange(0, 1 << 20, 1, DType::kF32));
  Tensor device = Tensor::empty({1 << 20}, DType::kF32, Device::cuda(), stream.get());
  device.copy_from_async(pinned, stream.get());
  Tensor result = Tensor::empty_pinned({1 << 20}, DType::kF32);
  result.copy_from_async(device, stream.get());
  stream.synchronize();
  EXPECT_EQ(result.to_vector(), pinned.to_vector());
}

TEST(TensorGpu, FillArangeAndRandomMatchTheCpu) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor filled = Tensor::full({3, 5}, 1.5, DType::kF16, Device::cuda());
  EXPECT_EQ(filled.to_vector(), Values(15, 1.5));
  Tensor view = filled.slice(1, 0, 5, 2);
  view.fill_(-4);
  EXPECT_EQ(filled.to_vector()[0], -4);
  EXPECT_EQ(filled.to_vector()[1], 1.5);
  EXPECT_EQ(Tensor::arange(-2, 3, 0.5, DType::kBF16, Device::cuda()).to_vector(),
            Tensor::arange(-2, 3, 0.5, DType::kBF16).to_vector());
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    EXPECT_EQ(Tensor::uniform({1001}, 77, 12, -1, 3, dtype, Device::cuda()).to_vector(),
              Tensor::uniform({1001}, 77, 12, -1, 3, dtype).to_vector())
        << dtype_name(dtype);
    Tensor gpu = Tensor::normal({4099}, 77, 12, 0.5, 2, dtype, Device::cuda());
    Tensor cpu = Tensor::normal({4099}, 77, 12, 0.5, 2, dtype);
    double tolerance = dtype == DType::kF32 ? 1e-5 : 1e-2;  // libm and CUDA math differ by ulps
    EXPECT_TRUE(allclose(gpu, cpu, tolerance, tolerance)) << dtype_name(dtype);
  }
}

TEST(TensorGpu, DeviceToDeviceCopyOnTheSameGpu) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor a = Tensor::uniform({1 << 16}, 1, 0, 0, 1, DType::kF32, Device::cuda());
  Tensor b = a.clone();
  EXPECT_NE(a.data_ptr(), b.data_ptr());
  EXPECT_EQ(a.to_vector(), b.to_vector());
  EXPECT_EQ(a.to(DType::kF64).to(DType::kF32).to_vector(), a.to_vector());
}

}  // namespace
}  // namespace zt
