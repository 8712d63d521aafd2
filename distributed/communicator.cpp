#include "distributed/communicator.h"

#include "runtime/error.h"
#include "runtime/terminal/byte_format.h"

namespace zt::distributed {

std::string describe_collective(const char* name, const Tensor& tensor) {
  return std::string(name) + " of " + std::to_string(tensor.numel()) + " " + dtype_name(tensor.dtype()) +
         " elements (" + format_bytes(tensor.nbytes()) + ")";
}

void require_world_multiple(const char* op, const Tensor& whole, const char* whole_role, const Tensor& part,
                            const char* part_role, int world_size, bool same_dtype) {
  ZT_REQUIRE(whole.numel() == part.numel() * world_size && (!same_dtype || whole.dtype() == part.dtype()),
             std::string(op) + ": the " + whole_role + " has " + std::to_string(whole.numel()) +
                 " elements, not world_size " + std::to_string(world_size) + " times the " + part_role + "'s " +
                 std::to_string(part.numel()) + (same_dtype ? ", or the dtypes differ" : ""));
}

namespace {

class CompletedCollective : public PendingCollective {
 public:
  void wait() override {}
};

}  // namespace

std::unique_ptr<PendingCollective> Communicator::start_all_gather(const Tensor& input, const Tensor& output) {
  all_gather(input, output);
  return std::make_unique<CompletedCollective>();
}

std::unique_ptr<PendingCollective> Communicator::start_reduce_scatter(const Tensor& input, const Tensor& output) {
  reduce_scatter(input, output);
  return std::make_unique<CompletedCollective>();
}

}  // namespace zt::distributed
