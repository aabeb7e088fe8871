// Test-and-test-and-set spin lock in 4 bytes.
//
// The BST study replaced pthread_mutex_t (40 bytes, a syscall path under contention) with
// small spin locks and saw node size and lock cost drop (pitfall P9). Waiters spin on a
// plain load so the line stays shared until the holder releases it.
#pragma once

#include <atomic>
#include <cstdint>

#include "cdsbench/platform/pause.hpp"

namespace cdsb {

class SpinLock {
 public:
  // Blocking (a stalled holder stalls every waiter).
  void lock() noexcept {
    Backoff backoff;
    for (;;) {
      // acquire: pairs with the release in unlock(); the critical section of the previous
      // holder happens-before ours.
      if (!locked_.exchange(1, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) backoff();
    }
  }

  // Wait-free.
  bool try_lock() noexcept {
    // relaxed pre-check avoids taking the line exclusive when the lock is visibly held.
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(1, std::memory_order_acquire);
  }

  // Wait-free.
  void unlock() noexcept {
    // release: publishes the critical section to the next acquirer.
    locked_.store(0, std::memory_order_release);
  }

 private:
  std::atomic<std::uint32_t> locked_{0};
};
static_assert(sizeof(SpinLock) == 4);

}  // namespace cdsb
