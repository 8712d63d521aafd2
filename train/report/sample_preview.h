// The first training sample as `zerotune train` prints it before training, as LLaMA-Factory
// does: the text the model reads (the template rendered, special tokens shown) and the text
// of only the tokens the loss is taken on, so a wrong template or mask shows before any GPU
// time is spent:
//   training example (first sample: 42 tokens, 9 trained):
//   inputs:
//   <|im_start|>system ... <|im_end|>
//   labels:
//   The answer.<|im_end|>
#pragma once

#include <string>

#include "text/tokenizer/tokenizer.h"
#include "train/data/batching.h"

namespace zt::train {

std::string sample_preview(const TokenizedSample& sample, const models::Tokenizer& tokenizer);

}  // namespace zt::train
