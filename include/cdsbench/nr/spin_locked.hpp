// SL: the black-box baseline of Calciu et al. (ASPLOS 2017) that runs every operation of a
// sequential structure under one spin lock (platform/spin_lock.hpp, test-and-test-and-set).
//
// Every operation: linearizable (at its critical section), blocking.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/spin_lock.hpp"

namespace cdsb {

template <SequentialStructure D>
class SpinLocked {
 public:
  using structure_type = D;
  using Op = typename D::Op;
  using Result = typename D::Result;

  explicit SpinLocked(int /*threads*/, D structure = D()) : structure_(std::move(structure)) {}

  // Linearizable; blocking; reclamation: immediate (D frees inside the critical section).
  // The lock's acquire/release (spin_lock.hpp) orders the critical sections.
  Result execute(int /*tid*/, const Op& op) {
    if (!lock_.try_lock()) {  // held: count the wait (a statistic, on the slow path only)
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
  std::size_t memory_bytes() const { return sizeof(*this) - sizeof(D) + structure_.memory_bytes(); }
  // Operations that found the lock held. May be read while operations run.
  std::uint64_t lock_waits() const noexcept { return waits_.load(std::memory_order_relaxed); }

 private:
  alignas(false_sharing_range) SpinLock lock_;
  alignas(false_sharing_range) D structure_;  // waiters spin on lock_'s line, not the holder's
  alignas(false_sharing_range) std::atomic<std::uint64_t> waits_{0};
};

}  // namespace cdsb
