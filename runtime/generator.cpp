#include "runtime/generator.h"

#include "runtime/philox.h"

namespace zt {

GeneratorState Generator::reserve(std::uint64_t count) {
  GeneratorState draw = state_;
  state_.offset += philox::blocks_for(count);
  return draw;
}

Generator& default_generator() {
  thread_local Generator generator;
  return generator;
}

}  // namespace zt
