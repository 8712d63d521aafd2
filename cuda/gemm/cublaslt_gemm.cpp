#include "cuda/gemm/cublaslt_gemm.h"

#include <cublasLt.h>

#include <atomic>
#include <limits>
#include <memory>
#include <string>

#include "cuda/common/device_handle.h"
#include "cuda/common/scratch_buffer.h"
#include "runtime/check.h"
#include "runtime/error.h"

// Row-major to column-major. cuBLASLt reads every matrix column-major, and a row-major
// r × c matrix with row stride ld is, byte for byte, the column-major c × r matrix (its
// transpose) with leading dimension ld. So the row-major product C = op(A) · op(B) is computed
// as the column-major product Cᵀ = op(B)ᵀ · op(A)ᵀ:
//   - cuBLASLt's "A" is our b, laid out as b.cols × b.rows (ld b.ld), which is b's storage
//     transposed. op(B)ᵀ is exactly that when b is used as stored (OP_N), and its transpose
//     when b is used transposed (OP_T). Likewise cuBLASLt's "B" is our a.
//   - cuBLASLt's (m, n, k) are our (n, m, k), and its D is our C seen as n × m (ld out.ld).
//   - The bias epilogue adds a vector of length "rows of D" = our n to every column of D,
//     i.e. bias[j] to every row of our C: the row-broadcast a linear layer needs.
namespace zt::cuda {
namespace {

// The most workspace an algorithm may ask for: what cuBLAS itself reserves on Hopper. Each
// GEMM takes only what its algorithm needs.
constexpr std::size_t kMaxWorkspaceBytes = 32u << 20;

std::atomic<bool> tf32_for_float32{false};

cudaDataType_t cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF16:
      return CUDA_R_16F;
    default:
      break;
  }
  throw Error(std::string("cuBLASLt gemm: dtype ") + dtype_name(dtype) +
              " is not supported; use float32, bfloat16 or float16");
}

cublasLtHandle_t cublaslt_handle() {
  return handle_for_current_device<cublasLtHandle_t, cublasLtDestroy>([](int) {
    cublasLtHandle_t handle = nullptr;
    ZT_CUBLAS_CHECK(cublasLtCreate(&handle));
    return handle;
  });
}

struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using MatrixLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDeleter>;

// Column-major rows × cols with leading dimension ld, `batch` of them batch_stride apart.
MatrixLayout column_major_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                 std::int64_t batch, std::int64_t batch_stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  ZT_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&raw, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld));
  MatrixLayout layout(raw);
  auto count = static_cast<std::int32_t>(batch);
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                                   sizeof(batch_stride)));
  return layout;
}

// The alignment every batch entry's start address has, capped at the 256 bytes cuBLASLt
// assumes by default; algorithms needing more than the real alignment are then excluded.
std::uint32_t alignment_bytes(const void* data, std::int64_t batch, std::int64_t batch_stride, std::size_t elem) {
  std::uint64_t bits = reinterpret_cast<std::uintptr_t>(data) | 256u;
  if (batch > 1) bits |= static_cast<std::uint64_t>(batch_stride) * elem;
  return static_cast<std::uint32_t>(bits & (~bits + 1));
}

std::string describe(const GemmOperand& x) {
  return std::to_string(x.rows) + "x" + std::to_string(x.cols) + (x.transpose ? " (transposed)" : "") + " ld " +
         std::to_string(x.ld);
}

std::string describe(const char* what, const GemmOperand& a, const GemmOperand& b, const GemmResult& out) {
  return std::string(what) + ": a " + describe(a) + ", b " + describe(b) + ", out " + std::to_string(out.rows) + "x" +
         std::to_string(out.cols) + " ld " + std::to_string(out.ld);
}

void check_problem(const GemmOperand& a, const GemmOperand& b, const GemmResult& out, std::int64_t batch,
                   const std::string& what) {
  std::int64_t m = a.transpose ? a.cols : a.rows, ka = a.transpose ? a.rows : a.cols;
  std::int64_t kb = b.transpose ? b.cols : b.rows, n = b.transpose ? b.rows : b.cols;
  ZT_REQUIRE(ka == kb && m == out.rows && n == out.cols, what + ": sizes do not agree");
  ZT_REQUIRE(m >= 1 && n >= 1 && ka >= 1 && batch >= 1, what + ": every size must be at least 1");
  ZT_REQUIRE(batch <= std::numeric_limits<std::int32_t>::max(), what + ": batch count over 2^31");
  ZT_REQUIRE(a.ld >= a.cols && b.ld >= b.cols && out.ld >= out.cols, what + ": a leading dimension is too small");
}

MatmulDesc matmul_desc(DType dtype, const GemmOperand& a, const GemmOperand& b, const void* bias) {
  cublasLtMatmulDesc_t raw = nullptr;
  const bool tf32 = dtype == DType::kF32 && tf32_for_float32.load(std::memory_order_relaxed);
  ZT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&raw, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  MatmulDesc desc(raw);
  cublasOperation_t op_a = b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our b
  cublasOperation_t op_b = a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  if (bias != nullptr) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  return desc;
}

Preference preference(std::size_t elem, std::size_t out_elem, const GemmOperand& a, const GemmOperand& b,
                      const GemmResult& out, std::int64_t batch) {
  cublasLtMatmulPreference_t raw = nullptr;
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw));
  Preference pref(raw);
  std::uint64_t workspace = kMaxWorkspaceBytes;
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                       sizeof(workspace)));
  std::uint32_t align_a = alignment_bytes(b.data, batch, b.batch_stride, elem);  // cuBLASLt's A is our b
  std::uint32_t align_b = alignment_bytes(a.data, batch, a.batch_stride, elem);
  std::uint32_t align_d = alignment_bytes(out.data, batch, out.batch_stride, out_elem);
  ZT_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
  ZT_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
  ZT_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof(align_d)));
  ZT_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)));
  return pref;
}

// Every product: inputs in `dtype`, the result in `out_dtype`, beta · out added.
void gemm_any(DType dtype, DType out_dtype, const GemmOperand& a, const GemmOperand& b, const GemmResult& out,
              std::int64_t batch, const void* bias, float beta, const std::string& what, cudaStream_t stream) {
  check_problem(a, b, out, batch, what);
  ZT_REQUIRE(out_dtype == dtype || out_dtype == DType::kF32,
             what + ": output dtype " + dtype_name(out_dtype) + " must be float32 or the inputs' " + dtype_name(dtype));
  cudaDataType_t type = cuda_data_type(dtype), out_type = cuda_data_type(out_dtype);
  cublasLtHandle_t handle = cublaslt_handle();
  MatmulDesc desc = matmul_desc(dtype, a, b, bias);
  MatrixLayout layout_a = column_major_layout(type, b.cols, b.rows, b.ld, batch, b.batch_stride);
  MatrixLayout layout_b = column_major_layout(type, a.cols, a.rows, a.ld, batch, a.batch_stride);
  MatrixLayout layout_d = column_major_layout(out_type, out.cols, out.rows, out.ld, batch, out.batch_stride);
  Preference pref = preference(dtype_size(dtype), dtype_size(out_dtype), a, b, out, batch);

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  ZT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, desc.get(), layout_a.get(), layout_b.get(), layout_d.get(),
                                                 layout_d.get(), pref.get(), 1, &heuristic, &found));
  ZT_REQUIRE(found > 0, what + ", batch " + std::to_string(batch) + ": cuBLASLt has no algorithm for " +
                            dtype_name(dtype) + " inputs and " + dtype_name(out_dtype) + " output" +
                            (bias ? " with the bias epilogue" : ""));
  ScratchBuffer workspace(heuristic.workspaceSize, stream);
  const float alpha = 1.0f;
  // cuBLASLt's A is our b and its B our a (see the mapping above).
  ZT_CUBLAS_CHECK(cublasLtMatmul(handle, desc.get(), &alpha, b.data, layout_a.get(), a.data, layout_b.get(), &beta,
                                 out.data, layout_d.get(), out.data, layout_d.get(), &heuristic.algo, workspace.data(),
                                 heuristic.workspaceSize, stream));
}

}  // namespace

void gemm(DType dtype, const GemmOperand& a, const GemmOperand& b, const GemmResult& out, std::int64_t batch,
          const void* bias, cudaStream_t stream) {
  gemm_any(dtype, dtype, a, b, out, batch, bias, 0.0f, describe("cuBLASLt gemm", a, b, out), stream);
}

void gemm_accumulate(DType input_dtype, DType out_dtype, const GemmOperand& a, const GemmOperand& b,
                     const GemmResult& out, float beta, const char* what, cudaStream_t stream) {
  gemm_any(input_dtype, out_dtype, a, b, out, 1, nullptr, beta, describe(what, a, b, out), stream);
}

void set_float32_matmul_tf32(bool enabled) { tf32_for_float32.store(enabled, std::memory_order_relaxed); }

bool float32_matmul_tf32() { return tf32_for_float32.load(std::memory_order_relaxed); }

}  // namespace zt::cuda
