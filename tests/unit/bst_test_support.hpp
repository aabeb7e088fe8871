// What the BST unit tests share: an allocator that counts the objects (nodes and descriptors)
// alive, a stats figure by name, and a tree's keys in order.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"

namespace cdsb::test_support {

// Objects allocated through CountingAllocator and not yet freed (all instances, all trees).
inline std::atomic<std::int64_t> live_objects{0};

// System malloc, counting the objects (nodes and descriptors) alive.
class CountingAllocator {
 public:
  static constexpr const char* name = "counting";
  explicit CountingAllocator(int max_threads) : inner_(max_threads) {}
  template <class T>
  void* allocate(int tid) {
    live_objects.fetch_add(1, std::memory_order_relaxed);
    return inner_.allocate<T>(tid);
  }
  template <class T>
  void deallocate(int tid, void* p) noexcept {
    live_objects.fetch_sub(1, std::memory_order_relaxed);
    inner_.deallocate<T>(tid, p);
  }

 private:
  reclaim::SystemAllocator inner_;
};

inline std::uint64_t figure(const StatsReport& r, const std::string& name) {
  for (const auto& [n, v] : r.values)
    if (n == name) return v;
  ADD_FAILURE() << "no figure " << name;
  return 0;
}

inline std::vector<std::uint64_t> keys_of(const auto& tree) {
  std::vector<std::uint64_t> keys;
  tree.for_each_key([&](std::uint64_t k) { keys.push_back(k); });
  return keys;
}

}  // namespace cdsb::test_support
