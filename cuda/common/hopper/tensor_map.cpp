#include "cuda/common/hopper/tensor_map.h"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <string>

#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda::hopper {
namespace {

// The driver's encoder, found through the runtime so the project needs no link to libcuda.
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* symbol = nullptr;
    cudaDriverEntryPointQueryResult found{};
    ZT_CUDA_CHECK(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &symbol, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || symbol == nullptr)
      throw Error("the CUDA driver has no cuTensorMapEncodeTiled; the Hopper kernels need driver 525 or newer");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(symbol);
  }();
  return fn;
}

}  // namespace

CUtensorMap make_tensor_map(const void* base, DType dtype, const TensorMapShape& shape) {
  ZT_REQUIRE(dtype == DType::kBF16 || dtype == DType::kF16,
             std::string("tensor maps here hold bfloat16 or float16, got ") + dtype_name(dtype));
  CUtensorMap map{};
  const cuuint64_t sizes[3] = {shape.size0, shape.size1, shape.size2};
  const cuuint64_t strides[2] = {shape.stride1_bytes, shape.stride2_bytes};
  const cuuint32_t box[3] = {64, 1, shape.box_rows};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUtensorMapDataType type =
      dtype == DType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult result = encoder()(&map, type, 3, const_cast<void*>(base), sizes, strides, box, element_strides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    throw Error("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(result)) +
                ") for a tensor of " + std::to_string(shape.size0) + " x " + std::to_string(shape.size1) + " x " +
                std::to_string(shape.size2) + " elements, strides " + std::to_string(shape.stride1_bytes) + " / " +
                std::to_string(shape.stride2_bytes) + " bytes, box rows " + std::to_string(shape.box_rows));
  return map;
}

}  // namespace zt::cuda::hopper
