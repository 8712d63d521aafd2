#include "train/report/sample_preview.h"

#include <vector>

namespace zt::train {

std::string sample_preview(const TokenizedSample& sample, const models::Tokenizer& tokenizer) {
  std::vector<models::TokenId> trained;
  for (std::int32_t label : sample.labels)
    if (label != kIgnoreIndex) trained.push_back(label);
  return "training example (first sample: " + std::to_string(sample.ids.size()) + " tokens, " +
         std::to_string(trained.size()) + " trained):\ninputs:\n" + tokenizer.decode(sample.ids) + "\nlabels:\n" +
         tokenizer.decode(trained);
}

}  // namespace zt::train
