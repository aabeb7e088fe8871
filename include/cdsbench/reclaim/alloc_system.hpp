// `system`: every node from the process's global malloc (glibc, or whichever allocator the
// harness was started under with --malloc). Nodes of all types and the application's own
// data share size classes and pages: the baseline the segregated policy is compared with.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace cdsb::reclaim {

class SystemAllocator {
 public:
  static constexpr const char* name = "system";
  explicit SystemAllocator(int /*max_threads*/) noexcept {}

  template <class T>
  void* allocate(int /*tid*/) {
    void* p;
    if constexpr (alignof(T) > alignof(std::max_align_t))
      p = std::aligned_alloc(alignof(T), (sizeof(T) + alignof(T) - 1) / alignof(T) * alignof(T));
    else
      p = std::malloc(sizeof(T));
    if (!p) throw std::bad_alloc();
    return p;
  }

  template <class T>
  void deallocate(int /*tid*/, void* p) noexcept {
    std::free(p);
  }
};

}  // namespace cdsb::reclaim
