// `ebr`: epoch-based reclamation in the style of DEBRA (Brown, "Reclaiming Memory for
// Lock-Free Data Structures: There has to be a Better Way", PODC 2015).
//
// A global epoch E. Each thread announces, in one word on its own cache line, the epoch it
// saw when its current operation began, and a quiescent bit set between operations. A node
// retired by a thread that announced epoch r goes into that thread's limbo bag for r.
// The epoch advances from e to e+1 only when every thread is quiescent or has announced e;
// the check is amortised: every `advance_every` operations (32) a thread looks at one other
// thread's announcement, and the thread that has seen all of them current tries one CAS on E.
// No lock anywhere. Why 32: that look is a cache miss on a line its owner writes twice an
// operation; made every 4 operations, it (with the epoch CAS each pass ends in) cost a third
// of the finds of seqlock_probe_map at 2 threads here, and a quarter at 1. The price is
// garbage: an epoch takes about threads x 32 operations of each thread, so a thread's limbo
// holds what it retired in about 3 x threads x 32 operations.
//
// Why a bag of epoch r is safe to free once E >= r + 3: a thread that can still reach a node
// retired in bag r began its operation before the node was unlinked, so it announced an
// epoch <= r + 1 (E <= r + 1 while the retiring thread, announced r, was still inside the
// operation that unlinked it). E cannot pass r + 2 while that reader stays in its operation.
// Each thread keeps three bags (epochs mod 3) and frees those at least three epochs old
// whenever it sees E change, so a thread frees only its own garbage, without atomics.
//
// A thread stalled inside an operation stops the epoch: garbage is then unbounded until it
// resumes (HP and IBR bound it). Progress: enter is lock-free (its announce loop retries
// only when the epoch moves), leave, protect and retire are wait-free.
//
// Memory orders: see each access. The announce store and the epoch re-read are seq_cst so
// that E cannot run more than one epoch ahead of an announcement while its thread is inside
// (a store-load order between the announcement and the re-read, against the advancer's
// check and CAS). Safety then follows from happens-before alone: an unlink is sequenced
// before the retiring thread's leave (release), which the check of the advance two epochs
// later reads (acquire), which precedes that CAS (release), which a reader that announced
// that epoch read (acquire) before its first link load.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb::reclaim {

template <AllocationPolicy Alloc = SystemAllocator>
class EpochBased : public ReclaimerBase<EpochBased<Alloc>, Alloc> {
  using Base = ReclaimerBase<EpochBased<Alloc>, Alloc>;
  using Retired = typename Base::Retired;
  friend Base;

 public:
  static constexpr const char* name = "ebr";
  static constexpr bool guards_whole_operation = true;  // nothing retired during a guard is freed before it ends
  static constexpr std::uint32_t advance_every = 32;    // operations between two looks at another thread (top)
  struct NodeBase {};

  explicit EpochBased(int max_threads, int /*slots*/ = 0, ReclaimOptions options = {})
      : Base(max_threads, {{"epochs_advanced", StatKind::counter}}),
        advance_every_(options.eager ? 1 : advance_every),
        announce_(max_threads),
        local_(max_threads) {
    for (auto& a : announce_) a->store(quiescent_bit, std::memory_order_relaxed);  // epoch 0, quiescent
    for (auto& l : local_) l->countdown = advance_every_;
  }

  ~EpochBased() {
    for (int tid = 0; tid < this->max_threads_; ++tid)
      for (Bag& bag : local_[tid]->bags) this->free_all(tid, bag.nodes);
  }

  // Begins an operation: announce the current epoch (non-quiescent), free what became safe.
  Guard<EpochBased> enter(int tid) {
    Local& me = *local_[tid];
    // acquire: pairs with the acq_rel CAS that advanced E, so the checks it was based on
    // (other threads' announcements) happen-before what we free below.
    std::uint64_t e = epoch_.load(std::memory_order_acquire);
    CDSB_INTERLEAVE("ebr.enter.loaded");  // E read, not yet announced: E may move on meanwhile
    for (;;) {
      // (1) seq_cst: with (2), against (3) and the advancing CAS, keeps E within one epoch of
      // this announcement while we are inside.
      announce_[tid]->store(e << 1, std::memory_order_seq_cst);
      // (2) seq_cst re-read: if E moved while we announced, announce again, so that E never
      // runs more than one epoch ahead of our announcement while we are inside.
      const std::uint64_t again = epoch_.load(std::memory_order_seq_cst);
      if (again == e || CDSB_MUTANT("ebr.skip_announce_recheck")) break;
      e = again;
    }
    if (e != me.epoch) {
      me.epoch = e;
      for (Bag& bag : me.bags)
        if (!bag.nodes.empty() && bag.epoch + (CDSB_MUTANT("ebr.free_one_epoch_early") ? 2 : 3) <= e)
          this->free_all(tid, bag.nodes);
    }
    if (--me.countdown == 0) {
      me.countdown = advance_every_;
      try_advance(tid, e);
    }
    return {*this, tid};
  }

  // (4) release: everything this operation read happens-before a thread that sees us
  // quiescent in (3) and advances the epoch.
  void leave(int tid) noexcept {
    announce_[tid]->store((local_[tid]->epoch << 1) | quiescent_bit, std::memory_order_release);
  }

  // acquire: pairs with the release that published the node. Epochs need no per-pointer work.
  template <class P>
  P protect(int, int, const std::atomic<P>& src) const noexcept {
    return src.load(std::memory_order_acquire);
  }

  // Inside a guard only: the node joins the bag of the epoch this thread announced.
  template <class T>
  void retire(int tid, T* node) {
    Local& me = *local_[tid];
    Bag& bag = me.bags[me.epoch % 3];
    if (bag.nodes.empty()) bag.epoch = me.epoch;
    bag.nodes.push_back(this->retired(tid, node));
    this->note_limbo(tid, me.bags[0].nodes.size() + me.bags[1].nodes.size() + me.bags[2].nodes.size());
  }

  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_relaxed); }

  // Thread tid's own limbo (retired, not yet freed): tid only, its bags being private to it.
  std::size_t limbo_size(int tid) const noexcept {
    std::size_t n = 0;
    for (const Bag& b : local_[tid]->bags) n += b.nodes.size();
    return n;
  }

 private:
  static constexpr std::uint64_t quiescent_bit = 1;

  struct Bag {
    std::uint64_t epoch = 0;
    std::vector<Retired> nodes;
  };
  struct Local {  // thread-private
    std::uint64_t epoch = 0;        // the epoch this thread last announced
    std::uint64_t scan_epoch = 0;   // the epoch its round of checks is for
    int scan_next = 0;              // next thread to check
    std::uint32_t countdown = 1;
    std::array<Bag, 3> bags;
  };

  // Checks one thread; after all of them were seen current (or quiescent), tries to advance.
  void try_advance(int tid, std::uint64_t e) {
    Local& me = *local_[tid];
    if (me.scan_epoch != e) {
      me.scan_epoch = e;
      me.scan_next = 0;
    }
    // (3) seq_cst: pairs with (1) (see the header) and, as an acquire, with (4).
    const std::uint64_t a = announce_[me.scan_next]->load(std::memory_order_seq_cst);
    if (!(a & quiescent_bit) && (a >> 1) != e) return;  // that thread is behind: not yet
    if (++me.scan_next < this->max_threads_) return;
    me.scan_next = 0;
    std::uint64_t expected = e;
    // release: the checks above (acquire loads of every announcement) happen-before any
    // thread that reads the new epoch with acquire (enter), which then frees old bags.
    if (epoch_.compare_exchange_strong(expected, e + 1, std::memory_order_release, std::memory_order_relaxed))
      this->stats_.add(tid, stat_scheme_first);
  }

  std::size_t in_limbo() const {
    std::size_t n = 0;
    for (const auto& l : local_)
      for (const Bag& b : l->bags) n += b.nodes.size();
    return n;
  }

  const std::uint32_t advance_every_;
  alignas(false_sharing_range) std::atomic<std::uint64_t> epoch_{0};
  std::vector<Padded<std::atomic<std::uint64_t>>> announce_;  // read by every thread
  std::vector<Padded<Local>> local_;                          // private to its thread
};

static_assert(Reclaimer<EpochBased<>>);

}  // namespace cdsb::reclaim
