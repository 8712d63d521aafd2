#include "distributed/communicator.h"

#include "runtime/byte_format.h"

namespace zt::distributed {

std::string describe_collective(const char* name, const Tensor& tensor) {
  return std::string(name) + " of " + std::to_string(tensor.numel()) + " " + dtype_name(tensor.dtype()) +
         " elements (" + format_bytes(tensor.nbytes()) + ")";
}

}  // namespace zt::distributed
