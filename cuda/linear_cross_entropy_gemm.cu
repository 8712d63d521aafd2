#include "cuda/linear_cross_entropy_gemm.cuh"

#include <cublasLt.h>

#include <memory>
#include <string>
#include <unordered_map>

#include "cuda/scratch_buffer.h"
#include "runtime/check.h"
#include "runtime/error.h"

// The row-major product C = op(A) · op(B) is issued as cuBLASLt's column-major
// Cᵀ = op(B)ᵀ · op(A)ᵀ, exactly as cuda::gemm does (see cublaslt_gemm.cpp): a row-major
// r × c matrix with row stride ld is the column-major c × r matrix with leading dimension ld,
// so cuBLASLt's A is our b and its B our a, and transpose flags carry over unchanged.
namespace zt::cuda {
namespace {

constexpr std::size_t kMaxWorkspaceBytes = 32u << 20;

cudaDataType_t data_type(DType dtype, const char* what) {
  switch (dtype) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF16: return CUDA_R_16F;
    default: break;
  }
  throw Error(std::string(what) + ": dtype " + dtype_name(dtype) + " is not supported; use float32, bfloat16 or float16");
}

// One handle per device and thread, as a handle is bound to the device current at creation.
cublasLtHandle_t lt_handle() {
  struct Handles {
    std::unordered_map<int, cublasLtHandle_t> by_device;
    ~Handles() {
      for (auto& entry : by_device) cublasLtDestroy(entry.second);
    }
  };
  thread_local Handles handles;
  int device = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  auto found = handles.by_device.find(device);
  if (found != handles.by_device.end()) return found->second;
  cublasLtHandle_t handle = nullptr;
  ZT_CUBLAS_CHECK(cublasLtCreate(&handle));
  handles.by_device.emplace(device, handle);
  return handle;
}

struct Deleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using Desc = std::unique_ptr<cublasLtMatmulDescOpaque_t, Deleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, Deleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, Deleter>;

Layout column_major(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  cublasLtMatrixLayout_t raw = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&raw, type, static_cast<std::uint64_t>(rows),
                                             static_cast<std::uint64_t>(cols), ld));
  return Layout(raw);
}

// The largest power of two (up to 256) dividing the address: algorithms that need more are
// then excluded instead of faulting on the chunk views' odd offsets.
std::uint32_t alignment(const void* data) {
  std::uint64_t bits = reinterpret_cast<std::uintptr_t>(data) | 256u;
  return static_cast<std::uint32_t>(bits & (~bits + 1));
}

std::string describe(const char* what, const GemmOperand& a, const GemmOperand& b, const GemmResult& out) {
  auto operand = [](const GemmOperand& x) {
    return std::to_string(x.rows) + "x" + std::to_string(x.cols) + (x.transpose ? " (transposed)" : "") + " ld " +
           std::to_string(x.ld);
  };
  return std::string(what) + " (a " + operand(a) + ", b " + operand(b) + ", out " + std::to_string(out.rows) + "x" +
         std::to_string(out.cols) + " ld " + std::to_string(out.ld) + ")";
}

void check_sizes(const GemmOperand& a, const GemmOperand& b, const GemmResult& out, const std::string& what) {
  std::int64_t m = a.transpose ? a.cols : a.rows, ka = a.transpose ? a.rows : a.cols;
  std::int64_t kb = b.transpose ? b.cols : b.rows, n = b.transpose ? b.rows : b.cols;
  ZT_REQUIRE(ka == kb && m == out.rows && n == out.cols, what + ": sizes do not agree");
  ZT_REQUIRE(m >= 1 && n >= 1 && ka >= 1, what + ": every size must be at least 1");
  ZT_REQUIRE(a.ld >= a.cols && b.ld >= b.cols && out.ld >= out.cols, what + ": a leading dimension is too small");
}

Desc matmul_desc(const GemmOperand& a, const GemmOperand& b) {
  cublasLtMatmulDesc_t raw = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&raw, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  Desc desc(raw);
  cublasOperation_t op_a = b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  return desc;
}

Preference preference(const GemmOperand& a, const GemmOperand& b, const GemmResult& out) {
  cublasLtMatmulPreference_t raw = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw));
  Preference pref(raw);
  std::uint64_t workspace = kMaxWorkspaceBytes;
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                       sizeof(workspace)));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, b.data},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, a.data},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, out.data},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, out.data}};
  for (const auto& [attribute, data] : alignments) {
    std::uint32_t bytes = alignment(data);
    ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw, attribute, &bytes, sizeof(bytes)));
  }
  return pref;
}

}  // namespace

void gemm_accumulate(DType input_dtype, DType out_dtype, const GemmOperand& a, const GemmOperand& b,
                     const GemmResult& out, float beta, const char* what, cudaStream_t stream) {
  std::string name = describe(what, a, b, out);
  check_sizes(a, b, out, name);
  ZT_REQUIRE(out_dtype == input_dtype || out_dtype == DType::kF32,
             name + ": output dtype " + dtype_name(out_dtype) + " must be float32 or the inputs' " +
                 dtype_name(input_dtype));
  cudaDataType_t in_type = data_type(input_dtype, what), out_type = data_type(out_dtype, what);
  cublasLtHandle_t handle = lt_handle();
  Desc desc = matmul_desc(a, b);
  Layout layout_a = column_major(in_type, b.cols, b.rows, b.ld);  // cuBLASLt's A is our b
  Layout layout_b = column_major(in_type, a.cols, a.rows, a.ld);
  Layout layout_d = column_major(out_type, out.cols, out.rows, out.ld);
  Preference pref = preference(a, b, out);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  ZT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, desc.get(), layout_a.get(), layout_b.get(), layout_d.get(),
                                                 layout_d.get(), pref.get(), 1, &heuristic, &found));
  ZT_REQUIRE(found > 0, name + ": cuBLASLt has no algorithm for " + dtype_name(input_dtype) + " inputs and " +
                            dtype_name(out_dtype) + " output");
  ScratchBuffer workspace(heuristic.workspaceSize, stream);
  const float alpha = 1.0f;
  ZT_CUBLAS_CHECK(cublasLtMatmul(handle, desc.get(), &alpha, b.data, layout_a.get(), a.data, layout_b.get(), &beta,
                                 out.data, layout_d.get(), out.data, layout_d.get(), &heuristic.algo, workspace.data(),
                                 heuristic.workspaceSize, stream));
}

}  // namespace zt::cuda
