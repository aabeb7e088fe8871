// RWL: the black-box baseline of Calciu et al. (ASPLOS 2017) that runs read-only operations
// under the shared side and updates under the exclusive side of one readers-writer lock:
// the distributed readers-writer lock Node Replication itself uses for its replicas
// (platform/distributed_rw_lock.hpp, the paper's §5.5), so the comparison is like for like.
//
// Every operation: linearizable (at its critical section), blocking.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/platform/distributed_rw_lock.hpp"

namespace cdsb {

template <SequentialStructure D>
class RwLocked {
 public:
  using structure_type = D;
  using Op = typename D::Op;
  using Result = typename D::Result;

  // One reader flag per thread: thread tid reads through flag tid.
  explicit RwLocked(int threads, D structure = D()) : lock_(threads), structure_(std::move(structure)) {}

  // Linearizable; blocking; reclamation: immediate (D frees inside the critical section).
  // The lock orders each update with every other critical section
  // (distributed_rw_lock.hpp); concurrent reads run D's read-only ops at once, which D's
  // contract allows (nr/sequential.hpp).
  // A read or an update that finds the lock unavailable counts one wait (a statistic, on the
  // slow path only: a read that gets in at once writes no shared line).
  Result execute(int tid, const Op& op) {
    if (D::is_read_only(op)) {
      if (!lock_.try_lock_shared(tid)) {
        waits_.fetch_add(1, std::memory_order_relaxed);
        lock_.lock_shared(tid);
      }
      Result result = structure_.execute(op);
      lock_.unlock_shared(tid);
      dispose_op<D>(op);
      return result;
    }
    if (!lock_.try_lock()) {
      waits_.fetch_add(1, std::memory_order_relaxed);
      lock_.lock();
    }
    Result result = structure_.execute(op);
    lock_.unlock();
    dispose_op<D>(op);
    return result;
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  const D& structure() const noexcept { return structure_; }
  std::string check_invariants() const { return structure_.check_invariants(); }
  std::size_t memory_bytes() const {
    return sizeof(*this) - sizeof(D) + lock_.memory_bytes() + structure_.memory_bytes();
  }
  // Operations that found the lock unavailable. May be read while operations run.
  std::uint64_t lock_waits() const noexcept { return waits_.load(std::memory_order_relaxed); }

 private:
  DistributedRwLock lock_;
  alignas(false_sharing_range) D structure_;  // readers load lock_'s header on every read
  alignas(false_sharing_range) std::atomic<std::uint64_t> waits_{0};
};

}  // namespace cdsb
