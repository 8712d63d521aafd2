// A base for classes that own what a copy must not duplicate (a thread pool, a profiler, a
// scope that restores a setting when it ends): copying or moving one does not compile.
#pragma once

namespace zt {

class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace zt
