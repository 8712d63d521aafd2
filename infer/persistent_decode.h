// A decode step as one persistent kernel (cuda/decode_step/persistent_decode.cuh) over a
// model's weights and a paged KV cache: every layer of the step in one launch, instead of the
// few hundred kernels of the plain layer that a CUDA graph replays. Bound once to the model
// and the cache (the per-layer weight table is uploaded at construction); each step reads
// the same DecodeStepBuffers the graphs read.
//
// It takes the layers the plain path computes for Qwen2/2.5/3 and GLM/ChatGLM without extras:
// unsupported() says why a model or cache cannot use it (glm4's sandwich
// norms, sliding windows, LoRA not merged, a 4-bit or ZeRO-3 base, tensor parallelism, a
// P-Tuning prefix, float32 weights, more than 8 rows), and those steps stay on the graphs.
// Verified against the plain layer on a GPU, but faster than the graphs only at small models'
// batch 1 (docs/PERF.md, Decode, third pass): only tests and benchmarks ask for it
// (infer/engine.h's DecodeKernel).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda/decode_step/persistent_decode.cuh"
#include "infer/paged_kv_cache.h"
#include "models/model.h"

namespace zt::infer {

// Each layer's weights as the kernel reads them: a fused [q; k; v] or [gate; up] weight (and its
// bias) sliced into its parts, and the layer's KV pools. What the kernel's layer table holds.
std::vector<cuda::DecodeLayerPointers> decode_layer_pointers(const models::CausalLM& model, const PagedKvCache& cache);

class PersistentDecode {
 public:
  // Empty when the model and the cache can decode through the kernel, else the reason.
  static std::string unsupported(const models::CausalLM& model, const PagedKvCache& cache);
  // Whether a step of `rows` buffer rows (a graph bucket's) runs through it.
  bool takes_rows(std::int64_t rows) const;

  PersistentDecode(const models::CausalLM& model, const PagedKvCache& cache, std::int64_t max_blocks);

  // One step over the filled buffers, on `stream`: logits [rows, vocab] in the model's dtype
  // and argmax int64 [rows], both allocated by the caller on the model's device. stage_marks,
  // when given: uint64 [cuda::persistent_decode_stage_marks] on the device, the step's stage
  // times (cuda/decode_step/persistent_decode.cuh).
  void run(const DecodeStepBuffers& buffers, const Tensor& logits, const Tensor& argmax, cudaStream_t stream,
           const Tensor& stage_marks = Tensor());
  const cuda::DecodeModelDims& dims() const { return dims_; }
  // Whether narrow weight stages share row pairs among teams of warps (the default), or give
  // each pair one warp: for the benchmark's and the tests' comparison.
  void set_split_columns(bool on) { dims_.split_columns = on; }

 private:
  const models::CausalLM& model_;
  cuda::DecodeModelDims dims_;
  Tensor layer_table_;                      // DecodeLayerPointers [layers] as bytes, on the device
  std::map<std::int64_t, Tensor> scratch_;  // workspace per row count
};

}  // namespace zt::infer
