#include "distributed/integer_collectives.h"

namespace zt::distributed {
namespace {

Tensor on_device(const std::vector<std::int64_t>& values, Device device) {
  const std::vector<double> exact(values.begin(), values.end());
  return Tensor::from_values(exact, {static_cast<std::int64_t>(values.size())}, DType::kI64).to(device);
}

std::vector<std::int64_t> read_back(const Tensor& tensor) {
  const std::vector<double> values = tensor.to_vector();
  return {values.begin(), values.end()};
}

}  // namespace

std::vector<std::int64_t> broadcast_integers(Communicator& comm, const std::vector<std::int64_t>& values, int root,
                                             Device device) {
  if (values.empty()) return {};
  const Tensor buffer = on_device(values, device);
  comm.broadcast(buffer, root);
  return read_back(buffer);
}

std::int64_t broadcast_integer(Communicator& comm, std::int64_t value, int root, Device device) {
  return broadcast_integers(comm, {value}, root, device)[0];
}

std::int64_t max_over_ranks(Communicator& comm, std::int64_t value, Device device) {
  const Tensor buffer = on_device({value}, device);
  comm.all_reduce(buffer, ReduceOp::kMax);
  return read_back(buffer)[0];
}

// The communicators take sums and maxima: the minimum is minus the maximum of the negations.
std::int64_t min_over_ranks(Communicator& comm, std::int64_t value, Device device) {
  return -max_over_ranks(comm, -value, device);
}

}  // namespace zt::distributed
