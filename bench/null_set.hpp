// `null`: a set that does nothing, so a trial with it measures the harness alone: the
// generator, the key distribution, the op selection, the counters and the loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cdsb::bench {

class NullSet {
 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  static constexpr bool stores_keys = false;  // the harness skips prefill

  explicit NullSet(int /*max_threads*/) {}

  // Each operation is trivially linearizable and wait-free: nothing is ever present. The
  // asm barrier keeps the compiler from deleting the call and with it the key draw.
  bool insert(int, key_type k, mapped_type) noexcept { return sink(k); }
  bool erase(int, key_type k) noexcept { return sink(k); }
  bool contains(int, key_type k) const noexcept { return sink(k); }
  std::size_t range_query(int, key_type lo, key_type, std::vector<key_type>& out) const noexcept {
    out.clear();
    sink(lo);
    return 0;
  }
  template <class Fn>
  void for_each_key(Fn&&) const noexcept {}

 private:
  static bool sink(key_type k) noexcept {
    asm volatile("" : : "r"(k));
    return false;
  }
};

}  // namespace cdsb::bench
