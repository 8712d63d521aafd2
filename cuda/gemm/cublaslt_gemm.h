// Row-major matrix products through cuBLASLt: out[b] = op(a[b]) · op(b[b]) (+ bias), with
// fp32 accumulation for every dtype (CUBLAS_COMPUTE_32F; TF32 tensor ops for float32 inputs
// only when set_float32_matmul_tf32 asks, so fp32 results stay fp32-accurate by default). Callers describe operands as
// they lie in memory, row-major; the mapping onto cuBLASLt's column-major convention lives in cublaslt_gemm.cpp alone.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// One operand as stored: a row-major rows × cols matrix whose element (i, j) lies at
// data[i * ld + j] (ld >= cols), the next batch entry batch_stride elements further on
// (0 repeats the matrix for every batch entry). `transpose` says the product uses the
// stored matrix transposed, so a transposed view needs no copy.
struct GemmOperand {
  const void* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  std::int64_t batch_stride = 0;
  bool transpose = false;
};

// The m × n result of each batch entry, row-major with row stride ld (>= n).
struct GemmResult {
  void* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  std::int64_t batch_stride = 0;
};

// out[b] = op(a[b]) · op(b[b]) for b < batch, plus bias[j] added to every row when bias is
// not null (fused into the GEMM as cuBLASLt's bias epilogue). a, b, out and bias share
// `dtype` (float32, bfloat16 or float16). Inner sizes must agree and every size be >= 1;
// violations throw zt::Error. Runs on `stream` of the current device; the workspace comes
// from that device's caching allocator.
void gemm(DType dtype, const GemmOperand& a, const GemmOperand& b, const GemmResult& out, std::int64_t batch,
          const void* bias, cudaStream_t stream);

// out = op(a) · op(b) + beta · out for one batch entry, with `out` in `out_dtype` (the
// inputs' dtype or float32): what the fused linear + cross-entropy needs to write float32
// logits from bfloat16 operands and to sum the weight gradient over token chunks in place.
// `what` names the product in errors.
void gemm_accumulate(DType input_dtype, DType out_dtype, const GemmOperand& a, const GemmOperand& b,
                     const GemmResult& out, float beta, const char* what, cudaStream_t stream);

// Float32 products on TF32 tensor cores (inputs rounded to a 10-bit mantissa, accumulation in
// fp32), as torch.backends.cuda.matmul.allow_tf32 and HF's --tf32 allow: faster, less exact.
// Off by default; for the whole process. bf16 and fp16 products are unaffected.
void set_float32_matmul_tf32(bool enabled);
bool float32_matmul_tf32();

}  // namespace zt::cuda
