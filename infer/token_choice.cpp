#include "infer/token_choice.h"

#include <limits>

#include "models/generation/generate_sampling.h"
#include "ops/reduce/reduce.h"
#include "runtime/philox.h"

namespace zt::infer {
namespace {

// Greedy rows without a repetition penalty take their argmax on the device; min_new_tokens
// only bars the eos ids, which suppress_eos does there too.
bool plain_argmax(const SequenceState& s) {
  const models::GenerationOptions& o = *s.options;
  return !o.do_sample && o.repetition_penalty == 1.0;
}

bool bars_eos(const SequenceState& s) {
  return static_cast<std::int64_t>(s.generated.size()) < s.options->min_new_tokens && !s.options->eos_token_ids.empty();
}

// Sets row `row`'s eos logits to -inf in place (the logits are this step's scratch).
void suppress_eos(const Tensor& logits, std::int64_t row, const std::vector<std::int64_t>& eos) {
  Tensor line = logits.select(0, row);
  for (std::int64_t id : eos)
    if (id >= 0 && id < line.size(0)) line.narrow(0, id, 1).fill_(-std::numeric_limits<double>::infinity());
}

// What models::generate chooses for the sequence from this row: the same processors and the
// same draw (the request's seed, its step).
std::int64_t processed_choice(std::vector<double> row, const SequenceState& s) {
  const auto step = static_cast<std::int64_t>(s.generated.size());
  models::apply_min_new_tokens(row, step, *s.options);
  const double uniform = philox::uniform(s.options->seed, static_cast<std::uint64_t>(step), 0);
  return models::choose_token(std::move(row), s.seen, *s.options, uniform);
}

}  // namespace

std::vector<std::int64_t> choose_next_tokens(const Tensor& logits, const std::vector<const SequenceState*>& rows,
                                             const Tensor& argmax) {
  bool any_argmax = false, any_processed = false;
  for (const SequenceState* s : rows) (plain_argmax(*s) ? any_argmax : any_processed) = true;
  bool any_barred = false;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (plain_argmax(*rows[i]) && bars_eos(*rows[i])) {
      suppress_eos(logits, static_cast<std::int64_t>(i), rows[i]->options->eos_token_ids);
      any_barred = true;
    }
  std::vector<double> argmax_ids;
  if (any_argmax) argmax_ids = (argmax.defined() && !any_barred ? argmax : ops::argmax_rows(logits)).to_vector();
  Tensor host;
  if (any_processed) host = logits.to(Device::cpu(), DType::kF64);
  std::vector<std::int64_t> chosen;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (plain_argmax(*rows[i]))
      chosen.push_back(static_cast<std::int64_t>(argmax_ids[i]));
    else
      chosen.push_back(processed_choice(host.select(0, static_cast<std::int64_t>(i)).to_vector(), *rows[i]));
  }
  return chosen;
}

}  // namespace zt::infer
