// The deliberately broken sets of broken_sets.hpp and their registry, compiled once for the
// unit tests and the two test programs (their entries instantiate whole trials).
#include "support/broken_sets.hpp"

#include <atomic>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "bench/registry/register.hpp"
#include "cdsbench/set/hash/dedup_chaining_map.hpp"
#include "cdsbench/queue/wait_free_queue.hpp"
#include "cdsbench/set/locked_std_set.hpp"
#include "support/broken_validation_sets.hpp"  // LyingContainsSet, FailsInvariantSet

namespace cdsb::testing {
namespace {

// Claims success for inserts of every 61st key but never stores them.
class DropsInsertsSet : public LockedStdSet<SpinLock> {
 public:
  using LockedStdSet::LockedStdSet;
  bool insert(int tid, key_type k, mapped_type v) {
    if (k % 61 == 0) return !LockedStdSet::contains(tid, k);
    return LockedStdSet::insert(tid, k, v);
  }
};

// Updates are correct, but one `contains` in four answers from a copy of the keys that is
// refreshed only every 8th update: stale reads that no quiescent check needs to see, and
// that the linearizability checker must catch.
class StaleContainsSet : public LockedStdSet<SpinLock> {
 public:
  using LockedStdSet::LockedStdSet;
  bool insert(int tid, key_type k, mapped_type v) { return refresh_after(tid, LockedStdSet::insert(tid, k, v)); }
  bool erase(int tid, key_type k) { return refresh_after(tid, LockedStdSet::erase(tid, k)); }
  bool contains(int tid, key_type k) const {
    if (calls_.fetch_add(1, std::memory_order_relaxed) % 4 == 3) {
      std::scoped_lock guard(copy_lock_);
      return copy_.count(k) == 1;
    }
    return LockedStdSet::contains(tid, k);
  }

 private:
  bool refresh_after(int tid, bool changed) {
    if (changed && updates_.fetch_add(1, std::memory_order_relaxed) % 8 == 7) {
      std::vector<key_type> keys;  // a locked snapshot of every key
      range_query(tid, 1, std::numeric_limits<key_type>::max(), keys);
      std::scoped_lock guard(copy_lock_);
      copy_ = std::set<key_type>(keys.begin(), keys.end());
    }
    return changed;
  }
  mutable std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> updates_{0};
  mutable SpinLock copy_lock_;
  std::set<key_type> copy_;
};

// The map version: updates are correct (and serialised), but one find in four answers from a
// copy of the entries refreshed only every 8th update. Every value it returns was written for
// its key, so the workload's value checks pass; only the linearizability checker sees the
// stale reads (its map model).
class StaleFindMap : public DedupChainingMap<> {
  using Base = DedupChainingMap<>;

 public:
  using Base::Base;
  bool insert(int tid, key_type k, mapped_type v) {
    return update([&] { return Base::insert(tid, k, v); });
  }
  bool erase(int tid, key_type k) {
    return update([&] { return Base::erase(tid, k); });
  }
  bool assign(int tid, key_type k, mapped_type v) {
    return update([&] { return Base::assign(tid, k, v); });
  }
  std::pair<mapped_type, bool> find_or_insert(int tid, key_type k, mapped_type v) {
    std::pair<mapped_type, bool> r;
    update([&] { return (r = Base::find_or_insert(tid, k, v)).second; });
    return r;
  }
  bool contains(int tid, key_type k) { return find(tid, k).has_value(); }
  std::optional<mapped_type> find(int tid, key_type k) {
    if (calls_.fetch_add(1, std::memory_order_relaxed) % 4 == 3) {
      std::scoped_lock guard(copy_lock_);
      const auto it = copy_.find(k);
      return it == copy_.end() ? std::nullopt : std::optional(it->second);
    }
    return Base::find(tid, k);
  }

 private:
  // Runs an update (returning whether it changed the map) alone, and refreshes the copy
  // after every 8th change.
  template <class Update>
  bool update(Update run) {
    std::scoped_lock guard(updates_);
    const bool changed = run();
    if (changed && update_count_++ % 8 == 7) {
      std::map<key_type, mapped_type> entries;  // no update runs: updates_ is held
      for_each_entry([&](key_type k, mapped_type v) { entries.emplace(k, v); });
      std::scoped_lock copy_guard(copy_lock_);
      copy_ = std::move(entries);
    }
    return changed;
  }
  std::atomic<std::uint64_t> calls_{0};
  std::uint64_t update_count_ = 0;  // under updates_
  SpinLock updates_, copy_lock_;
  std::map<key_type, mapped_type> copy_;
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

template <class S>
bench::StructureEntry broken(std::string name, std::string description) {
  bench::StructureEntry e = bench::set_structure<S>(
      {.name = std::move(name),
       .kind = ConcurrentMap<S> ? bench::StructureKind::unordered_map : bench::StructureKind::ordered_set,
       .description = "test only: " + description});
  e.deliberately_broken = true;
  return e;
}

// A queue behind one mutex, each operation's fault chosen by Fault: the broken queues below.
enum class QueueFault { loses_items, duplicates_items, reorders_items, stale_empty };

template <QueueFault Fault>
class BrokenQueue {
 public:
  explicit BrokenQueue(int) {}
  void enqueue(int, std::uint64_t v) {
    std::scoped_lock guard(lock_);
    ++enqueues_;
    if (Fault == QueueFault::loses_items && enqueues_ % 97 == 0) return;       // claims it, drops it
    if (Fault == QueueFault::reorders_items && enqueues_ % 7 == 0) {            // jumps the queue
      items_.push_front(v);
      return;
    }
    items_.push_back(v);
  }
  std::optional<std::uint64_t> dequeue(int) {
    std::scoped_lock guard(lock_);
    ++dequeues_;
    if (Fault == QueueFault::stale_empty && dequeues_ % 8 == 0) return std::nullopt;  // empty, though it is not
    if (items_.empty()) return std::nullopt;
    const std::uint64_t v = items_.front();
    if (!(Fault == QueueFault::duplicates_items && dequeues_ % 89 == 0)) items_.pop_front();  // hands it out twice
    return v;
  }
  template <class Fn>
  void for_each_item(Fn&& fn) const {
    std::scoped_lock guard(lock_);
    for (const std::uint64_t v : items_) fn(v);
  }

 private:
  mutable std::mutex lock_;
  std::deque<std::uint64_t> items_;
  std::uint64_t enqueues_ = 0, dequeues_ = 0;
};

template <class Q>
bench::StructureEntry broken_queue(std::string name, std::string description) {
  bench::StructureEntry e =
      bench::queue_structure<Q>({.name = std::move(name), .kind = bench::StructureKind::queue, .description = "test only: " + description});
  e.deliberately_broken = true;
  return e;
}

// A stack behind one mutex whose every 5th pop takes the bottom item instead of the top: no
// item lost or doubled, so only the order is wrong (lincheck's stack model, the differential).
class BottomPoppingStack {
 public:
  explicit BottomPoppingStack(int) {}
  void push(int, std::uint64_t v) {
    std::scoped_lock guard(lock_);
    items_.push_back(v);
  }
  std::optional<std::uint64_t> pop(int) {
    std::scoped_lock guard(lock_);
    if (items_.empty()) return std::nullopt;
    const bool bottom = ++pops_ % 5 == 0;
    const std::uint64_t v = bottom ? items_.front() : items_.back();
    bottom ? items_.pop_front() : items_.pop_back();
    return v;
  }
  template <class Fn>
  void for_each_item(Fn&& fn) const {
    std::scoped_lock guard(lock_);
    for (const std::uint64_t v : items_) fn(v);
  }

 private:
  mutable std::mutex lock_;
  std::deque<std::uint64_t> items_;
  std::uint64_t pops_ = 0;
};

}  // namespace

bench::Registry registry_with_broken_sets() {
  bench::Registry r = bench::builtin_registry();
  r.add(broken<DropsInsertsSet>("broken_drops_inserts", "loses every 61st key it inserts"));
  r.add(broken<LyingContainsSet>("broken_lying_contains", "contains lies for 1 key in 16"));
  r.add(broken<FailsInvariantSet>("broken_invariant", "check_invariants reports a violation"));
  r.add(broken<StaleContainsSet>("broken_stale_contains", "1 contains in 4 reads a stale copy"));
  r.add(broken<StaleFindMap>("broken_stale_find_map", "1 find in 4 reads a stale copy of the entries"));
  r.add(broken_queue<BrokenQueue<QueueFault::loses_items>>("broken_queue_loses", "drops every 97th item it enqueues"));
  r.add(broken_queue<BrokenQueue<QueueFault::duplicates_items>>("broken_queue_duplicates",
                                                                 "every 89th dequeue leaves its item in the queue"));
  r.add(broken_queue<BrokenQueue<QueueFault::reorders_items>>("broken_queue_reorders",
                                                               "every 7th enqueue puts its item at the front"));
  r.add(broken_queue<BrokenQueue<QueueFault::stale_empty>>("broken_queue_stale_empty",
                                                            "every 8th dequeue answers empty whatever the queue holds"));
  bench::StructureEntry stack = bench::queue_structure<bench::StackAsQueue<BottomPoppingStack>>(
      {.name = "broken_stack_pops_bottom", .kind = bench::StructureKind::stack,
       .description = "test only: every 5th pop takes the bottom item instead of the top"});
  stack.deliberately_broken = true;
  r.add(std::move(stack));
  // Sound: the wait-free queue with segments of 2 cells and one fast-path try, so that its slow
  // paths, their helping and its segment reclamation run in every history and trial.
  r.add(bench::queue_structure<WaitFreeQueue<1, 1>>(
      {.name = "wait_free_queue_slow_paths", .kind = bench::StructureKind::queue,
       .description = "test only: wait_free_queue with 2-cell segments and one fast try: its slow paths all the time"}));
  r.add(bench::set_structure<NoRangeQuerySet>({.name = "test_no_range_query", .kind = bench::StructureKind::ordered_set,
                                               .description = "test only: a sound set without range queries"}));
  return r;
}

}  // namespace cdsb::testing
