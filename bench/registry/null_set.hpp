// `null`: a set that does nothing, so a trial with it measures the harness alone: the
// generator, the key distribution, the op selection, the counters and the loop. With a
// reclaimer other than `none`, each operation enters and leaves one guard and nothing
// else, so the difference to `--reclaimer none` is the cost of an empty guarded operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb::bench {

template <reclaim::Reclaimer R = reclaim::NoReclaim<>>
class NullSet {
 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  using reclaimer_type = R;
  static constexpr bool stores_keys = false;  // the harness skips prefill

  explicit NullSet(int max_threads, reclaim::ReclaimOptions options = {}) : reclaimer_(max_threads, 1, options) {}

  // Each operation is trivially linearizable and wait-free: nothing is ever present. The
  // asm barrier keeps the compiler from deleting the call and with it the key draw.
  bool insert(int tid, key_type k, mapped_type) { return guarded(tid, k); }
  bool erase(int tid, key_type k) { return guarded(tid, k); }
  bool contains(int tid, key_type k) { return guarded(tid, k); }
  std::size_t range_query(int tid, key_type lo, key_type, std::vector<key_type>& out) {
    out.clear();
    guarded(tid, lo);
    return 0;
  }
  template <class Fn>
  void for_each_key(Fn&&) const noexcept {}
  StatsReport stats() const { return reclaimer_.stats(); }

 private:
  bool guarded(int tid, key_type k) {
    auto guard = reclaimer_.enter(tid);
    asm volatile("" : : "r"(k));
    return false;
  }

  R reclaimer_;
};

}  // namespace cdsb::bench
