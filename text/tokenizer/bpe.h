// Byte-pair merging over raw bytes, shared by byte-level BPE (merges.txt ranks) and tiktoken
// (ranks of the merged bytes). A piece starts as one token per byte; the adjacent pair with
// the lowest rank (leftmost on ties) merges first, kept in a heap over a linked list of
// parts so a long piece costs O(n log n). Results for short pieces are cached.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace zt::models {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

class BytePairEncoder {
 public:
  // `token_bytes[id]` holds the bytes of each token; an empty entry is an id that byte
  // merging never produces (added tokens, holes). `source` names the file in errors.
  BytePairEncoder(const std::vector<std::string>& token_bytes, std::string source);

  // Tokens `left` and `right` next to each other become `merged`; lower ranks merge first.
  void add_merge(TokenId left, TokenId right, TokenId merged, std::int32_t rank);
  // tiktoken's rule: any two adjacent parts whose bytes join into a token merge, ranked by
  // that token's id. Adds the merges that rule implies for every token.
  void add_merges_from_ranks();
  // Looks the whole piece up before merging (tiktoken, and HF's ignore_merges).
  void set_whole_piece_lookup(bool enabled) { whole_piece_lookup_ = enabled; }

  // Appends the tokens of one pre-tokenized piece.
  void encode(std::string_view piece, std::vector<TokenId>& out) const;

  // The id of the token made of exactly `bytes`, or -1.
  TokenId find_bytes(std::string_view bytes) const;

 private:
  struct PairSlot {
    std::uint64_t key = kEmpty;
    TokenId merged = -1;
    std::int32_t rank = 0;
  };
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  const PairSlot* find_pair(TokenId left, TokenId right) const;
  void grow_pairs();
  void merge(std::string_view piece, std::vector<TokenId>& out) const;

  std::string source_;
  std::array<TokenId, 256> byte_ids_{};
  StringMap<TokenId> ids_by_bytes_;
  std::vector<PairSlot> pairs_;
  std::size_t pair_count_ = 0;
  bool whole_piece_lookup_ = false;

  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<TokenId>> cache_;
};

}  // namespace zt::models
