#include "runtime/check.h"

#include <string>

#include "runtime/error.h"
#include "runtime/rank.h"

namespace zt::detail {
namespace {

[[noreturn]] void throw_failed(const char* library, const char* call, const char* file, int line,
                               const std::string& reason) {
  throw Error(std::string(library) + " call `" + call + "` failed at " + file + ":" + std::to_string(line) +
              rank_suffix() + ": " + reason);
}

}  // namespace

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear the sticky-free error so later calls are not blamed
  std::string reason = std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver)
    throw NoGpuError("CUDA call `" + std::string(call) + "` failed at " + file + ":" + std::to_string(line) +
                     rank_suffix() + ": " + reason +
                     "; this needs an NVIDIA GPU with a working driver (see `zerotune env`)");
  throw_failed("CUDA", call, file, line, reason);
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw_failed("cuBLAS", call, file, line,
               std::string(cublasGetStatusString(status)) + " (" + cublasGetStatusName(status) + ")");
}

void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  throw_failed("NCCL", call, file, line,
               std::string(ncclGetErrorString(status)) + "; run with NCCL_DEBUG=INFO for NCCL's own account");
}

void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw_failed("cuDNN", call, file, line, cudnnGetErrorString(status));
}

}  // namespace zt::detail
