// `ibr`: interval-based reclamation, 2GE-IBR (Wen, Izraelevitz, Cai, Beadle & Scott,
// "Interval-Based Memory Reclamation", PPoPP 2018).
//
// A global epoch E advances every `epoch_every` allocations or retirements of a thread
// (retirements too, so a delete-only phase still moves it). Every node carries its birth
// epoch (set at allocation) in NodeBase; its retire epoch is kept in the limbo entry.
// A thread inside an operation reserves the interval [lower, upper] of epochs: lower is E
// when the operation began, and protect raises upper to E whenever E moved since the
// pointer it read (re-reading the pointer), so every node the thread reached was born by
// `upper` and retired, if at all, not before `lower`. A scan frees each retired node whose
// [birth, retire] interval meets no thread's reservation.
//
// A thread stalled inside an operation reserves a fixed interval: nodes born after it
// are still freed, so garbage stays bounded (unlike EBR), while a read costs one load of E
// and a compare (cheaper than HP's store-load fence per pointer). Like HP, a pointer is safe
// only when the link it was read from is shown to be still reachable after the reservation
// was raised (re-read and validated): a traversal may not follow links out of nodes that may
// have been removed (the lazy list's does, so it does not support IBR).
//
// Progress: protect is lock-free (it retries only when E moved), everything else wait-free.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "cdsbench/platform/fence.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/marked_ptr.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb::reclaim {

template <AllocationPolicy Alloc = SystemAllocator>
class IntervalBased : public ReclaimerBase<IntervalBased<Alloc>, Alloc> {
  using Base = ReclaimerBase<IntervalBased<Alloc>, Alloc>;
  friend Base;

 public:
  static constexpr const char* name = "ibr";
  static constexpr bool guards_whole_operation = false;  // only nodes born within the reserved interval

  // Every node of a structure run with IBR begins with its birth epoch.
  struct NodeBase {
    std::uint64_t birth_epoch = 0;
  };

  IntervalBased(int max_threads, int /*slots*/ = 0, ReclaimOptions options = {})
      : Base(max_threads, {{"epochs_advanced", StatKind::counter}, {"scans", StatKind::counter}}),
        epoch_every_(options.eager ? 1 : 32 * static_cast<std::uint32_t>(max_threads)),
        scan_threshold_(options.eager ? 1 : 64 * static_cast<std::size_t>(max_threads) + 64),
        reservations_(max_threads),
        local_(max_threads) {
    for (auto& l : local_) {
      l->scan_at = scan_threshold_;
      l->until_tick = epoch_every_;
    }
  }

  ~IntervalBased() {
    for (int tid = 0; tid < this->max_threads_; ++tid) {
      Local& me = *local_[tid];
      me.freeing.clear();
      for (const Entry& e : me.retired) me.freeing.push_back(e.retired);
      me.retired.clear();
      this->free_all(tid, me.freeing);
    }
  }

  template <class T, class... Args>
  T* allocate(int tid, Args&&... args) {
    static_assert(std::is_base_of_v<NodeBase, T>, "IBR nodes derive from Reclaimer::NodeBase");
    tick(tid);
    T* node = Base::template allocate<T>(tid, std::forward<Args>(args)...);
    // relaxed: published to readers with the node itself (the structure's release store).
    node->birth_epoch = epoch_.load(std::memory_order_relaxed);
    return node;
  }

  Guard<IntervalBased> enter(int tid) noexcept {
    Reservation& r = *reservations_[tid];
    const std::uint64_t e = epoch_.load(std::memory_order_acquire);
    local_[tid]->upper = e;
    // relaxed: released by the store of lower, which a scan reads first (3) with acquire, so
    // a scan that sees this operation's lower sees this upper or a later one.
    r.upper.store(e, std::memory_order_relaxed);
    r.lower.store(e, std::memory_order_release);
    // (1) The reservation must be visible before any link this operation reads (a store-load
    // order: only a seq_cst fence gives it; the links are read with acquire). Pairs with the
    // fences in retire and scan: a scan either sees the reservation, or this operation's
    // reads see every unlink sequenced before that scan.
    seq_cst_fence();
    return {*this, tid};
  }

  // (4) release: what the operation read happens-before a scan that sees it quiescent.
  void leave(int tid) noexcept { reservations_[tid]->lower.store(quiescent, std::memory_order_release); }

  template <class P>
  P protect(int tid, int, const std::atomic<P>& src) noexcept {
    Local& me = *local_[tid];
    for (;;) {
      // acquire: pairs with the release that published the node (and its birth epoch).
      const P v = src.load(std::memory_order_acquire);
      CDSB_INTERLEAVE("ibr.protect.loaded");  // read, not yet known to be inside the reservation
      // relaxed: the node's birth epoch, read through the acquire above, is <= any value of E
      // read after it (read-read coherence), so E == upper proves birth <= upper.
      const std::uint64_t e = epoch_.load(std::memory_order_relaxed);
      if (e == me.upper) return v;  // read while E <= upper: covered by the reservation
      me.upper = e;
      reservations_[tid]->upper.store(e, std::memory_order_relaxed);
      seq_cst_fence();  // (1) again: the raised upper is visible before the re-read of src
      if (CDSB_MUTANT("ibr.skip_reread")) return v;
    }
  }

  template <class T>
  void retire(int tid, T* node) {
    Local& me = *local_[tid];
    // The node was unlinked before this read of E (the fence pairs with (1): an operation
    // whose reservation this misses reads the unlinked state), so every operation that can
    // still reach the node reserved an interval reaching up to at least this epoch.
    seq_cst_fence();
    const std::uint64_t retire_epoch = epoch_.load(std::memory_order_relaxed);
    me.retired.push_back(Entry{this->retired(tid, node), node->birth_epoch, retire_epoch});
    this->note_limbo(tid, me.retired.size());
    if (me.retired.size() >= me.scan_at) scan(tid);
    tick(tid);
  }

 private:
  static constexpr std::uint64_t quiescent = std::numeric_limits<std::uint64_t>::max();

  struct Entry {
    typename Base::Retired retired;
    std::uint64_t birth, retire;
  };
  struct Reservation {  // written by its thread, read by scanners
    std::atomic<std::uint64_t> lower{quiescent}, upper{0};
  };
  struct Local {  // thread-private
    std::size_t scan_at = 0;
    std::uint64_t upper = 0;
    std::uint32_t until_tick = 1;  // allocations and retirements until this thread advances E
    std::vector<Entry> retired, keep;
    std::vector<typename Base::Retired> freeing;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals;
  };

  // Advances E every epoch_every_ allocations and retirements of this thread.
  void tick(int tid) {
    Local& me = *local_[tid];
    if (--me.until_tick) return;
    me.until_tick = epoch_every_;
    // relaxed: E orders nothing by itself; its readers rely on the fences above.
    epoch_.fetch_add(1, std::memory_order_relaxed);
    this->stats_.add(tid, stat_scheme_first);
  }

  void scan(int tid) {
    Local& me = *local_[tid];
    this->stats_.add(tid, stat_scheme_first + 1);
    // Pairs with (1): a reservation this scan misses belongs to an operation that reads our
    // unlinks (all sequenced before this fence), so it cannot reach the nodes we free.
    seq_cst_fence();
    me.intervals.clear();
    for (int t = 0; t < this->max_threads_; ++t) {
      // (3) lower, then upper. acquire: pairs with enter's release of lower (so upper is at
      // least that operation's) and with (4), which orders a finished operation's reads
      // before our frees.
      const std::uint64_t lower = reservations_[t]->lower.load(std::memory_order_acquire);
      if (lower == quiescent) continue;
      const std::uint64_t upper = reservations_[t]->upper.load(std::memory_order_relaxed);
      me.intervals.emplace_back(lower, upper);
    }
    me.keep.clear();
    me.freeing.clear();
    for (const Entry& e : me.retired) {
      bool reserved = false;
      for (const auto& [lower, upper] : me.intervals)
        if (e.birth <= upper && e.retire >= lower && !(CDSB_MUTANT("ibr.upper_exclusive") && e.birth == upper)) {
          reserved = true;
          break;
        }
      if (reserved) me.keep.push_back(e);
      else me.freeing.push_back(e.retired);
    }
    me.retired.swap(me.keep);
    // Re-armed past what had to be kept, so nodes a reader still holds are not rescanned at
    // every retire: scans stay amortised over scan_threshold_ retirements.
    me.scan_at = me.retired.size() + scan_threshold_;
    this->free_all(tid, me.freeing);
  }

  std::size_t in_limbo() const {
    std::size_t n = 0;
    for (const auto& l : local_) n += l->retired.size();
    return n;
  }

  const std::uint32_t epoch_every_;
  const std::size_t scan_threshold_;
  alignas(false_sharing_range) std::atomic<std::uint64_t> epoch_{1};
  std::vector<Padded<Reservation>> reservations_;
  std::vector<Padded<Local>> local_;
};

static_assert(Reclaimer<IntervalBased<>>);

}  // namespace cdsb::reclaim
