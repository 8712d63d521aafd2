#include "ops/loss/loss_labels.h"

#include <vector>

#include "cuda/common/index_bounds.cuh"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {

void check_label_shape(const char* op, const Tensor& labels, NamedTensor rows) {
  ZT_REQUIRE(labels.dtype() == DType::kI32 || labels.dtype() == DType::kI64,
             std::string(op) + ": labels must be int32 or int64, got " + dtype_name(labels.dtype()));
  check_dim(op, {"labels", &labels}, 1);
  check_size(op, {"labels", &labels}, 0, rows.second->size(0),
             std::string("one label per row of ") + rows.first + " " + shape_str(rows.second->shape()));
}

void check_label_values(const char* op, const Tensor& labels, std::int64_t vocab, std::int64_t ignore_index,
                        const std::string& classes_of) {
  std::int64_t bad = -1;
  if (labels.device().is_cuda()) {
    DeviceGuard guard(labels.device().index);
    bad = cuda::first_index_out_of_range(labels.data_ptr(), labels.dtype(), labels.numel(), vocab, true, ignore_index,
                                         current_stream());
  } else {
    std::vector<double> values = labels.to_vector();
    for (std::size_t t = 0; t < values.size() && bad < 0; ++t) {
      auto label = static_cast<std::int64_t>(values[t]);
      if (label != ignore_index && (label < 0 || label >= vocab)) bad = static_cast<std::int64_t>(t);
    }
  }
  if (bad < 0) return;
  auto label = static_cast<std::int64_t>(labels.select(0, bad).item());
  fail(std::string(op) + ": token " + std::to_string(bad) + " has label " + std::to_string(label) +
       ", outside the classes [0, " + std::to_string(vocab) + ")" + classes_of + " and not ignore_index " +
       std::to_string(ignore_index));
}

}  // namespace zt::ops
