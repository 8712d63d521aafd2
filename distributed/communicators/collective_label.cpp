#include "distributed/communicators/collective_label.h"

namespace zt::distributed {

thread_local const CollectiveLabelScope* CollectiveLabelScope::innermost_ = nullptr;

std::string CollectiveLabelScope::current() { return innermost_ ? innermost_->describe() : std::string(); }

}  // namespace zt::distributed
