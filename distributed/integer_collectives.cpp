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

std::string broadcast_text(Communicator& comm, const std::string& text, int root, Device device) {
  const auto length = static_cast<std::size_t>(
      broadcast_integer(comm, comm.rank() == root ? static_cast<std::int64_t>(text.size()) : 0, root, device));
  std::vector<std::int64_t> words((length + 3) / 4, 0);
  if (comm.rank() == root)
    for (std::size_t i = 0; i < length; ++i)
      words[i / 4] |= static_cast<std::int64_t>(static_cast<unsigned char>(text[i])) << (8 * (i % 4));
  words = broadcast_integers(comm, words, root, device);
  std::string received(length, '\0');
  for (std::size_t i = 0; i < length; ++i) received[i] = static_cast<char>((words[i / 4] >> (8 * (i % 4))) & 0xff);
  return received;
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
