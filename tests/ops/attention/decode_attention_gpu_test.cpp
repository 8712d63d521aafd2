// The inference ops' CUDA kernels against their CPU references from the same inputs. Decode
// attention: float32 to 1e-5 and bfloat16/float16 to 1e-2 (relative), on the tensor-core
// kernel (16-bit, head_dim 64/128) and the CUDA-core one (float32, other head_dims, misaligned
// queries), GQA groups of 1 to 20 heads, block sizes 1 to 256, shuffled pages, a batch whose
// lengths are 1 and 3000, num_splits from 1 to 4096 (more splits than tokens change nothing),
// length 0 giving zeros, and one CUDA graph replayed while the lengths grow. write_kv_slots,
// its launch shared with RoPE (against the two ops) and argmax_rows (152k columns with planted
// ties) must match exactly. New GPU tensors start as
// NaN, so any output element a kernel forgets to write fails.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cuda/attention/decode/decode_attention.cuh"
#include "ops/attention/decode_attention.h"
#include "ops/attention/kv_cache_write.h"
#include "ops/reduce/reduce.h"
#include "runtime/check.h"
#include "runtime/error.h"
#include "runtime/streams/stream.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/ops/attention/attention_test_util.h"
#include "tests/ops/attention/decode_attention_test_util.h"

namespace zt {
namespace {

using testing::DecodeCase;
using testing::DecodeTensors;
using testing::expect_attention_matches;
using testing::gpu_tolerance;
using testing::random_decode_inputs;
using testing::with_splits;

class DecodeAttentionGpu : public testing::PoisonedGpuTest {};
class WriteKvSlotsGpu : public testing::PoisonedGpuTest {};
class ArgmaxRowsGpu : public testing::PoisonedGpuTest {};

const DType kGpuDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

Tensor decode(const DecodeTensors& t, double scale, const ops::DecodeAttentionOptions& options = {}) {
  return ops::decode_attention(t.q, t.key_pool, t.value_pool, t.block_table, t.seq_lens, scale, options);
}

// The GPU with each num_splits (0: its own choice) against the CPU from the same inputs.
void check_against_cpu(const DecodeCase& c, DType dtype, std::uint64_t seed, const std::vector<int>& splits = {0}) {
  DecodeTensors cpu = random_decode_inputs(c, dtype, seed);
  DecodeTensors gpu = testing::decode_on_gpu(cpu);
  Tensor want = decode(cpu, c.softmax_scale());
  for (int s : splits) {
    const std::string what = std::string(dtype_name(dtype)) + " " + c.str() + " num_splits " + std::to_string(s) +
                             " seed " + std::to_string(seed);
    expect_attention_matches(decode(gpu, c.softmax_scale(), with_splits(s)), want, gpu_tolerance(dtype), what);
  }
}

std::vector<std::int64_t> mixed_lengths(int batch) {
  const std::int64_t pattern[] = {1, 17, 100, 5, 33, 64, 2, 250};
  std::vector<std::int64_t> lengths;
  for (int b = 0; b < batch; ++b) lengths.push_back(pattern[b % 8]);
  return lengths;
}

// ---- decode_attention ----

TEST_F(DecodeAttentionGpu, MatchesCpuOnAwkwardShapes) {
  ZT_SKIP_WITHOUT_GPU();
  const std::vector<DecodeCase> cases = {
      {{1}, 6, 2, 64, 16},
      {{1, 17, 100}, 7, 7, 128, 32},
      {{100, 1, 17}, 14, 2, 128, 16},
      {mixed_lengths(33), 14, 2, 64, 16},
      {{300, 45}, 28, 4, 128, 64},  // Qwen2.5-7B's heads
      {{77, 130}, 32, 2, 128, 16},  // a group of 16 query heads (GLM-4)
      {{50, 3}, 40, 2, 64, 32},     // a group of 20: two blocks per kv head
      {{33, 5}, 4, 1, 16, 16},      // small head_dim: the CUDA-core kernel
      {{200, 9}, 6, 2, 72, 16},     // head_dim 72 in 16-bit: the CUDA-core kernel
      {{129, 2}, 2, 1, 256, 32},    // the largest head_dim
      {{700, 20}, 8, 2, 128, 256},  // large pages
      {{40, 3}, 4, 2, 64, 8},       // pages smaller than a tile
      {{20, 1}, 4, 2, 64, 1},       // one token per page
  };
  std::uint64_t seed = 1000;
  for (const DecodeCase& c : cases)
    for (DType dtype : kGpuDtypes) check_against_cpu(c, dtype, seed += 10);
}

TEST_F(DecodeAttentionGpu, LengthsOneAndThreeThousandWithAnySplitCount) {
  ZT_SKIP_WITHOUT_GPU();
  const DecodeCase c{{1, 3000}, 28, 4, 128, 16};
  for (DType dtype : {DType::kF32, DType::kBF16}) check_against_cpu(c, dtype, 2000, {0, 1, 2, 7, 64, 4096});
  const DecodeCase small_dim{{3000, 1}, 8, 2, 32, 32};
  check_against_cpu(small_dim, DType::kF32, 2100, {0, 1, 5, 300});
}

TEST_F(DecodeAttentionGpu, MoreSplitsThanNeededChangeNothing) {
  ZT_SKIP_WITHOUT_GPU();
  // Splits fixed for a large capacity and then far more than the tokens need: the empty splits
  // must contribute nothing, so the results agree to fp32 rounding and with the CPU.
  DecodeCase c{{5, 70, 33}, 14, 2, 128, 16};
  c.spare_columns = 200;  // capacity ~ 3300 tokens, lengths <= 70
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    DecodeTensors cpu = random_decode_inputs(c, dtype, 3000);
    DecodeTensors gpu = testing::decode_on_gpu(cpu);
    const int chosen = ops::decode_attention_num_splits(gpu.q, gpu.key_pool, gpu.block_table);
    Tensor want = decode(cpu, c.softmax_scale());
    Tensor few = decode(gpu, c.softmax_scale(), with_splits(1));
    for (int s : {chosen, 2 * chosen, 1000, 4096}) {
      Tensor many = decode(gpu, c.softmax_scale(), with_splits(s));
      const std::string what = std::string(dtype_name(dtype)) + " num_splits " + std::to_string(s);
      expect_attention_matches(many, want, gpu_tolerance(dtype), what);
      expect_attention_matches(many, few, dtype == DType::kF32 ? 1e-6 : 1e-2, what + " against num_splits 1");
    }
  }
}

TEST_F(DecodeAttentionGpu, LengthZeroGivesZeros) {
  ZT_SKIP_WITHOUT_GPU();
  const DecodeCase c{{0, 45, 0}, 8, 2, 128, 16};
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    DecodeTensors cpu = random_decode_inputs(c, dtype, 4000);
    DecodeTensors gpu = testing::decode_on_gpu(cpu);
    // The CPU refuses length 0; its answer for the middle sequence alone is the reference.
    Tensor middle =
        ops::decode_attention(cpu.q.narrow(0, 1, 1), cpu.key_pool, cpu.value_pool, cpu.block_table.narrow(0, 1, 1),
                              cpu.seq_lens.narrow(0, 1, 1), c.softmax_scale());
    for (int s : {1, 3, 0}) {
      const std::string what = std::string(dtype_name(dtype)) + " num_splits " + std::to_string(s);
      Tensor out = decode(gpu, c.softmax_scale(), with_splits(s)).to(Device::cpu());
      const std::vector<double> zeros(8 * 128, 0.0);  // compared by value, so a NaN fails too
      EXPECT_EQ(out.narrow(0, 0, 1).contiguous().to_vector(), zeros) << what;
      EXPECT_EQ(out.narrow(0, 2, 1).contiguous().to_vector(), zeros) << what;
      expect_attention_matches(out.narrow(0, 1, 1).contiguous().to(Device::cuda()), middle, gpu_tolerance(dtype), what);
    }
  }
}

TEST_F(DecodeAttentionGpu, PreallocatedWorkspaceAndOutput) {
  ZT_SKIP_WITHOUT_GPU();
  const DecodeCase c{{300, 45, 1}, 28, 4, 128, 16};
  DecodeTensors cpu = random_decode_inputs(c, DType::kBF16, 5000);
  DecodeTensors gpu = testing::decode_on_gpu(cpu);
  Tensor want = decode(cpu, c.softmax_scale());
  ops::DecodeAttentionOptions options;
  options.num_splits = 9;
  const std::size_t bytes = ops::decode_attention_workspace_bytes(gpu.q, 9);
  EXPECT_EQ(bytes, std::size_t{3 * 28 * 9 * 129 * 4});
  options.workspace = Tensor::empty({static_cast<std::int64_t>(bytes)}, DType::kU8, Device::cuda());
  options.out = Tensor::empty({3, 28, 128}, DType::kBF16, Device::cuda());
  Tensor out = decode(gpu, c.softmax_scale(), options);
  EXPECT_EQ(out.data_ptr(), options.out.data_ptr());
  expect_attention_matches(out, want, 1e-2, "preallocated");
  options.workspace = Tensor::empty({static_cast<std::int64_t>(bytes) - 4}, DType::kU8, Device::cuda());
  testing::expect_mentions(testing::error_of([&] { decode(gpu, c.softmax_scale(), options); }),
                           {"options.workspace holds", "decode_attention_workspace_bytes"});
}

TEST_F(DecodeAttentionGpu, StridedMisalignedAndBroadcastQueries) {
  ZT_SKIP_WITHOUT_GPU();
  const DecodeCase c{{90, 7}, 4, 2, 128, 16};
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    DecodeTensors cpu = random_decode_inputs(c, dtype, 6000);
    DecodeTensors gpu = testing::decode_on_gpu(cpu);
    Tensor want = decode(cpu, c.softmax_scale());
    // q as heads 0..3 of a fused [batch, 8, 128] projection (aligned strides), and as a view
    // whose rows are 4 elements off 16 bytes (the CUDA-core kernel reads it element-wise).
    Tensor fused = Tensor::zeros({2, 8, 128}, dtype, Device::cuda());
    fused.narrow(1, 0, 4).copy_from(gpu.q);
    Tensor odd = Tensor::zeros({2, 4 * 128 + 4}, dtype, Device::cuda());
    Tensor odd_q = odd.narrow(1, 4, 4 * 128).view({2, 4, 128});
    odd_q.copy_from(gpu.q);
    for (const Tensor& q : {fused.narrow(1, 0, 4), odd_q}) {
      Tensor have = ops::decode_attention(q, gpu.key_pool, gpu.value_pool, gpu.block_table, gpu.seq_lens,
                                          c.softmax_scale(), with_splits(3));
      expect_attention_matches(have, want, gpu_tolerance(dtype), std::string(dtype_name(dtype)) + " strided q");
    }
    // One query broadcast over the batch (stride 0): both sequences ask the same question.
    auto broadcast = [](const Tensor& q) { return q.narrow(0, 0, 1).expand({2, 4, 128}); };
    expect_attention_matches(ops::decode_attention(broadcast(gpu.q), gpu.key_pool, gpu.value_pool, gpu.block_table,
                                                   gpu.seq_lens, c.softmax_scale()),
                             ops::decode_attention(broadcast(cpu.q), cpu.key_pool, cpu.value_pool, cpu.block_table,
                                                   cpu.seq_lens, c.softmax_scale()),
                             gpu_tolerance(dtype), std::string(dtype_name(dtype)) + " broadcast q");
  }
}

TEST_F(DecodeAttentionGpu, GraphReplayFollowsGrowingLengths) {
  ZT_SKIP_WITHOUT_GPU();
  // The table holds pages for the final lengths; the graph is captured at the first lengths
  // with splits and workspace fixed, then replayed after seq_lens grows on the device.
  const DecodeCase c{{200, 700, 90}, 28, 4, 128, 16};
  DecodeTensors cpu = random_decode_inputs(c, DType::kBF16, 7000);
  DecodeTensors gpu = testing::decode_on_gpu(cpu);
  cuda::DecodeAttentionDims dims;
  dims.batch = 3;
  dims.num_heads = 28;
  dims.num_kv_heads = 4;
  dims.head_dim = 128;
  dims.num_blocks = gpu.key_pool.size(0);
  dims.block_size = 16;
  dims.max_blocks_per_seq = static_cast<int>(gpu.block_table.size(1));
  dims.softmax_scale = static_cast<float>(c.softmax_scale());
  const int splits = ops::decode_attention_num_splits(gpu.q, gpu.key_pool, gpu.block_table);
  EXPECT_EQ(splits, cuda::decode_attention_num_splits(dims));
  Tensor workspace =
      Tensor::empty({static_cast<std::int64_t>(cuda::decode_attention_workspace_bytes(dims, splits)) + 16}, DType::kU8,
                    Device::cuda());
  Tensor out = Tensor::empty({3, 28, 128}, DType::kBF16, Device::cuda());
  const cuda::DecodeAttentionInputs inputs{gpu.q.data_ptr(), gpu.key_pool.data_ptr(), gpu.value_pool.data_ptr(),
                                           gpu.block_table.data<std::int32_t>(), gpu.seq_lens.data<std::int32_t>()};
  gpu.seq_lens.copy_from(Tensor::from_values({40, 300, 7}, {3}, DType::kI32));
  ZT_CUDA_CHECK(cudaDeviceSynchronize());

  Stream stream = Stream::create();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ZT_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  cuda::decode_attention(dims, inputs, DType::kBF16, out.data_ptr(), splits, workspace.data_ptr(), stream.get());
  ZT_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
  ZT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (const std::vector<double>& lens :
       {std::vector<double>{40, 300, 7}, std::vector<double>{41, 301, 8}, std::vector<double>{200, 700, 90}}) {
    gpu.seq_lens.copy_from(Tensor::from_values(lens, {3}, DType::kI32));
    ZT_CUDA_CHECK(cudaDeviceSynchronize());
    ZT_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
    stream.synchronize();
    Tensor want = ops::decode_attention(cpu.q, cpu.key_pool, cpu.value_pool, cpu.block_table,
                                        Tensor::from_values(lens, {3}, DType::kI32), c.softmax_scale());
    expect_attention_matches(
        out, want, 1e-2,
        "graph replay at lengths " + shape_str({static_cast<std::int64_t>(lens[0]), static_cast<std::int64_t>(lens[1]),
                                                static_cast<std::int64_t>(lens[2])}));
  }
  ZT_CUDA_CHECK(cudaGraphExecDestroy(exec));
  ZT_CUDA_CHECK(cudaGraphDestroy(graph));
}

TEST_F(DecodeAttentionGpu, RunsAreBitwiseRepeatable) {
  ZT_SKIP_WITHOUT_GPU();
  const DecodeCase c{{1000, 3, 250}, 28, 4, 128, 16};
  DecodeTensors gpu = testing::decode_on_gpu(random_decode_inputs(c, DType::kBF16, 8000));
  testing::expect_bitwise_equal(decode(gpu, c.softmax_scale()), decode(gpu, c.softmax_scale()), "two runs");
}

TEST_F(DecodeAttentionGpu, Errors) {
  ZT_SKIP_WITHOUT_GPU();
  DecodeTensors odd_dim = testing::decode_on_gpu(random_decode_inputs({{5}, 4, 2, 20, 16}, DType::kF32, 1));
  testing::expect_mentions(testing::error_of([&] { decode(odd_dim, 0.5); }),
                           {"decode_attention", "head_dim must be a multiple of 8 up to 256, got 20"});
  DecodeTensors f64 = testing::decode_on_gpu(random_decode_inputs({{5}, 4, 2, 16, 16}, DType::kF64, 2));
  testing::expect_mentions(testing::error_of([&] { decode(f64, 0.5); }), {"float64"});
  DecodeTensors t = testing::decode_on_gpu(random_decode_inputs({{5}, 4, 2, 16, 16}, DType::kF32, 3));
  t.block_table = t.block_table.to(Device::cpu());
  testing::expect_mentions(testing::error_of([&] { decode(t, 0.5); }), {"block_table is on cpu"});
  DecodeTensors u = testing::decode_on_gpu(random_decode_inputs({{5}, 4, 2, 16, 16}, DType::kF32, 4));
  testing::expect_mentions(testing::error_of([&] { decode(u, 0.5, with_splits(5000)); }),
                           {"options.num_splits is 5000", "1 .. 4096"});
}

// ---- write_kv_slots ----

TEST_F(WriteKvSlotsGpu, MatchesCpuExactly) {
  ZT_SKIP_WITHOUT_GPU();
  struct Case {
    std::int64_t blocks, block_size, kv_heads, head_dim;
  };
  for (const Case& s : {Case{7, 16, 4, 128}, Case{5, 4, 2, 6}, Case{3, 32, 1, 64}})
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
      const std::string what = std::string(dtype_name(dtype)) + " head_dim " + std::to_string(s.head_dim);
      const Shape pool{s.blocks, s.block_size, s.kv_heads, s.head_dim};
      Tensor key_cpu = Tensor::normal(pool, 1, 0, 0.0, 1.0, dtype),
             value_cpu = Tensor::normal(pool, 2, 0, 0.0, 1.0, dtype);
      Tensor key_gpu = key_cpu.to(Device::cuda()), value_gpu = value_cpu.to(Device::cuda());
      // k and v as slices of a fused [tokens, 2 + 2·kv_heads, head_dim] projection.
      const std::int64_t tokens = 9, width = 2 + 2 * s.kv_heads;
      Tensor fused = Tensor::normal({tokens, width, s.head_dim}, 3, 0, 0.0, 1.0, dtype);
      Tensor fused_gpu = fused.to(Device::cuda());
      auto k_of = [&](const Tensor& f) { return f.narrow(1, 2, s.kv_heads); };
      auto v_of = [&](const Tensor& f) { return f.narrow(1, 2 + s.kv_heads, s.kv_heads); };
      const std::int64_t slots_total = s.blocks * s.block_size;
      std::vector<double> slots{static_cast<double>(slots_total - 1), 3, -1, 0, 17, -5, 9, 2, 30};
      for (double& slot : slots)
        slot = slot < 0 ? slot : static_cast<double>(static_cast<std::int64_t>(slot) % slots_total);
      Tensor slots_cpu = Tensor::from_values(slots, {tokens}, DType::kI64);
      ops::write_kv_slots(key_cpu, value_cpu, k_of(fused), v_of(fused), slots_cpu);
      ops::write_kv_slots(key_gpu, value_gpu, k_of(fused_gpu), v_of(fused_gpu), slots_cpu.to(Device::cuda()));
      EXPECT_EQ(max_abs_diff(key_gpu.to(Device::cpu()), key_cpu), 0.0) << what;
      EXPECT_EQ(max_abs_diff(value_gpu.to(Device::cpu()), value_cpu), 0.0) << what;
    }
}

TEST_F(WriteKvSlotsGpu, SlotsPastThePoolsAreSkipped) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor key_cpu = Tensor::normal({2, 16, 2, 64}, 1, 0, 0.0, 1.0, DType::kBF16);
  Tensor key = key_cpu.to(Device::cuda()), value = key_cpu.to(Device::cuda());
  Tensor k = Tensor::normal({2, 2, 64}, 2, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  ops::write_kv_slots(key, value, k, k, Tensor::from_values({32, 1000}, {2}, DType::kI64).to(Device::cuda()));
  EXPECT_EQ(max_abs_diff(key.to(Device::cpu()), key_cpu), 0.0);
  EXPECT_EQ(max_abs_diff(value.to(Device::cpu()), key_cpu), 0.0);
}

// ---- rope_and_write_kv_slots ----

// The one-launch RoPE + cache write against the two ops it replaces, on the same GPU inputs:
// q and k rotated in place (or into contiguous copies, v copied too) and the pools must be
// equal bit for bit. q, k and v are slices of
// a fused [tokens, q + 2·kv heads, head_dim] projection; rotate-half and GLM's interleaved
// half rotation; a 6-dim head (no 16-byte vectors); 5 tokens (one head a thread) and 5,000
// (eight heads a thread); slots that skip (negative, past the pools).
TEST_F(WriteKvSlotsGpu, RopeInTheSameLaunchEqualsTheTwoOps) {
  ZT_SKIP_WITHOUT_GPU();
  struct Case {
    ops::RopeConfig rope;
    std::int64_t q_heads, kv_heads, head_dim;
  };
  const Case cases[] = {{{ops::RopeStyle::kRotateHalf, 1e6, 1.0}, 12, 2, 128},
                        {{ops::RopeStyle::kInterleaved, 1e4, 0.5}, 8, 2, 128},
                        {{ops::RopeStyle::kRotateHalf, 1e4, 1.0}, 3, 1, 6}};
  for (const Case& c : cases)
    for (std::int64_t tokens : {5, 5000})
      for (DType dtype : kGpuDtypes) {
        const std::string what = std::string(dtype_name(dtype)) + " q " + std::to_string(c.q_heads) + " kv " +
                                 std::to_string(c.kv_heads) + " head_dim " + std::to_string(c.head_dim) + " tokens " +
                                 std::to_string(tokens);
        const Shape pool{tokens / 4 + 2, 4, c.kv_heads, c.head_dim};
        const std::int64_t slots_total = pool[0] * pool[1];
        std::vector<double> slot_values, position_values;
        for (std::int64_t t = 0; t < tokens; ++t) {
          slot_values.push_back(t % 7 == 3 ? -1.0 : t % 11 == 5 ? static_cast<double>(slots_total + t) : t);
          position_values.push_back(static_cast<double>((t * 37) % 4000));
        }
        const Tensor slots = Tensor::from_values(slot_values, {tokens}, DType::kI64).to(Device::cuda());
        const Tensor positions = Tensor::from_values(position_values, {tokens}, DType::kI64).to(Device::cuda());
        const Tensor fused =
            Tensor::normal({tokens, c.q_heads + 2 * c.kv_heads, c.head_dim}, 3, 0, 0.0, 1.0, dtype).to(Device::cuda());
        const Tensor pools = Tensor::normal(pool, 4, 0, 0.0, 1.0, dtype).to(Device::cuda());
        struct Run {
          Tensor fused, key_pool, value_pool;
          Tensor q() const { return fused.narrow(1, 0, q_heads); }
          Tensor k() const { return fused.narrow(1, q_heads, kv_heads); }
          Tensor v() const { return fused.narrow(1, q_heads + kv_heads, kv_heads); }
          std::int64_t q_heads, kv_heads;
        };
        Run two{fused.clone(), pools.clone(), pools.clone(), c.q_heads, c.kv_heads};
        Run one{fused.clone(), pools.clone(), pools.clone(), c.q_heads, c.kv_heads};
        ops::rope_forward_inplace(two.q(), two.k(), positions, c.rope);
        ops::write_kv_slots(two.key_pool, two.value_pool, two.k(), two.v(), slots);
        ops::rope_and_write_kv_slots(one.q(), one.k(), one.v(), positions, c.rope, one.key_pool, one.value_pool, slots);
        EXPECT_EQ(max_abs_diff(one.fused.to(Device::cpu()), two.fused.to(Device::cpu())), 0.0) << what;
        EXPECT_EQ(max_abs_diff(one.key_pool.to(Device::cpu()), two.key_pool.to(Device::cpu())), 0.0) << what;
        EXPECT_EQ(max_abs_diff(one.value_pool.to(Device::cpu()), two.value_pool.to(Device::cpu())), 0.0) << what;
        // Into contiguous copies (a prefill's): the same values, the inputs untouched.
        Run copied{fused.clone(), pools.clone(), pools.clone(), c.q_heads, c.kv_heads};
        const ops::ContiguousQkv out = ops::rope_and_write_kv_slots_copied(
            copied.q(), copied.k(), copied.v(), positions, c.rope, copied.key_pool, copied.value_pool, slots);
        for (const Tensor* t : {&out.q, &out.k, &out.v}) EXPECT_TRUE(t->is_contiguous()) << what;
        EXPECT_EQ(max_abs_diff(out.q.to(Device::cpu()), two.q().to(Device::cpu())), 0.0) << what;
        EXPECT_EQ(max_abs_diff(out.k.to(Device::cpu()), two.k().to(Device::cpu())), 0.0) << what;
        EXPECT_EQ(max_abs_diff(out.v.to(Device::cpu()), two.v().to(Device::cpu())), 0.0) << what;
        EXPECT_EQ(max_abs_diff(copied.fused.to(Device::cpu()), fused.to(Device::cpu())), 0.0) << what;
        EXPECT_EQ(max_abs_diff(copied.key_pool.to(Device::cpu()), two.key_pool.to(Device::cpu())), 0.0) << what;
        EXPECT_EQ(max_abs_diff(copied.value_pool.to(Device::cpu()), two.value_pool.to(Device::cpu())), 0.0) << what;
      }
}

// ---- argmax_rows ----

// Rows of standard normals with value 100 planted at columns first[r] and later[r] > first[r]:
// the answer is first[r] in every dtype.
TEST_F(ArgmaxRowsGpu, PlantedTiesOverAQwenVocabulary) {
  ZT_SKIP_WITHOUT_GPU();
  const std::int64_t vocab = 152064;
  for (std::int64_t rows : {1, 64})
    for (DType dtype : {DType::kBF16, DType::kF32, DType::kF16, DType::kF64}) {
      Tensor x = Tensor::normal({rows, vocab}, 10 + rows, 0, 0.0, 1.0, DType::kF32);
      std::vector<double> want;
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t first = (r * 7919 + 11) % (vocab - 1),
                           later = first + 1 + (r * 104729) % (vocab - 1 - first);
        x.data<float>()[r * vocab + first] = 100.0f;
        x.data<float>()[r * vocab + later] = 100.0f;
        want.push_back(static_cast<double>(first));
      }
      Tensor typed = x.to(dtype);
      const std::string what = std::string(dtype_name(dtype)) + " rows " + std::to_string(rows);
      Tensor got = ops::argmax_rows(typed.to(Device::cuda()));
      EXPECT_EQ(got.dtype(), DType::kI64) << what;
      EXPECT_TRUE(got.device().is_cuda()) << what;
      EXPECT_EQ(got.to_vector(), want) << what;
      EXPECT_EQ(ops::argmax_rows(typed).to_vector(), want) << what;
    }
}

TEST_F(ArgmaxRowsGpu, MatchesCpuOnRandomNanAndOddShapes) {
  ZT_SKIP_WITHOUT_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Tensor special = Tensor::from_values({1,    3,    3,    2,    0,    0,    0,     //
                                        -5,   -2,   -2,   -7,   -9,   -2,   -3,    //
                                        1,    nan,  5,    nan,  9,    1,    1,     //
                                        -inf, -inf, -inf, -inf, -inf, -inf, -inf,  //
                                        -0.0, 0.0,  -1,   -1,   -1,   -1,   -1},
                                       {5, 7}, DType::kF64);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    const std::string what = dtype_name(dtype);
    Tensor s = special.to(dtype);  // 7 columns: not whole 16-byte vectors
    EXPECT_EQ(ops::argmax_rows(s.to(Device::cuda())).to_vector(), ops::argmax_rows(s).to_vector()) << what;
    EXPECT_EQ(ops::argmax_rows(s).to_vector(), (std::vector<double>{1, 1, 1, 0, 0})) << what;
    for (const Shape& shape : {Shape{3, 1}, Shape{5, 33}, Shape{17, 9000}, Shape{2, 70001}}) {
      Tensor x = Tensor::normal(shape, shape[1], 0, 0.0, 1.0, dtype);
      EXPECT_EQ(ops::argmax_rows(x.to(Device::cuda())).to_vector(), ops::argmax_rows(x).to_vector())
          << what << " " << shape_str(shape);
    }
    // A row split over blocks: the first NaN, in whichever part it lies, before an infinity.
    Tensor wide = Tensor::normal({2, 152064}, 6, 0, 0.0, 1.0, DType::kF64);
    for (auto [at, value] : {std::pair{100000, nan}, {150000, nan}, {152064 + 5, inf}, {152064 + 140000, nan}})
      wide.data<double>()[at] = value;
    EXPECT_EQ(ops::argmax_rows(wide.to(dtype).to(Device::cuda())).to_vector(), (std::vector<double>{100000, 140000}))
        << what << " NaN in a split row";
    // Rows of a [batch, positions, vocab] tensor at its last position: rows 4·vocab apart.
    Tensor logits = Tensor::normal({3, 4, 1000}, 5, 0, 0.0, 1.0, dtype);
    EXPECT_EQ(ops::argmax_rows(logits.to(Device::cuda()).select(1, 3)).to_vector(),
              ops::argmax_rows(logits.select(1, 3)).to_vector())
        << what << " strided rows";
  }
}

}  // namespace
}  // namespace zt
