// One deliberately broken set per check of the set workload's validation (set_workload.hpp,
// `finish`): each is caught by exactly that check and passes the others, so removing any one
// check fails a test (test_set_validation.cpp). Light on purpose: no registry (broken_sets.hpp
// registers the first two for the command line).
//
//   check        set                   what is wrong
//   contains     LyingContainsSet      contains answers the opposite for 1 key in 16
//   invariants   FailsInvariantSet     its own invariant check reports a violation
//   key sum      MisplacesKeysSet      every 61st key is stored as its predecessor
//   size         SplitsKeysSet         every 61st key is stored as two keys summing to it
//
// and one broken map per check of a map's values (value_for):
//
//   values read  MixesUpValuesMap      find returns a value not written for its key, 1 key in 16
//   values held  CorruptsValuesMap     every 61st key holds a corrupted value, which find repairs
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "cdsbench/platform/spin_lock.hpp"
#include "cdsbench/set/hash/dedup_chaining_map.hpp"
#include "cdsbench/set/locked_std_set.hpp"

namespace cdsb::testing {

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

// An insert of a multiple of 61, absent with its predecessor absent too, stores the predecessor
// instead (a key written wrong): every successful insert still adds one key and every erase
// removes one, so the size holds, and `contains` answers for what is stored; but the contents
// sum to one more than expected per misplaced key (k - (k - 1)), never zero in total.
class MisplacesKeysSet : public LockedStdSet<SpinLock> {
 public:
  using LockedStdSet::LockedStdSet;
  bool insert(int tid, key_type k, mapped_type v) {
    std::scoped_lock guard(updates_);  // the check and the store as one update
    if (k % 61 == 0 && !LockedStdSet::contains(tid, k) && !LockedStdSet::contains(tid, k - 1))
      return LockedStdSet::insert(tid, k - 1, v);
    return LockedStdSet::insert(tid, k, v);
  }
  bool erase(int tid, key_type k) {
    std::scoped_lock guard(updates_);
    return LockedStdSet::erase(tid, k);
  }

 private:
  SpinLock updates_;
};

// An insert of a multiple of 61, absent, stores two absent keys that sum to it (k/2 - 1 and
// k - k/2 + 1, both in [1, k)) instead: the key sum holds and `contains` answers for what is
// stored, but each such insert adds one key more than it counts, so only the size is wrong.
class SplitsKeysSet : public LockedStdSet<SpinLock> {
 public:
  using LockedStdSet::LockedStdSet;
  bool insert(int tid, key_type k, mapped_type v) {
    std::scoped_lock guard(updates_);
    const key_type low = k / 2 - 1, high = k - low;
    if (k % 61 == 0 && !LockedStdSet::contains(tid, k) && !LockedStdSet::contains(tid, low) &&
        !LockedStdSet::contains(tid, high)) {
      LockedStdSet::insert(tid, low, v);
      return LockedStdSet::insert(tid, high, v);
    }
    return LockedStdSet::insert(tid, k, v);
  }
  bool erase(int tid, key_type k) {
    std::scoped_lock guard(updates_);
    return LockedStdSet::erase(tid, k);
  }

 private:
  SpinLock updates_;
};

// Stores correctly, but find returns a value that belongs to no key (its high half changed)
// for one key in sixteen; the stored values are right.
class MixesUpValuesMap : public DedupChainingMap<> {
 public:
  using DedupChainingMap::DedupChainingMap;
  std::optional<mapped_type> find(int tid, key_type k) {
    std::optional<mapped_type> v = DedupChainingMap::find(tid, k);
    if (v && (k * 0x9E3779B97F4A7C15ull) >> 60 == 0) *v ^= std::uint64_t{1} << 40;
    return v;
  }
};

// Every 61st key holds its value corrupted (high half changed), but find and find_or_insert
// undo the corruption on the way out: only the quiescent walk of the entries sees it.
class CorruptsValuesMap : public DedupChainingMap<> {
 public:
  using DedupChainingMap::DedupChainingMap;
  static constexpr mapped_type flip = std::uint64_t{1} << 40;
  static mapped_type stored(key_type k, mapped_type v) { return k % 61 == 0 ? v ^ flip : v; }
  bool insert(int tid, key_type k, mapped_type v) { return DedupChainingMap::insert(tid, k, stored(k, v)); }
  bool assign(int tid, key_type k, mapped_type v) { return DedupChainingMap::assign(tid, k, stored(k, v)); }
  std::optional<mapped_type> find(int tid, key_type k) {
    std::optional<mapped_type> v = DedupChainingMap::find(tid, k);
    if (v) *v = stored(k, *v);
    return v;
  }
  std::pair<mapped_type, bool> find_or_insert(int tid, key_type k, mapped_type v) {
    const auto [got, inserted] = DedupChainingMap::find_or_insert(tid, k, stored(k, v));
    return {stored(k, got), inserted};
  }
};

}  // namespace cdsb::testing
