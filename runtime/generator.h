// The random stream a thread draws from: a Philox (seed, offset) pair. A draw of n numbers
// takes the current offset and advances it by philox::blocks_for(n), so a state saved and
// restored (activation checkpointing, resuming a run) repeats the same numbers exactly.
#pragma once

#include <cstdint>

namespace zt {

struct GeneratorState {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  bool operator==(const GeneratorState&) const = default;
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : state_{seed, 0} {}
  void manual_seed(std::uint64_t seed) { state_ = {seed, 0}; }
  GeneratorState state() const { return state_; }
  void set_state(GeneratorState state) { state_ = state; }
  // Reserves the stream for a draw of `count` numbers; returns the state to draw them with.
  GeneratorState reserve(std::uint64_t count);

 private:
  GeneratorState state_;
};

// This thread's generator (in-process ranks each have their own).
Generator& default_generator();

}  // namespace zt
