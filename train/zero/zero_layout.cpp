#include "train/zero/zero_layout.h"

#include <algorithm>

#include "runtime/error.h"

namespace zt::train {

std::int64_t ZeroBucket::chunk() const { return padded_numel / world_size; }

ZeroLayout make_zero_layout(const std::vector<std::int64_t>& numels, int world_size, std::int64_t bucket_numel) {
  ZT_REQUIRE(world_size >= 1 && bucket_numel >= 1, "ZeRO layout: world size and bucket size must be >= 1");
  ZeroLayout layout;
  layout.world_size = world_size;
  ZeroBucket current;
  std::int64_t filled = 0;
  auto close_bucket = [&] {
    if (current.parameters.empty()) return;
    current.world_size = world_size;
    current.padded_numel = std::max<std::int64_t>(1, (filled + world_size - 1) / world_size) * world_size;
    layout.partition_numel += current.chunk();
    layout.buckets.push_back(std::move(current));
    current = ZeroBucket{};
    filled = 0;
  };
  for (std::size_t i = numels.size(); i > 0; --i) {  // backward finishes the last parameters first
    current.parameters.push_back(i - 1);
    current.offsets.push_back(filled);
    current.numels.push_back(numels[i - 1]);
    filled += numels[i - 1];
    if (filled >= bucket_numel) close_bucket();
  }
  close_bucket();
  return layout;
}

ZeroBucket make_flat_bucket(const std::vector<std::size_t>& parameters, const std::vector<std::int64_t>& numels,
                            int world_size, std::int64_t alignment) {
  ZT_REQUIRE(world_size >= 1 && alignment >= 1 && parameters.size() == numels.size(),
             "ZeRO flat bucket: world size and alignment must be >= 1, one size per parameter");
  ZeroBucket bucket;
  bucket.world_size = world_size;
  std::int64_t filled = 0;
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    bucket.parameters.push_back(parameters[k]);
    bucket.offsets.push_back(filled);
    bucket.numels.push_back(numels[k]);
    filled += numels[k];
  }
  const std::int64_t unit = alignment * world_size;
  bucket.padded_numel = std::max<std::int64_t>(1, (filled + unit - 1) / unit) * unit;
  return bucket;
}

ZeroLayout layout_of(std::vector<ZeroBucket> buckets, int world_size) {
  ZeroLayout layout;
  layout.world_size = world_size;
  for (const ZeroBucket& bucket : buckets) {
    ZT_REQUIRE(bucket.world_size == world_size, "ZeRO layout: a bucket split for another world size");
    layout.partition_numel += bucket.chunk();
  }
  layout.buckets = std::move(buckets);
  return layout;
}

std::int64_t ZeroLayout::partition_offset(std::size_t bucket) const {
  std::int64_t offset = 0;
  for (std::size_t b = 0; b < bucket; ++b) offset += buckets[b].chunk();
  return offset;
}

std::vector<OwnedPiece> ZeroLayout::owned_pieces(std::size_t b, int rank) const {
  const ZeroBucket& bucket = buckets[b];
  const std::int64_t begin = rank * bucket.chunk(), end = begin + bucket.chunk();
  std::vector<OwnedPiece> pieces;
  for (std::size_t k = 0; k < bucket.parameters.size(); ++k) {
    const std::int64_t start = std::max(begin, bucket.offsets[k]);
    const std::int64_t stop = std::min(end, bucket.offsets[k] + bucket.numels[k]);
    if (start < stop) pieces.push_back({bucket.parameters[k], start - bucket.offsets[k], start - begin, stop - start});
  }
  return pieces;
}

}  // namespace zt::train
