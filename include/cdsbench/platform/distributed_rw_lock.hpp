// Distributed readers-writer lock (Calciu, Sen, Balakrishnan & Aguilera, "Black-box
// Concurrent Data Structures for NUMA Architectures", ASPLOS 2017, §5.5).
//
// Each reader owns a flag on its own cache line, so readers never write a shared line: a
// read-mostly workload scales because lock_shared/unlock_shared touch only the reader's
// line and read the writer's (which stays shared in every cache while no writer comes).
// A writer first takes the writer flag, then waits until every reader flag is clear.
// A reader sets its flag, then checks the writer flag; if a writer is there it clears its
// flag and waits for the writer to leave. Writers are preferred: a waiting writer keeps new
// readers out. Used by Node Replication (one per replica), and by the RWL and FC+
// black-box baselines (one for the structure), so every method pays the same lock.
//
// Memory ordering. The reader's "set my flag, then read the writer flag" and the writer's
// "set the writer flag, then read every reader flag" are Dekker's pattern: a store followed
// by a load of another location, which only a total order can make safe. Both sides use
// seq_cst operations (not fences, which ThreadSanitizer does not understand): in the single
// total order S, either the reader's load of writer_ follows the writer's exchange (the
// reader sees the writer and backs off) or the writer's load of the reader's flag follows
// the reader's store (the writer waits for it). Both stay out of each other's way. The
// seq_cst loads also acquire, so each critical section happens-before the next conflicting
// one (pairings noted at each access).
//
// Progress: lock and lock_shared are blocking; writers are preferred, so a stream of writers
// can starve readers. Size: one false-sharing range per reader plus one for the writer.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/pause.hpp"

namespace cdsb {

class DistributedRwLock {
 public:
  // `readers`: the number of reader slots; a reader passes its own slot in [0, readers).
  explicit DistributedRwLock(int readers)
      : readers_(readers), flags_(std::make_unique<Padded<std::atomic<std::uint32_t>>[]>(readers)) {
    assert(readers >= 1);
  }

  int readers() const noexcept { return readers_; }

  // Blocking. Exclusive with every other writer and every reader.
  void lock() noexcept {
    Backoff backoff(64);
    // (1) seq_cst exchange: the store half of the writer's Dekker pair with (3); acquire
    // half pairs with (2) of the previous writer, so its critical section happens-before ours.
    while (writer_->exchange(1, std::memory_order_seq_cst) != 0) {
      while (writer_->load(std::memory_order_relaxed) != 0) backoff();
    }
    for (int r = 0; r < readers_; ++r) {
      backoff.reset();
      // (5) seq_cst load: the load half of the Dekker pair with (3); reading 0 written by
      // (4) acquires the reader's critical section.
      while (flags_[r]->load(std::memory_order_seq_cst) != 0) backoff();
    }
  }

  // Wait-free (bounded by the reader count): true when the lock (exclusive) is now held;
  // false, having changed nothing, when a writer holds it or a reader is inside.
  bool try_lock() noexcept {
    if (writer_->load(std::memory_order_relaxed) != 0) return false;
    if (writer_->exchange(1, std::memory_order_seq_cst) != 0) return false;  // (1)
    for (int r = 0; r < readers_; ++r) {
      if (flags_[r]->load(std::memory_order_seq_cst) != 0) {  // (5)
        // Back out. Release, as (2): a reader that saw our flag and waited loses nothing.
        writer_->store(0, std::memory_order_release);
        return false;
      }
    }
    return true;
  }

  // Wait-free.
  void unlock() noexcept {
    // (2) release: publishes the writer's critical section to the readers' (3)/(6) and the
    // next writer's (1).
    writer_->store(0, std::memory_order_release);
  }

  // Blocking; shared with other readers, exclusive with writers.
  void lock_shared(int slot) noexcept {
    assert(slot >= 0 && slot < readers_);
    std::atomic<std::uint32_t>& flag = *flags_[slot];
    Backoff backoff(64);
    for (;;) {
      // (3) seq_cst store: the store half of the reader's Dekker pair with (5).
      flag.store(1, std::memory_order_seq_cst);
      // (6) seq_cst load: the load half of the pair with (1); reading 0 written by (2)
      // acquires the previous writer's critical section.
      if (writer_->load(std::memory_order_seq_cst) == 0) return;
      // A writer is in or coming: step aside so it can proceed (writer preference).
      // (4') release, like (4): the writer's (5) may read this 0 rather than the one of our
      // previous unlock_shared, and a release sequence does not run through plain stores, so
      // this store must itself carry our previous read section to the writer.
      flag.store(0, std::memory_order_release);
      while (writer_->load(std::memory_order_relaxed) != 0) backoff();
    }
  }

  // Wait-free: true when the lock (shared) is now held through slot; false, having cleared the
  // slot's flag again, when a writer holds the lock or waits for it.
  bool try_lock_shared(int slot) noexcept {
    assert(slot >= 0 && slot < readers_);
    std::atomic<std::uint32_t>& flag = *flags_[slot];
    flag.store(1, std::memory_order_seq_cst);                          // (3)
    if (writer_->load(std::memory_order_seq_cst) == 0) return true;    // (6)
    flag.store(0, std::memory_order_release);                          // (4')
    return false;
  }

  // Wait-free.
  void unlock_shared(int slot) noexcept {
    // (4) release: the reader's loads happen-before the writer that reads 0 at (5).
    flags_[slot]->store(0, std::memory_order_release);
  }

  std::size_t memory_bytes() const noexcept {
    return sizeof(*this) + static_cast<std::size_t>(readers_) * sizeof(Padded<std::atomic<std::uint32_t>>);
  }

 private:
  int readers_;
  std::unique_ptr<Padded<std::atomic<std::uint32_t>>[]> flags_;
  Padded<std::atomic<std::uint32_t>> writer_;
};

}  // namespace cdsb
