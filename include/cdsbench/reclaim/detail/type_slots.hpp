// Dense per-instance indices for the node types an allocator serves, so per-type state can
// live in fixed arrays instead of maps. A structure uses a handful of node types; the
// first use of a type claims a slot under a mutex (cold path), later lookups are a short
// scan of atomic loads that stay in cache.
#pragma once

#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

namespace cdsb::reclaim::detail {

template <int N>
class TypeSlots {
 public:
  static constexpr int capacity = N;

  // The slot of T; on_claim(slot) runs once, when T is first seen, before any other thread
  // can find that slot (the release store below publishes what it wrote).
  template <class T, class OnClaim>
  int index(OnClaim&& on_claim) {
    const void* tag = &tag_of<T>;
    for (int i = 0; i < N; ++i) {
      // acquire: pairs with the release in claim(), so on_claim's writes are visible.
      const void* t = tags_[i].load(std::memory_order_acquire);
      if (t == tag) return i;
      if (t == nullptr) return claim(tag, on_claim);
    }
    throw std::length_error("allocator: more than " + std::to_string(N) + " node types in one structure");
  }

  template <class T>
  int index() {
    return index<T>([](int) {});
  }

 private:
  template <class OnClaim>
  int claim(const void* tag, OnClaim& on_claim) {
    std::scoped_lock lock(claim_mutex_);
    for (int i = 0; i < N; ++i) {
      const void* t = tags_[i].load(std::memory_order_relaxed);
      if (t == tag) return i;
      if (t == nullptr) {
        on_claim(i);
        tags_[i].store(tag, std::memory_order_release);
        return i;
      }
    }
    throw std::length_error("allocator: more than " + std::to_string(N) + " node types in one structure");
  }

  // Not const: distinct constants may be merged by the linker, distinct variables may not.
  template <class T>
  static inline char tag_of = 0;

  std::array<std::atomic<const void*>, N> tags_{};
  std::mutex claim_mutex_;
};

}  // namespace cdsb::reclaim::detail
