// A small user-space RCU (read-copy-update) for the structures that need grace periods as a
// synchronisation tool, not for reclamation: Citrus (set/bst/citrus.hpp) waits for one before
// it removes a node whose key it has copied higher up the tree. Memory is still reclaimed by
// the structure's reclaimer (ebr.hpp, none.hpp); the two are independent on purpose.
//
// Why our own and not liburcu: no new dependency; the project's dense thread ids make the
// registration liburcu needs (urcu_register_thread, thread-local reader state) unnecessary;
// the read side is two stores and one fence on the reader's own cache line, as in liburcu's
// "mb" flavour; and synchronize runs beside other synchronize calls (liburcu serialises them
// with a global mutex), which matters when several threads delete at once.
//
// Why not the EBR guard itself: an EBR guard covers a whole operation, lock waits included.
// A Citrus delete waits for a grace period while holding node locks; if the grace period
// waited for EBR guards, it would wait for a thread spinning on one of those locks inside its
// guard: deadlock. RCU read-side sections here cover searches only, which never wait for
// anything, so synchronize always finishes.
//
// Design (per-thread counters, the "per-thread read-side counters" scheme): each thread owns
// one 64-bit word, on its own false-sharing range, that only it writes. It is even outside a
// read-side section and odd inside; entering and leaving each add one, so a value names one
// section of one thread for ever (2^63 sections before it wraps). A grace period:
//   start:   a seq_cst fence, then a snapshot of every reader whose word is odd (inside);
//   elapsed: when each snapshotted word has changed (that section ended).
// A reader that was not snapshotted, or whose word had already moved on, began its section
// after the fence, so it sees every write the updater made before starting the grace period.
// No global counter is written by anyone: readers touch only their own line.
//
// Memory orders (numbers as in the code):
//  (1) entry store, release: an updater's (4) that reads it synchronises with it, so the end
//      of this thread's previous section (its (3)) happens-before the updater's next writes
//      (since C++20 a later plain store of the same thread no longer carries (3)'s release).
//  (2) seq_cst fence after the entry store, paired with the updater's fence (F) before its
//      snapshot: store-buffering, ruled out by the fences' total order. Either the updater's
//      load (4) sees the entry (1) and waits for the section, or the reader's loads after (2)
//      see every write the updater made before (F) (the unlinking or linking store).
//      Acquire/release alone cannot give this store->load order.
//  (3) exit store, release: the section's reads happen-before an updater whose (4) reads it,
//      so they cannot see the writes it makes after the grace period.
//  (4) the updater's loads of the words, acquire: pair with (1) and (3).
// Under ThreadSanitizer the fences are real (platform/fence.hpp) but not understood; TSan
// needs no happens-before from them: data flow between readers and updaters goes through
// acquire loads of release stores (the structure's links, (1), (3), (4)).
//
// Progress: read_lock and read_unlock are wait-free (two stores and a fence). synchronize is
// blocking: it waits for every read-side section in progress when it starts, so a reader
// stalled inside one stalls it (never other readers). It never waits for a section that
// started after its fence, so it finishes whenever readers keep their sections short.
// No nesting: a thread is in at most one read-side section, and never calls synchronize
// inside one (it would wait for itself).
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/fence.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/pause.hpp"

namespace cdsb::reclaim {

class Rcu {
 public:
  explicit Rcu(int max_threads) : max_threads_(max_threads), readers_(max_threads), waiting_(max_threads) {
    for (auto& w : waiting_) w->reserve(static_cast<std::size_t>(max_threads));  // no allocation in synchronize
  }

  Rcu(const Rcu&) = delete;
  Rcu& operator=(const Rcu&) = delete;

  // Enters a read-side section. Wait-free.
  void read_lock(int tid) noexcept {
    auto& word = *readers_[tid];
    const std::uint64_t c = word.load(std::memory_order_relaxed);  // only this thread writes it
    assert(!(c & 1) && "RCU read-side sections do not nest");
    word.store(c + 1, std::memory_order_release);  // (1)
    seq_cst_fence();                               // (2)
  }

  // Leaves it. Wait-free.
  void read_unlock(int tid) noexcept {
    auto& word = *readers_[tid];
    const std::uint64_t c = word.load(std::memory_order_relaxed);
    assert((c & 1) && "read_unlock outside a read-side section");
    word.store(c + 1, std::memory_order_release);  // (3)
  }

  // A read-side section for the scope.
  class [[nodiscard]] ReadSection {
   public:
    ReadSection(Rcu& rcu, int tid) noexcept : rcu_(rcu), tid_(tid) { rcu_.read_lock(tid_); }
    ReadSection(const ReadSection&) = delete;
    ReadSection& operator=(const ReadSection&) = delete;
    ~ReadSection() { rcu_.read_unlock(tid_); }

   private:
    Rcu& rcu_;
    int tid_;
  };
  ReadSection read_section(int tid) noexcept { return {*this, tid}; }

  // Waits until every read-side section in progress when it was called has ended. Blocking
  // (see the top). Not inside a read-side section of tid.
  void synchronize(int tid) {
    start_grace_period(tid);
    CDSB_INTERLEAVE("rcu.synchronize.started");  // readers snapshotted, not yet waited for
    Backoff backoff;  // yields after a while: the readers may need this CPU
    while (!grace_period_elapsed(tid)) {
      CDSB_INTERLEAVE("rcu.synchronize.waiting");  // a reader it waits for is still inside
      backoff();
    }
  }

  // synchronize in two steps (as the Linux kernel's start_poll_synchronize_rcu and
  // poll_state_synchronize_rcu), one grace period per thread at a time:
  // start_grace_period records the sections in progress (wait-free, O(threads)); ...
  void start_grace_period(int tid) {
    assert(!(readers_[tid]->load(std::memory_order_relaxed) & 1) && "synchronize inside a read-side section");
    std::vector<Waiting>& waiting = *waiting_[tid];
    waiting.clear();
    seq_cst_fence();  // (F): after the updater's writes, before the snapshot; pairs with (2)
    for (int t = 0; t < max_threads_; ++t) {
      const std::uint64_t c = readers_[t]->load(std::memory_order_acquire);  // (4)
      if (c & 1) waiting.push_back({t, c});
    }
  }

  // ... grace_period_elapsed says whether they have all ended (wait-free, O(threads)).
  bool grace_period_elapsed(int tid) {
    std::vector<Waiting>& waiting = *waiting_[tid];
    std::erase_if(waiting, [&](const Waiting& w) {
      return readers_[w.tid]->load(std::memory_order_acquire) != w.seen;  // (4)
    });
    return waiting.empty();
  }

  // Quiescent: whether tid is inside a read-side section (tests, invariant checks).
  bool in_read_section(int tid) const noexcept { return readers_[tid]->load(std::memory_order_acquire) & 1; }

 private:
  struct Waiting {
    int tid;
    std::uint64_t seen;  // its word when the grace period started (odd)
  };

  const int max_threads_;
  std::vector<Padded<std::atomic<std::uint64_t>>> readers_;  // written by its thread only
  std::vector<Padded<std::vector<Waiting>>> waiting_;        // private to each updater
};

}  // namespace cdsb::reclaim
