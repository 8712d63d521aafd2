#include "text/tokenizer/bpe.h"

#include <algorithm>

#include "runtime/error.h"

namespace zt::models {
namespace {

constexpr std::size_t kMaxCachedPieceBytes = 128;
constexpr std::size_t kMaxCacheEntries = 1 << 17;

std::uint64_t pair_key(TokenId left, TokenId right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

std::size_t slot_of(std::uint64_t key, std::size_t mask) {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & mask;
}

struct Candidate {
  std::int32_t rank;
  std::int32_t pos;  // index of the left part
  TokenId left, right, merged;
  // std::push_heap builds a max-heap: "less" means lower priority.
  bool operator<(const Candidate& other) const { return rank != other.rank ? rank > other.rank : pos > other.pos; }
};

struct MergeScratch {
  std::vector<TokenId> ids;
  std::vector<std::int32_t> prev, next;
  std::vector<Candidate> heap;
};

}  // namespace

BytePairEncoder::BytePairEncoder(const std::vector<std::string>& token_bytes, std::string source)
    : source_(std::move(source)), pairs_(1024) {
  byte_ids_.fill(-1);
  ids_by_bytes_.reserve(token_bytes.size());
  for (std::size_t id = 0; id < token_bytes.size(); ++id) {
    const std::string& bytes = token_bytes[id];
    if (bytes.empty()) continue;
    // The first id wins when two tokens spell the same bytes, as a vocabulary lookup does.
    ids_by_bytes_.emplace(bytes, static_cast<TokenId>(id));
    if (bytes.size() == 1 && byte_ids_[static_cast<std::uint8_t>(bytes[0])] < 0)
      byte_ids_[static_cast<std::uint8_t>(bytes[0])] = static_cast<TokenId>(id);
  }
}

TokenId BytePairEncoder::find_bytes(std::string_view bytes) const {
  auto it = ids_by_bytes_.find(bytes);
  return it == ids_by_bytes_.end() ? -1 : it->second;
}

const BytePairEncoder::PairSlot* BytePairEncoder::find_pair(TokenId left, TokenId right) const {
  const std::uint64_t key = pair_key(left, right);
  const std::size_t mask = pairs_.size() - 1;
  for (std::size_t i = slot_of(key, mask);; i = (i + 1) & mask) {
    if (pairs_[i].key == key) return &pairs_[i];
    if (pairs_[i].key == kEmpty) return nullptr;
  }
}

void BytePairEncoder::grow_pairs() {
  std::vector<PairSlot> old(pairs_.size() * 2);
  old.swap(pairs_);
  const std::size_t mask = pairs_.size() - 1;
  for (const PairSlot& slot : old) {
    if (slot.key == kEmpty) continue;
    std::size_t i = slot_of(slot.key, mask);
    while (pairs_[i].key != kEmpty) i = (i + 1) & mask;
    pairs_[i] = slot;
  }
}

void BytePairEncoder::add_merge(TokenId left, TokenId right, TokenId merged, std::int32_t rank) {
  if (find_pair(left, right) != nullptr) return;  // a repeated merge line keeps its first rank
  if ((pair_count_ + 1) * 2 > pairs_.size()) grow_pairs();
  const std::uint64_t key = pair_key(left, right);
  const std::size_t mask = pairs_.size() - 1;
  std::size_t i = slot_of(key, mask);
  while (pairs_[i].key != kEmpty) i = (i + 1) & mask;
  pairs_[i] = PairSlot{key, merged, rank};
  ++pair_count_;
}

void BytePairEncoder::add_merges_from_ranks() {
  for (const auto& [bytes, id] : ids_by_bytes_) {
    for (std::size_t split = 1; split < bytes.size(); ++split) {
      const TokenId left = find_bytes(std::string_view(bytes).substr(0, split));
      const TokenId right = find_bytes(std::string_view(bytes).substr(split));
      if (left >= 0 && right >= 0) add_merge(left, right, id, id);
    }
  }
}

void BytePairEncoder::encode(std::string_view piece, std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  if (whole_piece_lookup_ || piece.size() == 1) {
    const TokenId whole = find_bytes(piece);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  const bool cacheable = piece.size() <= kMaxCachedPieceBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t first = out.size();
  merge(piece, out);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kMaxCacheEntries)
      cache_.emplace(std::string(piece),
                     std::vector<TokenId>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()));
  }
}

void BytePairEncoder::merge(std::string_view piece, std::vector<TokenId>& out) const {
  thread_local MergeScratch s;
  const auto n = static_cast<std::int32_t>(piece.size());
  s.ids.resize(piece.size());
  s.prev.resize(piece.size());
  s.next.resize(piece.size());
  s.heap.clear();
  for (std::int32_t i = 0; i < n; ++i) {
    const auto byte = static_cast<std::uint8_t>(piece[static_cast<std::size_t>(i)]);
    s.ids[i] = byte_ids_[byte];
    if (s.ids[i] < 0)
      zt::fail(source_ + ": the vocabulary has no token for the byte " + std::to_string(byte) +
               ", so this text cannot be encoded; the tokenizer file is incomplete");
    s.prev[i] = i - 1;
    s.next[i] = i + 1 < n ? i + 1 : -1;
  }
  auto consider = [&](std::int32_t pos) {
    if (pos < 0 || s.next[pos] < 0) return;
    const TokenId left = s.ids[pos], right = s.ids[s.next[pos]];
    if (const PairSlot* slot = find_pair(left, right)) {
      s.heap.push_back(Candidate{slot->rank, pos, left, right, slot->merged});
      std::push_heap(s.heap.begin(), s.heap.end());
    }
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end());
    const Candidate c = s.heap.back();
    s.heap.pop_back();
    const std::int32_t right_pos = s.next[c.pos];
    // A part that merged since this candidate was queued has a new id (ids only grow),
    // and a part merged into its left neighbour is unlinked: either makes it stale.
    if (s.ids[c.pos] != c.left || right_pos < 0 || s.ids[right_pos] != c.right) continue;
    s.ids[c.pos] = c.merged;
    s.ids[right_pos] = -1;
    s.next[c.pos] = s.next[right_pos];
    if (s.next[c.pos] >= 0) s.prev[s.next[c.pos]] = c.pos;
    consider(s.prev[c.pos]);
    consider(c.pos);
  }
  for (std::int32_t i = 0; i >= 0; i = s.next[i]) out.push_back(s.ids[i]);
}

}  // namespace zt::models
