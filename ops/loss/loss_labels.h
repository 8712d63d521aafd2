// Checks of a loss's labels that cross_entropy and linear_cross_entropy share: one int32 or
// int64 label per row, each a class or ignore_index.
#pragma once

#include <cstdint>
#include <string>

#include "ops/op_checks.h"
#include "tensor/tensor.h"

namespace zt::ops {

// labels: int32 or int64, one per row of `rows` (logits or hidden).
void check_label_shape(const char* op, const Tensor& labels, NamedTensor rows);

// Throws for a label that is neither ignore_index nor one of the `vocab` classes, naming the
// classes as "[0, vocab)" followed by `classes_of` (" of weight", or empty). `labels` is
// contiguous; on a GPU the check runs there.
void check_label_values(const char* op, const Tensor& labels, std::int64_t vocab, std::int64_t ignore_index,
                        const std::string& classes_of);

}  // namespace zt::ops
