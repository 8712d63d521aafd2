// Fuzzes ds_config.json reading (HF's "auto" filling, then DeepSpeed's typing and checks) with
// arbitrary text and the default values of HF's flags. zt::Error is the expected rejection;
// anything else escaping, a sanitizer report, or an accepted config that breaks DeepSpeed's
// batch rule or its other checks is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zr = zt::train;
using zt::fuzz::require;

namespace {

constexpr int kWorldSize = 2;

// What the trainer takes for granted about an accepted config.
void check_invariants(const zr::DeepSpeedConfig& c) {
  require(c.micro_batch_per_gpu > 0 && c.gradient_accumulation_steps > 0);
  require(c.train_batch_size == c.micro_batch_per_gpu * c.gradient_accumulation_steps * kWorldSize);
  require(c.zero.stage >= 0 && c.zero.stage <= 3);
  require(!(c.fp16 && c.bf16));
  require(c.gradient_clipping >= 0.0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  // HF's defaults of the flags: every "auto" has a value.
  const zr::AutoFillContext context{.per_device_train_batch_size = 8,
                                    .max_grad_norm = 1.0,
                                    .learning_rate = 5e-5,
                                    .world_size = kWorldSize,
                                    .hidden_size = 1024,
                                    .total_steps = 1000,
                                    .warmup_steps = 10};
  const auto config = zt::fuzz::accepted([&] { return zr::parse_deepspeed_text(text, context, "ds_config.json"); });
  if (!config) return 0;
  check_invariants(*config);
  return 0;
}
