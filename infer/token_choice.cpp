#include "infer/token_choice.h"

#include <limits>
#include <span>

#include "models/generation/generate_sampling.h"
#include "ops/reduce/reduce.h"
#include "ops/sampling/sampling.h"
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

// What models::generate applies to the sequence's row: the same processors and the same draw
// (the request's seed, its step).
ops::RowSampling rules_of(const SequenceState& s) {
  const models::GenerationOptions& o = *s.options;
  const auto step = static_cast<std::uint64_t>(s.generated.size());
  return models::row_sampling(
      o, s.seen, bars_eos(s) ? std::span<const std::int64_t>(o.eos_token_ids) : std::span<const std::int64_t>(),
      philox::uniform(o.seed, step, 0));
}

// The rows at `indices`, in that order: the logits themselves when that is all of them.
Tensor rows_at(const Tensor& logits, const std::vector<std::int64_t>& indices) {
  if (static_cast<std::int64_t>(indices.size()) == logits.size(0)) return logits;
  Tensor picked =
      Tensor::empty({static_cast<std::int64_t>(indices.size()), logits.size(1)}, logits.dtype(), logits.device());
  for (std::size_t j = 0; j < indices.size(); ++j)
    picked.select(0, static_cast<std::int64_t>(j)).copy_from(logits.select(0, indices[j]));
  return picked;
}

}  // namespace

std::vector<std::int64_t> choose_next_tokens(const Tensor& logits, const std::vector<const SequenceState*>& rows,
                                             const Tensor& argmax) {
  std::vector<std::int64_t> processed;  // rows for ops::sample_rows
  std::vector<ops::RowSampling> rules;
  bool any_barred = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SequenceState& s = *rows[i];
    if (!plain_argmax(s)) {
      processed.push_back(static_cast<std::int64_t>(i));
      rules.push_back(rules_of(s));
    } else if (bars_eos(s)) {
      suppress_eos(logits, static_cast<std::int64_t>(i), s.options->eos_token_ids);
      any_barred = true;
    }
  }
  std::vector<std::int64_t> chosen(rows.size());
  if (processed.size() < rows.size()) {
    const std::vector<double> ids = (argmax.defined() && !any_barred ? argmax : ops::argmax_rows(logits)).to_vector();
    for (std::size_t i = 0; i < rows.size(); ++i) chosen[i] = static_cast<std::int64_t>(ids[i]);
  }
  if (!processed.empty()) {
    const std::vector<std::int64_t> ids = ops::sample_rows(rows_at(logits, processed), rules);
    for (std::size_t j = 0; j < processed.size(); ++j) chosen[static_cast<std::size_t>(processed[j])] = ids[j];
  }
  return chosen;
}

}  // namespace zt::infer
