#include "infer/decode_graph.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "autograd/grad_mode.h"
#include "ops/gemm/few_rows_product.h"
#include "ops/reduce/reduce.h"
#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/streams/current_stream.h"
#include "runtime/streams/stream.h"

namespace zt::infer {
namespace {

std::int64_t bucket_rows(std::int64_t sequences, std::int64_t max_batch) {
  std::int64_t rows = 1;
  while (rows < sequences) rows *= 2;
  return std::min(rows, max_batch);
}

}  // namespace

DecodeGraphs::DecodeGraphs(const models::CausalLM& model, PagedKvCache& cache, std::int64_t max_batch,
                           std::int64_t max_blocks, DecodeKernel kernel)
    : model_(model), cache_(cache), max_batch_(max_batch), max_blocks_(max_blocks), kernel_(kernel) {
  const std::string why = kernel == DecodeKernel::kGraph ? "" : PersistentDecode::unsupported(model, cache);
  ZT_REQUIRE(why.empty() || kernel != DecodeKernel::kPersistent,
             "decode steps through the persistent kernel were asked for, but this model cannot take it: " + why);
  DeviceGuard guard(model.device().index);
  ZT_CUDA_CHECK(cudaStreamCreate(&stream_));
  if (kernel != DecodeKernel::kGraph && why.empty())
    persistent_ = std::make_unique<PersistentDecode>(model, cache, max_blocks);
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

std::unique_ptr<CudaGraph> DecodeGraphs::capture_with(Bucket& bucket, ops::FewRowsProducts products) {
  ops::FewRowsGemmScope scope(products);
  return std::make_unique<CudaGraph>(CudaGraph::capture(stream_, [&] { forward(bucket); }));
}

bool DecodeGraphs::capture(Bucket& bucket, std::int64_t rows) {
  try {
    bucket.graph = capture_with(bucket, ops::FewRowsProducts::kNone);
  } catch (const std::exception& e) {
    bucket.eager_only = true;
    ZT_LOG(kWarn, "decode steps of " << bucket.buffers.rows << " rows run without a CUDA graph: " << e.what());
    return false;
  }
  if (kernel_ == DecodeKernel::kGraph) return false;
  keep_fastest_products(bucket, rows);
  return true;
}

// cuBLASLt's graph is replayed first, its logits kept and three replays timed; then each
// few-row graph is captured, must agree with those logits on the step's sequences (as the
// persistent kernel must), and is timed the same way. The bucket holds cuBLASLt's graph and
// outputs until another has won, whatever throws on the way. cuBLASLt's outputs and the best
// candidate's stay held while later candidates are captured, so no capture places its tensors
// where a graph that may be kept writes them.
void DecodeGraphs::keep_fastest_products(Bucket& bucket, std::int64_t rows) {
  struct Candidate {
    std::unique_ptr<CudaGraph> graph;
    Step outputs;
    double ms = 0.0;
    const char* name = "cuBLASLt";
  };
  Candidate best{nullptr, {bucket.logits, bucket.argmax}};
  const Step cublas = best.outputs;
  std::vector<double> expected;
  try {
    bucket.graph->replay(stream_);
    expected = logits_of(cublas, rows);
    best.ms = milliseconds_per_step([&] { bucket.graph->replay(stream_); });
  } catch (const std::exception& e) {
    ZT_LOG(kWarn, "decode steps of " << bucket.buffers.rows << " rows keep cuBLASLt's products: " << e.what());
    return;
  }
  const std::pair<ops::FewRowsProducts, const char*> kCandidates[] = {
      {ops::FewRowsProducts::kSwiglu, "the few-row GEMM for gate/up + SwiGLU"},
      {ops::FewRowsProducts::kSwigluAndLongK, "the few-row GEMM for gate/up + SwiGLU and the products with K > N"},
      {ops::FewRowsProducts::kAll, "the few-row GEMM for every linear"}};
  std::string timings = std::to_string(best.ms) + " ms with cuBLASLt";
  for (const auto& [products, name] : kCandidates) {
    try {
      Candidate candidate{capture_with(bucket, products), {bucket.logits, bucket.argmax}, 0.0, name};
      candidate.graph->replay(stream_);
      const std::string why = disagreement(expected, logits_of(candidate.outputs, rows));
      if (!why.empty()) throw Error(why);
      candidate.ms = milliseconds_per_step([&] { candidate.graph->replay(stream_); });
      timings += ", " + std::to_string(candidate.ms) + " ms with " + name;
      if (candidate.ms < best.ms) best = std::move(candidate);
    } catch (const std::exception& e) {
      ZT_LOG(kWarn, "decode steps of " << bucket.buffers.rows << " rows: " << name << " is not used: " << e.what());
    }
    // A capture leaves its outputs in the bucket; cuBLASLt's stay there until the end.
    bucket.logits = cublas.logits;
    bucket.argmax = cublas.argmax;
  }
  ZT_LOG(kInfo, "decode steps of " << bucket.buffers.rows << " rows as a CUDA graph: " << timings << "; " << best.name
                                   << " runs them");
  if (!best.graph) return;
  bucket.graph = std::move(best.graph);
  bucket.logits = best.outputs.logits;
  bucket.argmax = best.outputs.argmax;
}

// A capture records the step without running it and leaves the bucket holding the graph's
// outputs, so the step that captures returns the outputs of its eager run; unless graphs were
// compared and timed, whose replays rewrote the step's cache slots: then the kept graph runs it
// again, last, and its outputs are returned.
DecodeGraphs::Step DecodeGraphs::run_plain(Bucket& bucket, std::int64_t rows) {
  if (bucket.graph) {
    bucket.graph->replay(stream_);
    return {bucket.logits, bucket.argmax};
  }
  forward(bucket);
  const Step eager{bucket.logits, bucket.argmax};
  if (bucket.eager_only || !capture(bucket, rows)) return eager;
  bucket.graph->replay(stream_);
  return {bucket.logits, bucket.argmax};
}

DecodeGraphs::Step DecodeGraphs::run_persistent(Bucket& bucket) {
  const std::int64_t rows = bucket.buffers.rows;
  if (!bucket.logits.defined()) {
    bucket.logits = Tensor::empty({rows, model_.config().vocab_size}, model_.dtype(), model_.device());
    bucket.argmax = Tensor::empty({rows}, DType::kI64, model_.device());
  }
  persistent_->run(bucket.buffers, bucket.logits, bucket.argmax, stream_);
  return {bucket.logits, bucket.argmax};
}

double DecodeGraphs::milliseconds_per_step(const std::function<void()>& step) {
  constexpr int kRuns = 3;
  Event start(true), end(true);
  start.record(stream_);
  for (int i = 0; i < kRuns; ++i) step();
  end.record(stream_);
  end.synchronize();
  return start.elapsed_ms(end) / kRuns;
}

std::vector<double> DecodeGraphs::logits_of(const Step& step, std::int64_t rows) {
  ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return step.logits.narrow(0, 0, rows).to(Device::cpu()).to_vector();
}

// Another path's logits of the step's sequences against the plain layer's: within a few percent
// of the largest logit, the dtype's rounding and another summation order; anything else means
// that path does not compute this model's step, and it is not used.
std::string DecodeGraphs::disagreement(const std::vector<double>& expected, const std::vector<double>& got) const {
  double scale = 0.0, worst = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    scale = std::max(scale, std::fabs(expected[i]));
    worst = std::max(worst, std::isnan(got[i]) ? INFINITY : std::fabs(expected[i] - got[i]));
  }
  const double tolerance = model_.dtype() == DType::kF16 ? 0.01 : 0.05;
  if (worst <= tolerance * scale + 1e-3) return "";
  return "its logits differ from the plain layer's by up to " + std::to_string(worst) + " where the largest is " +
         std::to_string(scale);
}

// The plain step's logits are copied out before the kernel writes the same output tensors.
bool DecodeGraphs::persistent_agrees(Bucket& bucket, std::int64_t rows) {
  const std::vector<double> plain = logits_of(run_plain(bucket, rows), rows);
  const std::string why = disagreement(plain, logits_of(run_persistent(bucket), rows));
  if (why.empty()) return true;
  ZT_LOG(kWarn,
         "decode steps of " << bucket.buffers.rows << " rows stay on the CUDA graph: the persistent kernel: " << why);
  return false;
}

// Both paths write this step's keys and values to the same slots and leave the lengths alone,
// so each can run the step again; the chosen one runs it last, for real. The kernel is timed
// only once its logits agree with the plain layer's.
void DecodeGraphs::choose_path(Bucket& bucket, std::int64_t rows) {
  bool agrees = false;
  try {
    agrees = persistent_agrees(bucket, rows);
  } catch (const Error& e) {  // a launch the device refuses (fewer multiprocessors, say)
    ZT_LOG(kWarn, "decode steps of " << bucket.buffers.rows << " rows stay on the CUDA graph: " << e.what());
  }
  if (!agrees) {
    bucket.path = Path::kGraph;
    return;
  }
  const double graph = milliseconds_per_step([&] { run_plain(bucket, rows); });
  const double persistent = milliseconds_per_step([&] { run_persistent(bucket); });
  bucket.path = persistent < graph ? Path::kPersistent : Path::kGraph;
  ZT_LOG(kInfo, "decode steps of " << bucket.buffers.rows << " rows: " << persistent << " ms as one persistent kernel, "
                                   << graph << " ms as a CUDA graph; the "
                                   << (bucket.path == Path::kPersistent ? "persistent kernel" : "CUDA graph")
                                   << " runs them");
}

DecodeGraphs::Step DecodeGraphs::run(const std::vector<SequenceId>& sequences,
                                     const std::vector<std::int64_t>& tokens) {
  DeviceGuard guard(model_.device().index);
  const auto count = static_cast<std::int64_t>(sequences.size());
  Bucket& bucket = bucket_for(count);
  cache_.fill_step(sequences, tokens, bucket.buffers, stream_);
  if (bucket.path == Path::kUndecided) {
    if (persistent_ == nullptr || !persistent_->takes_rows(bucket.buffers.rows))
      bucket.path = Path::kGraph;
    else if (kernel_ == DecodeKernel::kPersistent)
      bucket.path = Path::kPersistent;
    else if (bucket.graph || bucket.eager_only)
      choose_path(bucket, count);
  }
  const Step step = bucket.path == Path::kPersistent ? run_persistent(bucket) : run_plain(bucket, count);
  ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  cache_.advance(sequences);
  return {step.logits.narrow(0, 0, count), step.argmax.narrow(0, 0, count)};
}

}  // namespace zt::infer
