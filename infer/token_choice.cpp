#include "infer/token_choice.h"

#include "models/generate_sampling.h"
#include "ops/reduce.h"
#include "runtime/philox.h"

namespace zt::infer {
namespace {

bool plain_argmax(const SequenceState& s) {
  const models::GenerationOptions& o = *s.options;
  return !o.do_sample && o.repetition_penalty == 1.0 &&
         static_cast<std::int64_t>(s.generated.size()) >= o.min_new_tokens;
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
  std::vector<double> argmax_ids;
  if (any_argmax) argmax_ids = (argmax.defined() ? argmax : ops::argmax_rows(logits)).to_vector();
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
