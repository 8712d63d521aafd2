#include "infer/decode_graph.h"

#include "autograd/grad_mode.h"
#include "ops/reduce/reduce.h"
#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/streams/current_stream.h"

namespace zt::infer {
namespace {

std::int64_t bucket_rows(std::int64_t sequences, std::int64_t max_batch) {
  std::int64_t rows = 1;
  while (rows < sequences) rows *= 2;
  return std::min(rows, max_batch);
}

}  // namespace

DecodeGraphs::DecodeGraphs(const models::CausalLM& model, PagedKvCache& cache, std::int64_t max_batch,
                           std::int64_t max_blocks)
    : model_(model), cache_(cache), max_batch_(max_batch), max_blocks_(max_blocks) {
  DeviceGuard guard(model.device().index);
  ZT_CUDA_CHECK(cudaStreamCreate(&stream_));
}

DecodeGraphs::~DecodeGraphs() {
  buckets_.clear();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

DecodeGraphs::Bucket& DecodeGraphs::bucket_for(std::int64_t sequences) {
  const std::int64_t rows = bucket_rows(sequences, max_batch_);
  auto found = buckets_.find(rows);
  if (found == buckets_.end())
    found = buckets_.emplace(rows, std::make_unique<Bucket>(rows, max_blocks_, model_.device())).first;
  return *found->second;
}

// The step itself, on the graph's stream, reading the bucket's buffers.
void DecodeGraphs::forward(Bucket& bucket) {
  autograd::NoGradGuard no_recording;
  StreamScope on_graph_stream(stream_);
  const DecodeStepBuffers& b = bucket.buffers;
  cache_.bind_step(&b);
  try {
    Tensor hidden =
        model_.forward_hidden_on_device(b.ids, b.positions, b.cu_seqlens, {b.rows, b.rows, 1}, &cache_).data();
    bucket.logits = model_.lm_head(autograd::Variable(hidden)).data();
    bucket.argmax = ops::argmax_rows(bucket.logits);
  } catch (...) {
    cache_.bind_step(nullptr);
    throw;
  }
  cache_.bind_step(nullptr);
}

void DecodeGraphs::capture(Bucket& bucket) {
  try {
    bucket.graph = std::make_unique<CudaGraph>(CudaGraph::capture(stream_, [&] { forward(bucket); }));
  } catch (const std::exception& e) {
    bucket.eager_only = true;
    ZT_LOG(kWarn, "decode steps of " << bucket.buffers.rows << " rows run without a CUDA graph: " << e.what());
  }
}

DecodeGraphs::Step DecodeGraphs::run(const std::vector<SequenceId>& sequences,
                                     const std::vector<std::int64_t>& tokens) {
  DeviceGuard guard(model_.device().index);
  Bucket& bucket = bucket_for(static_cast<std::int64_t>(sequences.size()));
  cache_.fill_step(sequences, tokens, bucket.buffers, stream_);
  Step step;
  if (bucket.graph) {
    bucket.graph->replay(stream_);
    step = {bucket.logits, bucket.argmax};
  } else {
    forward(bucket);  // the step itself; a capture after it records without running
    step = {bucket.logits, bucket.argmax};
    if (!bucket.eager_only) capture(bucket);
  }
  ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  cache_.advance(sequences);
  const auto count = static_cast<std::int64_t>(sequences.size());
  return {step.logits.narrow(0, 0, count), step.argmax.narrow(0, 0, count)};
}

}  // namespace zt::infer
