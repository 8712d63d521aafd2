// The token embedding with torch's padding_idx semantics: the lookup returns the pad row like
// any other, but tokens whose id is the padding id add nothing to the table's gradient (so
// the gradients match transformers' models, whose nn.Embedding has padding_idx = pad_token_id).
#pragma once

#include <cstdint>
#include <optional>

#include "autograd/variable.h"

namespace zt::models {

// weight [vocab, hidden], ids int64 [tokens] -> [tokens, hidden].
autograd::Variable token_embedding(const autograd::Variable& weight, const Tensor& ids,
                                   std::optional<std::int64_t> padding_idx, bool deterministic);

}  // namespace zt::models
