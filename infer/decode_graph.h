// Decode steps replayed as CUDA graphs. A step of a small batch launches a few hundred short
// kernels, and launching them costs more than running them; captured once per batch-size
// bucket (1, 2, 4, 8, 16, 32, ...; a batch runs in the smallest bucket that holds it, the
// spare rows padding) and replayed, the step is one launch. Everything a replay reads comes
// from fixed buffers (infer/paged_kv_cache.h's DecodeStepBuffers) refilled before it.
//
// The first step of a bucket runs eagerly on the graph's stream (which also warms the
// allocator's blocks for that stream) and is then captured; a bucket whose capture fails
// logs why and keeps running eagerly, so graphs only ever change the speed.
//
// With DecodeKernel::kFastest (and kPersistent, for buckets the kernel does not take), a bucket's
// capture is made four times: with the linears as cuBLASLt GEMMs, with the few-row GEMM of
// cuda/gemm/few_rows (ops::FewRowsGemmScope) for the MLP's gate/up + SwiGLU only (its epilogue
// leaves out a launch a layer), for that and the products whose K exceeds N (the down
// projection, whose split K it reduces in the same launch where cuBLASLt takes a second), and
// for every linear. The other graphs' logits must
// agree with cuBLASLt's (else they are logged and dropped); three replays of each are timed, all
// logged, and the fastest graph kept (its outputs are the capturing step's).
//
// A bucket of up to 8 rows of a model the persistent decode kernel takes
// (infer/persistent_decode.h) may run its steps through that kernel instead: with
// DecodeKernel::kFastest, the bucket's second step first checks the kernel's logits against
// the graph's (a kernel that disagrees is logged and never used), then times three replays of
// its graph against three runs of the kernel, logs both, and the faster runs every later step
// of that size.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "infer/engine.h"
#include "infer/paged_kv_cache.h"
#include "infer/persistent_decode.h"
#include "models/model.h"
#include "ops/gemm/few_rows_product.h"
#include "runtime/streams/cuda_graph.h"
#include "runtime/streams/stream.h"

namespace zt::infer {

class DecodeGraphs {
 public:
  // Buckets up to max_batch rows; block tables max_blocks wide.
  DecodeGraphs(const models::CausalLM& model, PagedKvCache& cache, std::int64_t max_batch, std::int64_t max_blocks,
               DecodeKernel kernel = DecodeKernel::kGraph);
  ~DecodeGraphs();

  struct Step {
    Tensor logits;  // [sequences, vocab] on the device
    Tensor argmax;  // int64 [sequences]: each row's first largest logit
  };
  // One decode step: tokens[i] continues sequences[i]. The cache counts it.
  Step run(const std::vector<SequenceId>& sequences, const std::vector<std::int64_t>& tokens);

 private:
  enum class Path { kUndecided, kGraph, kPersistent };
  struct Bucket {
    Bucket(std::int64_t rows, std::int64_t max_blocks, Device device) : buffers(rows, max_blocks, device) {}
    DecodeStepBuffers buffers;
    Tensor logits, argmax;
    std::unique_ptr<CudaGraph> graph;
    bool eager_only = false;
    Path path = Path::kUndecided;
  };
  Bucket& bucket_for(std::int64_t sequences);
  void forward(Bucket& bucket);
  // Captures the bucket's graph (but for kGraph, the fastest of the products' graphs, checked
  // on the first `rows` rows); true when it went on to replay graphs, which rewrote the step's
  // cache slots after the eager run.
  bool capture(Bucket& bucket, std::int64_t rows);
  std::unique_ptr<CudaGraph> capture_with(Bucket& bucket, ops::FewRowsProducts products);
  void keep_fastest_products(Bucket& bucket, std::int64_t rows);
  // The graph's (or an eager) step, or the persistent kernel's, into the bucket's outputs; the
  // step's sequences are the first `rows` rows.
  Step run_plain(Bucket& bucket, std::int64_t rows);
  Step run_persistent(Bucket& bucket);
  // Checks the kernel against the plain layer on the filled buffers' first `rows` rows, then
  // times both and sets bucket.path to the faster (the graph where the kernel disagrees).
  void choose_path(Bucket& bucket, std::int64_t rows);
  bool persistent_agrees(Bucket& bucket, std::int64_t rows);
  // Empty when logits `got` are within the dtype's rounding of `expected` (a few percent of the
  // largest logit: other summation orders); else what differs.
  std::string disagreement(const std::vector<double>& expected, const std::vector<double>& got) const;
  std::vector<double> logits_of(const Step& step, std::int64_t rows);
  double milliseconds_per_step(const std::function<void()>& step);

  const models::CausalLM& model_;
  PagedKvCache& cache_;
  std::int64_t max_batch_;
  std::int64_t max_blocks_;
  cudaStream_t stream_ = nullptr;  // blocking: ordered after the legacy stream's work
  std::map<std::int64_t, std::unique_ptr<Bucket>> buckets_;
  DecodeKernel kernel_;
  std::unique_ptr<PersistentDecode> persistent_;  // null when the model or cache cannot use it
};

}  // namespace zt::infer
