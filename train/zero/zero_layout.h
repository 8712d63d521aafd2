// How ZeRO lays the trainable parameters out over ranks. Parameters are grouped, in
// reverse order (the order backward finishes them), into buckets of about
// reduce_bucket_size elements; each bucket is padded to a multiple of the world size and
// split into equal chunks, chunk r owned by rank r. A rank's partition is its chunk of every
// bucket: its fp32 master weights, Adam moments and gradients live there and nowhere else.
// Parameter boundaries fall anywhere inside a chunk (uneven shards are fine); `pieces`
// says which part of which parameter each owned range holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt::train {

struct ZeroBucket {
  std::vector<std::size_t> parameters;  // indices into the parameter list, in bucket order
  std::vector<std::int64_t> offsets;    // each parameter's start inside the bucket
  std::vector<std::int64_t> numels;     // and its size
  std::int64_t padded_numel = 0;        // a multiple of world_size
  std::int64_t chunk() const;           // padded_numel / world_size
  int world_size = 1;
};

// One contiguous piece of a parameter inside a rank's chunk of a bucket.
struct OwnedPiece {
  std::size_t parameter;
  std::int64_t parameter_offset;  // first element of the parameter in this piece
  std::int64_t chunk_offset;      // where it sits in the rank's chunk
  std::int64_t numel;
};

struct ZeroLayout {
  std::vector<ZeroBucket> buckets;
  int world_size = 1;
  std::int64_t partition_numel = 0;  // sum of the buckets' chunks: one rank's share

  // The pieces of bucket b inside rank `rank`'s chunk.
  std::vector<OwnedPiece> owned_pieces(std::size_t bucket, int rank) const;
  // Where bucket b's chunk starts in a rank's partition.
  std::int64_t partition_offset(std::size_t bucket) const;
};

ZeroLayout make_zero_layout(const std::vector<std::int64_t>& parameter_numels, int world_size,
                            std::int64_t bucket_numel);

// ZeRO-3's flat buffer of one module: `parameters` (indices, with their `numels`) back to
// back in the order given, padded so that world_size equal chunks of a multiple of
// `alignment` elements each cover it, whatever the tensor sizes.
ZeroBucket make_flat_bucket(const std::vector<std::size_t>& parameters, const std::vector<std::int64_t>& numels,
                            int world_size, std::int64_t alignment);

// A layout of buckets built elsewhere (make_flat_bucket's, or some of make_zero_layout's).
ZeroLayout layout_of(std::vector<ZeroBucket> buckets, int world_size);

}  // namespace zt::train
