// Checked calls into CUDA, cuBLAS, NCCL and cuDNN. Every return code is checked; a failure
// throws zt::Error naming the call, the source location, the library's error string and
// the rank when distributed.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

namespace zt::detail {

void check_cuda(cudaError_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);
void check_nccl(ncclResult_t status, const char* call, const char* file, int line);
void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line);

}  // namespace zt::detail

#define ZT_CUDA_CHECK(call) ::zt::detail::check_cuda((call), #call, __FILE__, __LINE__)
#define ZT_CUBLAS_CHECK(call) ::zt::detail::check_cublas((call), #call, __FILE__, __LINE__)
#define ZT_NCCL_CHECK(call) ::zt::detail::check_nccl((call), #call, __FILE__, __LINE__)
#define ZT_CUDNN_CHECK(call) ::zt::detail::check_cudnn((call), #call, __FILE__, __LINE__)
