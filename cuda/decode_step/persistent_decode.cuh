// A whole decode step of up to 8 sequences in one launch: the embedding lookup, every decoder
// layer (RMSNorm, q/k/v with bias, per-head q/k RMSNorm, RoPE, the KV-cache write, attention over the paged cache,
// the output projection, the residual adds, the post-attention RMSNorm, gate/up with SwiGLU,
// down) and the LM head with the greedy argmax.
//
// Why: a small model's decode step is a few hundred kernels, each too short to fill the memory
// system on its own; the gaps between them, not the bytes, set the step's time (docs/PERF.md).
// One persistent block per multiprocessor runs the step as a fixed sequence of stages. Inside a
// stage every block takes its share of the work (rows of a weight matrix, or one attention
// head of one sequence); stages are separated by grid-wide barriers (cooperative groups'
// grid sync: a counter in global memory) instead of kernel boundaries. While a block waits at a barrier it has already
// asked L2 for the first rows of its next stage's weights, so the weight stream does not stop.
//
// Arithmetic follows the plain layer's roundings (fp32 sums, each op's output rounded to the
// dtype where the plain path stores it): RMSNorm as cuda/norm, RoPE as cuda/rope with the same
// frequencies, SwiGLU as cuda/swiglu, a projection's bias added before its one rounding. The
// products' summation order differs from cuBLASLt's, so logits agree to rounding, not bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/rope/rope.cuh"
#include "runtime/dtype.h"

namespace zt::cuda {

inline constexpr int kPersistentDecodeMaxRows = 8;

// One decoder layer's weights as the kernel reads them, all of the step's dtype. A fused
// [q; k; v] or [gate; up] weight is given as pointers into it. Biases may be null.
struct DecodeLayerPointers {
  const void* input_norm = nullptr;  // [hidden]
  const void* q = nullptr;           // [q_size, hidden]
  const void* k = nullptr;           // [kv_size, hidden]
  const void* v = nullptr;           // [kv_size, hidden]
  const void* q_bias = nullptr;      // [q_size]
  const void* k_bias = nullptr;      // [kv_size]
  const void* v_bias = nullptr;      // [kv_size]
  const void* q_norm = nullptr;      // [head_dim]: Qwen3's RMSNorm of each query head; null: none
  const void* k_norm = nullptr;      // [head_dim]: the same for each key head
  const void* o = nullptr;           // [hidden, q_size]
  const void* o_bias = nullptr;      // [hidden]
  const void* post_norm = nullptr;   // [hidden]
  const void* gate = nullptr;        // [ffn, hidden]
  const void* up = nullptr;          // [ffn, hidden]
  const void* gate_bias = nullptr;   // [ffn]
  const void* up_bias = nullptr;     // [ffn]
  const void* down = nullptr;        // [hidden, ffn]
  const void* down_bias = nullptr;   // [hidden]
  void* key_pool = nullptr;          // [num_blocks, block_size, kv_heads, head_dim]
  void* value_pool = nullptr;        // the same shape
};

// The model's shape and the parts of the step that never change.
struct DecodeModelDims {
  int layers = 0;
  int hidden = 0;  // multiples of 8: rows are read 16 bytes at a time
  int ffn = 0;
  int heads = 0;
  int kv_heads = 0;  // divides heads
  int head_dim = 0;  // a multiple of 8, at most 256
  int vocab = 0;
  float norm_eps = 0.0f;
  bool round_normalized = true;  // Qwen's RMSNorm rounds x * rstd before the weight multiply
  float softmax_scale = 0.0f;
  RopeShape rope;  // rotary_dim and style; tokens unused
  RopeFrequencies frequencies;
  std::int64_t num_blocks = 0;  // pages in each pool
  int block_size = 0;           // tokens per page
  int max_blocks_per_seq = 0;   // block_table's row length
  // A weight stage with fewer row pairs than the grid has warps shares each pair among a team
  // of warps, each summing a slice of the columns; false: one warp per pair (for comparison).
  bool split_columns = true;
};

// Everything the kernel reads and writes beyond the weights: device pointers.
struct DecodeStepPointers {
  const DecodeLayerPointers* layers = nullptr;  // device array [layers]
  const void* embedding = nullptr;              // [vocab, hidden]
  const void* final_norm = nullptr;             // [hidden]; null: none (the hidden states go to the head as they are)
  const void* lm_head = nullptr;                // [vocab, hidden]
  const std::int64_t* ids = nullptr;            // [rows]
  const std::int64_t* positions = nullptr;      // [rows]
  const std::int64_t* slots = nullptr;          // [rows]: where the new key and value go; -1 for a padding row
  const std::int32_t* block_table = nullptr;    // [rows, max_blocks_per_seq]
  const std::int32_t* seq_lens = nullptr;       // [rows]: cached tokens after this step
  void* logits = nullptr;                       // [rows, vocab]
  std::int64_t* argmax = nullptr;               // [rows]: each row's first largest logit
  // Optional, [persistent_decode_stage_marks(dims)]: the GPU's global timer (ns) as block 0
  // passes the kernel's start, each grid barrier and its end, for a profile by stage
  // (bench/persistent_decode_bench.cu); null: nothing recorded.
  std::uint64_t* stage_marks = nullptr;
};

// The stage marks of a step: the start, the embedding's barrier, five barriers per layer (after
// q/k/v, attention, the output projection, gate/up and down), the LM head's barrier, the end.
inline int persistent_decode_stage_marks(const DecodeModelDims& dims) { return 4 + 5 * dims.layers; }

// Device scratch of one (model, rows) pair, sized by persistent_decode_workspace_bytes.
struct DecodeWorkspace {
  void* memory = nullptr;
  std::size_t bytes = 0;
};

std::size_t persistent_decode_workspace_bytes(const DecodeModelDims& dims, int rows, DType dtype);

// Whether the kernel runs this shape on `device`: dtype bfloat16 or float16, rows 1..8, the
// sizes above, and shared memory for the normalised rows. Empty when it does, else why not.
const char* persistent_decode_unsupported(const DecodeModelDims& dims, int rows, DType dtype, int device);

// One decode step of `rows` sequences on `stream`, as one cooperative launch (every block
// resident, which the grid barriers need). The workspace holds the step's activations.
void persistent_decode_step(const DecodeModelDims& dims, const DecodeStepPointers& step, int rows, DType dtype,
                            const DecodeWorkspace& workspace, cudaStream_t stream);

}  // namespace zt::cuda
