#include "runtime/memory/block_pool.h"

#include <cstdint>
#include <tuple>

namespace zt::detail {
namespace {

auto order_key(const Block* block) {
  return std::make_tuple(reinterpret_cast<std::uintptr_t>(block->stream), block->size,
                         reinterpret_cast<std::uintptr_t>(block->ptr));
}

// Folds `high`, the block right after `low`, into `low`.
void fold_into(Block* low, Block* high) {
  low->size += high->size;
  low->next = high->next;
  if (high->next != nullptr) high->next->prev = low;
  delete high;
}

}  // namespace

bool BlockPool::StreamSizeAddressOrder::operator()(const Block* a, const Block* b) const {
  return order_key(a) < order_key(b);
}

Block* BlockPool::take(cudaStream_t stream, std::size_t size) {
  Block key;  // address 0 sorts first, so lower_bound finds the smallest block that fits
  key.stream = stream;
  key.size = size;
  auto it = free_.lower_bound(&key);
  if (it == free_.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  free_.erase(it);
  if (block->size - size >= min_split_remainder_) split_off_tail(block, size);
  block->state = BlockState::kAllocated;
  return block;
}

// The tail needs no merging: `block` was free, so its old successor is not.
void BlockPool::split_off_tail(Block* block, std::size_t size) {
  auto* tail = new Block;
  tail->ptr = block->ptr + size;
  tail->size = block->size - size;
  tail->stream = block->stream;
  tail->pool = this;
  tail->prev = block;
  tail->next = block->next;
  if (block->next != nullptr) block->next->prev = tail;
  block->next = tail;
  block->size = size;
  free_.insert(tail);
}

void BlockPool::insert_free(Block* block) {
  block->state = BlockState::kFree;
  if (Block* prev = block->prev; prev != nullptr && prev->state == BlockState::kFree) {
    free_.erase(prev);
    fold_into(prev, block);
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && next->state == BlockState::kFree) {
    free_.erase(next);
    fold_into(block, next);
  }
  free_.insert(block);
}

std::vector<Block*> BlockPool::take_unused_segments() {
  std::vector<Block*> unused;
  for (auto it = free_.begin(); it != free_.end();) {
    if ((*it)->is_whole_segment()) {
      unused.push_back(*it);
      it = free_.erase(it);
    } else {
      ++it;
    }
  }
  return unused;
}

}  // namespace zt::detail
