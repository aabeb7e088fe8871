// Deliberately broken sets, registered only in test builds (the `cdsbench-testing` binary
// and the unit tests): the harness's validation must catch each one.
#pragma once

#include <string>

#include "bench/registry.hpp"
#include "cdsbench/set/locked_std_set.hpp"

namespace cdsb::testing {

// Claims success for inserts of every 61st key but never stores them.
class DropsInsertsSet : public LockedStdSet<SpinLock> {
 public:
  using LockedStdSet::LockedStdSet;
  bool insert(int tid, key_type k, mapped_type v) {
    if (k % 61 == 0) return !LockedStdSet::contains(tid, k);
    return LockedStdSet::insert(tid, k, v);
  }
};

// Stores correctly, but `contains` answers the opposite for one key in sixteen.
class LyingContainsSet : public LockedStdSet<SpinLock> {
 public:
  using LockedStdSet::LockedStdSet;
  bool contains(int tid, key_type k) const {
    const bool truth = LockedStdSet::contains(tid, k);
    return (k * 0x9E3779B97F4A7C15ull) >> 60 == 0 ? !truth : truth;
  }
};

// Correct operations, but its own invariant check reports a violation.
class FailsInvariantSet : public LockedStdSet<SpinLock> {
 public:
  using LockedStdSet::LockedStdSet;
  std::string check_invariants() const { return "node 7: left child key 9 > parent key 7"; }
};

// Sound, but without range_query: the command line must refuse --rq / --rq-threads for it.
class NoRangeQuerySet {
 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  explicit NoRangeQuerySet(int threads) : set_(threads) {}
  bool insert(int tid, key_type k, mapped_type v) { return set_.insert(tid, k, v); }
  bool erase(int tid, key_type k) { return set_.erase(tid, k); }
  bool contains(int tid, key_type k) const { return set_.contains(tid, k); }
  template <class Fn>
  void for_each_key(Fn&& fn) const { set_.for_each_key(fn); }

 private:
  LockedStdSet<SpinLock> set_;
};

inline bench::Registry registry_with_broken_sets() {
  bench::Registry r = bench::builtin_registry();
  r.add(bench::set_structure<DropsInsertsSet>("broken_drops_inserts",
                                              "test only: loses every 61st key it inserts", {"immediate"}, {"system"}));
  r.add(bench::set_structure<LyingContainsSet>("broken_lying_contains",
                                               "test only: contains lies for 1 key in 16", {"immediate"}, {"system"}));
  r.add(bench::set_structure<FailsInvariantSet>("broken_invariant",
                                                "test only: check_invariants reports a violation", {"immediate"}, {"system"}));
  r.add(bench::set_structure<NoRangeQuerySet>("test_no_range_query",
                                              "test only: a sound set without range queries", {"immediate"}, {"system"}));
  return r;
}

}  // namespace cdsb::testing
