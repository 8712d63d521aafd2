// The three matrix products of the fused linear + cross-entropy, which need two things the
// plain cuda::gemm does not do: an output dtype other than the inputs' (bfloat16 hidden
// states and weight, float32 logits and weight gradient) and accumulation into the output
// (beta = 1), so the weight gradient is summed over token chunks in place.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/cublaslt_gemm.h"
#include "runtime/dtype.h"

namespace zt::cuda {

// out = op(a) · op(b) + beta · out, row-major operands described as for cuda::gemm (one
// batch entry). a and b are `input_dtype` (float32, bfloat16 or float16); out is
// `out_dtype`, either input_dtype or float32. Accumulation is float32, never TF32. Sizes
// that disagree or an unsupported dtype pair throw zt::Error naming the product.
void gemm_accumulate(DType input_dtype, DType out_dtype, const GemmOperand& a, const GemmOperand& b,
                     const GemmResult& out, float beta, const char* what, cudaStream_t stream);

}  // namespace zt::cuda
