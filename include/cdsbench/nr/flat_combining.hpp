// FC and FC+: flat combining (Hendler, Incze, Shavit & Tzafrir, "Flat Combining and the
// Synchronization-Parallelism Tradeoff", SPAA 2010) over a sequential structure, the
// black-box baselines of Calciu et al. (ASPLOS 2017).
//
// FC: a thread publishes its operation in its own slot (nr/detail/publication_slots.hpp)
// and spins until it is answered or it gets the combiner lock (try_lock: nobody blocks on
// it); the combiner runs every pending operation of every thread on the one structure and
// answers each slot. One thread at a time touches the structure, and the lock's cache line
// and the structure stay in the combiner's cache.
//
// FC+ (ReadersBypass = true): read-only operations do not combine; they take the shared
// side of a readers-writer lock (the distributed one NR and RWL use) and run on the
// structure directly, in parallel. The combiner takes the exclusive side while it runs a
// batch of updates.
//
// Every operation: linearizable (an update at its execution by the combiner, inside the
// combiner's critical section; an FC+ read inside its shared critical section), blocking.
#pragma once

#include <atomic>
#include <string>
#include <utility>

#include "cdsbench/nr/detail/publication_slots.hpp"
#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/platform/distributed_rw_lock.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/spin_lock.hpp"

namespace cdsb {

template <SequentialStructure D, bool ReadersBypass = false>
class FlatCombining {
 public:
  using structure_type = D;
  using Op = typename D::Op;
  using Result = typename D::Result;

  explicit FlatCombining(int threads, D structure = D())
      : slots_(threads), rw_(ReadersBypass ? threads : 1), structure_(std::move(structure)) {}

  // Linearizable; blocking; reclamation: immediate (D frees inside the combiner's or the
  // writer's critical section).
  Result execute(int tid, const Op& op) {
    if constexpr (ReadersBypass) {
      if (D::is_read_only(op)) {
        // The shared side's acquire pairs with the combiner's release of the exclusive side
        // (distributed_rw_lock.hpp): every batch run before it is visible.
        rw_.lock_shared(tid);
        Result result = structure_.execute(op);
        rw_.unlock_shared(tid);
        dispose_op<D>(op);
        return result;
      }
    }
    const std::uint64_t n = slots_.post(tid, op);
    Backoff backoff(64);
    while (!slots_.answered(tid, n)) {
      if (combiner_lock_.try_lock()) {
        combine();  // our request was published before we took the lock: it is served now
        combiner_lock_.unlock();
      } else {
        backoff();
      }
    }
    dispose_op<D>(op);  // answered: the combiner has executed it (our slot's copy) and is done with it
    return slots_.result(tid);
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  const D& structure() const noexcept { return structure_; }
  std::string check_invariants() const { return structure_.check_invariants(); }
  std::size_t memory_bytes() const {
    return sizeof(*this) - sizeof(D) + slots_.memory_bytes() + rw_.memory_bytes() + structure_.memory_bytes();
  }
  // May be read while operations run (relaxed: a moment's view).
  std::uint64_t combines() const noexcept { return combines_.load(std::memory_order_relaxed); }
  std::uint64_t combined_ops() const noexcept { return combined_ops_.load(std::memory_order_relaxed); }

 private:
  // Holding combiner_lock_: its acquire/release orders successive combiners' accesses to
  // the structure and to the slots' combiner-side fields.
  void combine() {
    if constexpr (ReadersBypass) rw_.lock();
    const int served = slots_.for_each_pending([&](int slot, const Op& op, std::uint64_t n) {
      // The answer goes out while the exclusive side is still held (FC+): a thread that
      // then reads waits for our unlock, which publishes this update to it.
      slots_.respond(slot, n, structure_.execute(op));
    });
    if constexpr (ReadersBypass) rw_.unlock();
    // Written under the lock only, so a load and a store (no read-modify-write).
    combines_.store(combines_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    combined_ops_.store(combined_ops_.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(served),
                        std::memory_order_relaxed);
  }

  detail::PublicationSlots<Op, Result> slots_;
  alignas(false_sharing_range) SpinLock combiner_lock_;
  // Own ranges: FC+ readers load rw_'s header on every read, and every applied op writes the
  // structure's header; neither should share the line the combiner lock bounces on.
  alignas(false_sharing_range) DistributedRwLock rw_;
  alignas(false_sharing_range) D structure_;
  std::atomic<std::uint64_t> combines_{0}, combined_ops_{0};  // written under the lock, read by stats
};

// FC+: flat combining for updates, a readers-writer lock for reads.
template <SequentialStructure D>
using FlatCombiningRw = FlatCombining<D, true>;

}  // namespace cdsb
