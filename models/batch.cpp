#include "models/batch.h"

#include "runtime/error.h"

namespace zt::models {
namespace {

Tensor index_tensor(const std::vector<double>& values, DType dtype, Device device) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype).to(device);
}

}  // namespace

PackedBatch pack_sequences(const std::vector<std::vector<std::int64_t>>& sequences,
                           const std::vector<std::vector<std::int64_t>>& labels, Device device) {
  ZT_REQUIRE(!sequences.empty(), "pack_sequences: no sequences given");
  ZT_REQUIRE(labels.empty() || labels.size() == sequences.size(), "pack_sequences: " + std::to_string(labels.size()) +
                                                                      " label lists for " +
                                                                      std::to_string(sequences.size()) + " sequences");
  std::vector<double> ids, positions, packed_labels, cu{0};
  for (std::size_t s = 0; s < sequences.size(); ++s) {
    const auto& sequence = sequences[s];
    ZT_REQUIRE(!sequence.empty(), "pack_sequences: sequence " + std::to_string(s) + " is empty");
    ZT_REQUIRE(labels.empty() || labels[s].size() == sequence.size(),
               "pack_sequences: sequence " + std::to_string(s) + " has " + std::to_string(sequence.size()) +
                   " tokens but " + std::to_string(labels.empty() ? 0 : labels[s].size()) + " labels");
    for (std::size_t i = 0; i < sequence.size(); ++i) {
      ids.push_back(static_cast<double>(sequence[i]));
      positions.push_back(static_cast<double>(i));
      if (!labels.empty()) packed_labels.push_back(static_cast<double>(labels[s][i]));
    }
    cu.push_back(cu.back() + static_cast<double>(sequence.size()));
  }
  PackedBatch batch{index_tensor(ids, DType::kI64, device), index_tensor(positions, DType::kI64, device),
                    index_tensor(cu, DType::kI32, device), Tensor()};
  if (!labels.empty()) batch.labels = index_tensor(packed_labels, DType::kI64, device);
  return batch;
}

std::vector<std::vector<std::int64_t>> next_token_labels(const std::vector<std::vector<std::int64_t>>& sequences) {
  std::vector<std::vector<std::int64_t>> labels;
  for (const auto& sequence : sequences) {
    std::vector<std::int64_t> next(sequence.begin() + (sequence.empty() ? 0 : 1), sequence.end());
    if (!sequence.empty()) next.push_back(kIgnoreIndex);
    labels.push_back(std::move(next));
  }
  return labels;
}

}  // namespace zt::models
