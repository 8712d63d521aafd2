// What the calling code is doing when it starts a collective ("stage 2 reduce-scatter
// gradients, bucket 3"), for the trace of --zero_trace (distributed/communicators/tracing_communicator.h).
// A label is scoped to the calling thread, which is the rank's own thread under every
// communicator (in-process ranks are threads), and it holds a function that builds the text
// rather than the text: only a tracing communicator calls it, so labelling a call site costs
// two thread-local stores when tracing is off.
//
//   distributed::CollectiveLabel label([&] { return "stage 3 gather " + module_name(module); });
//   comm.all_gather(shard, whole);
#pragma once

#include <string>
#include <utility>

namespace zt::distributed {

class CollectiveLabelScope {
 public:
  CollectiveLabelScope(const CollectiveLabelScope&) = delete;
  CollectiveLabelScope& operator=(const CollectiveLabelScope&) = delete;

  // The text of the innermost label alive on this thread; empty when there is none.
  static std::string current();

 protected:
  CollectiveLabelScope() : outer_(std::exchange(innermost_, this)) {}
  ~CollectiveLabelScope() { innermost_ = outer_; }
  virtual std::string describe() const = 0;

 private:
  const CollectiveLabelScope* outer_;
  static thread_local const CollectiveLabelScope* innermost_;
};

template <typename Describe>
class CollectiveLabel final : public CollectiveLabelScope {
 public:
  explicit CollectiveLabel(Describe describe) : describe_(std::move(describe)) {}

 private:
  std::string describe() const override { return describe_(); }
  Describe describe_;
};

}  // namespace zt::distributed
