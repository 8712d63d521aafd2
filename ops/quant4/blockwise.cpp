#include "ops/quant4/blockwise.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "ops/worker_pool.h"
#include "runtime/error.h"

namespace zt::ops::quant4 {
namespace {

// The block's max |x| and the reciprocal every value is multiplied by (1/0 = inf for zeros).
struct BlockScale {
  float absmax = 0.0f;
  float reciprocal = 0.0f;
};

BlockScale block_scale(std::span<const float> block) {
  float absmax = 0.0f;
  for (float v : block) absmax = std::fmax(absmax, std::fabs(v));
  return {absmax, 1.0f / absmax};
}

std::uint8_t nearest_code(Quant4Type type, float scaled) {
  return type == Quant4Type::kNf4 ? nearest_nf4(scaled) : nearest_fp4(scaled);
}

void require_blocksize(std::int64_t blocksize) {
  ZT_REQUIRE(blocksize > 0, "a quantization blocksize must be positive, got " + std::to_string(blocksize));
}

}  // namespace

bool valid_4bit_blocksize(std::int64_t blocksize) {
  for (std::int64_t size = 32; size <= 4096; size *= 2)
    if (blocksize == size) return true;
  return false;
}

std::int64_t block_count(std::int64_t values, std::int64_t blocksize) { return (values + blocksize - 1) / blocksize; }

std::int64_t quantized_bytes(std::int64_t n, std::int64_t blocksize, bool double_quant) {
  const std::int64_t blocks = block_count(n, blocksize);
  const std::int64_t scales = double_quant ? blocks + 4 * block_count(blocks, kNestedBlocksize) + 4 * 256 : 4 * blocks;
  return (n + 1) / 2 + scales;
}

void require_finite(std::span<const float> values, const std::string& name) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      fail("'" + name + "' holds " + (std::isnan(values[i]) ? std::string("NaN") : std::string("an infinity")) +
           " at element " + std::to_string(i) +
           "; a 4-bit block scaled by it would lose every weight of the block: repair the checkpoint (or load it "
           "unquantized to find where the value came from)");
}

namespace {

// Blocks [first, last) of `values` into `out` (sized for all of them). A blocksize is even, so
// blocks never share a byte and ranges of blocks can be written by different threads.
void quantize_blocks(std::span<const float> values, std::int64_t blocksize, Quant4Type type, std::int64_t first,
                     std::int64_t last, Packed4& out) {
  const auto n = static_cast<std::int64_t>(values.size());
  for (std::int64_t block = first; block < last; ++block) {
    const std::int64_t start = block * blocksize, count = std::min(blocksize, n - start);
    const BlockScale scale =
        block_scale(values.subspan(static_cast<std::size_t>(start), static_cast<std::size_t>(count)));
    out.absmax[static_cast<std::size_t>(block)] = scale.absmax;
    // A block's values beyond the tensor's end count as zeros (the kernel loads them as 0).
    for (std::int64_t i = start; i < start + count + (count % 2); ++i) {
      const float v = i < n ? values[static_cast<std::size_t>(i)] : 0.0f;
      const std::uint8_t code = nearest_code(type, v * scale.reciprocal);
      std::uint8_t& byte = out.packed[static_cast<std::size_t>(i / 2)];
      byte = static_cast<std::uint8_t>(i % 2 == 0 ? (code << 4) : (byte | code));
    }
  }
}

// The host's threads, shared by every quantization of the process (a model's weights are
// quantized one after another as they load).
WorkerPool& quantization_pool() {
  static WorkerPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

}  // namespace

Packed4 quantize_4bit(std::span<const float> values, std::int64_t blocksize, Quant4Type type, const std::string& name) {
  ZT_REQUIRE(valid_4bit_blocksize(blocksize), "'" + name + "': 4-bit blocksize " + std::to_string(blocksize) +
                                                  " is not one of bitsandbytes' 32, 64, 128, ..., 4096");
  require_finite(values, name);
  const auto n = static_cast<std::int64_t>(values.size());
  const std::int64_t blocks = block_count(n, blocksize);
  Packed4 result;
  result.packed.assign(static_cast<std::size_t>((n + 1) / 2), 0);
  result.absmax.assign(static_cast<std::size_t>(blocks), 0.0f);
  constexpr std::int64_t kSerialValues = std::int64_t{1} << 20;  // below this, threads cost more than they save
  if (n < kSerialValues) {
    quantize_blocks(values, blocksize, type, 0, blocks, result);
    return result;
  }
  WorkerPool& pool = quantization_pool();
  const std::int64_t share = (blocks + pool.size() - 1) / pool.size();
  pool.run([&](int worker) {
    const std::int64_t first = std::min(blocks, worker * share);
    quantize_blocks(values, blocksize, type, first, std::min(blocks, first + share), result);
  });
  return result;
}

void dequantize_4bit(std::span<const std::uint8_t> packed, std::span<const float> absmax, std::int64_t blocksize,
                     Quant4Type type, std::span<float> out) {
  require_blocksize(blocksize);
  const auto n = static_cast<std::int64_t>(out.size());
  ZT_REQUIRE(static_cast<std::int64_t>(packed.size()) >= (n + 1) / 2 &&
                 static_cast<std::int64_t>(absmax.size()) >= block_count(n, blocksize),
             "dequantize_4bit: " + std::to_string(n) + " values need " + std::to_string((n + 1) / 2) + " bytes and " +
                 std::to_string(block_count(n, blocksize)) + " absmax, got " + std::to_string(packed.size()) + " and " +
                 std::to_string(absmax.size()));
  const std::array<float, 16>& book = code_book(type);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t byte = packed[static_cast<std::size_t>(i / 2)];
    const int code = i % 2 == 0 ? byte >> 4 : byte & 0x0F;
    out[static_cast<std::size_t>(i)] =
        book[static_cast<std::size_t>(code)] * absmax[static_cast<std::size_t>(i / blocksize)];
  }
}

Blockwise8 quantize_blockwise_8bit(std::span<const float> values, std::int64_t blocksize,
                                   const std::array<float, 256>& map) {
  require_blocksize(blocksize);
  const auto n = static_cast<std::int64_t>(values.size());
  Blockwise8 result;
  result.codes.resize(values.size());
  for (std::int64_t start = 0; start < n; start += blocksize) {
    const std::int64_t count = std::min(blocksize, n - start);
    const BlockScale scale =
        block_scale(values.subspan(static_cast<std::size_t>(start), static_cast<std::size_t>(count)));
    result.absmax.push_back(scale.absmax);
    for (std::int64_t i = start; i < start + count; ++i)
      result.codes[static_cast<std::size_t>(i)] =
          nearest_in_map(map, values[static_cast<std::size_t>(i)] * scale.reciprocal);
  }
  return result;
}

std::vector<float> dequantize_blockwise_8bit(std::span<const std::uint8_t> codes, std::span<const float> absmax,
                                             std::int64_t blocksize, const std::array<float, 256>& map) {
  require_blocksize(blocksize);
  ZT_REQUIRE(
      static_cast<std::int64_t>(absmax.size()) >= block_count(static_cast<std::int64_t>(codes.size()), blocksize),
      "dequantize_blockwise: " + std::to_string(codes.size()) + " codes in blocks of " + std::to_string(blocksize) +
          " need more than " + std::to_string(absmax.size()) + " absmax");
  std::vector<float> out(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i)
    out[i] = map[codes[i]] * absmax[i / static_cast<std::size_t>(blocksize)];
  return out;
}

NestedAbsmax compress_absmax(std::span<const float> absmax) {
  double sum = 0.0;
  for (float v : absmax) sum += v;
  NestedAbsmax nested;
  nested.offset = absmax.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(absmax.size()));
  std::vector<float> centred(absmax.size());
  for (std::size_t i = 0; i < absmax.size(); ++i) centred[i] = absmax[i] - nested.offset;
  Blockwise8 quantized = quantize_blockwise_8bit(centred, kNestedBlocksize, dynamic_map());
  nested.codes = std::move(quantized.codes);
  nested.absmax = std::move(quantized.absmax);
  return nested;
}

std::vector<float> decompress_absmax(std::span<const std::uint8_t> codes, std::span<const float> nested_absmax,
                                     std::int64_t blocksize, float offset, const std::array<float, 256>& map) {
  std::vector<float> absmax = dequantize_blockwise_8bit(codes, nested_absmax, blocksize, map);
  for (float& v : absmax) v += offset;
  return absmax;
}

}  // namespace zt::ops::quant4
