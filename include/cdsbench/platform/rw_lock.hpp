// Writer-preferring readers-writer spin lock in 4 bytes.
//
// Word layout: bit 0 = a writer holds the lock, bit 1 = a writer is waiting, bits 2.. =
// number of readers. A waiting writer sets bit 1, which stops new readers from entering, so
// a steady stream of readers cannot starve writers. Blocking.
#pragma once

#include <atomic>
#include <cstdint>

#include "cdsbench/platform/pause.hpp"

namespace cdsb {

class RwSpinLock {
 public:
  void lock() noexcept {
    Backoff backoff;
    for (;;) {
      std::uint32_t s = word_.load(std::memory_order_relaxed);
      if ((s & ~writer_waiting) == 0) {
        // acquire: pairs with the release of the last reader's unlock_shared and of the
        // previous writer's unlock. Clearing writer_waiting is fine: other waiting writers
        // set it again on their next spin.
        if (word_.compare_exchange_weak(s, writer_holds, std::memory_order_acquire,
                                        std::memory_order_relaxed))
          return;
      } else if (!(s & writer_waiting)) {
        word_.fetch_or(writer_waiting, std::memory_order_relaxed);
      }
      backoff();
    }
  }

  void unlock() noexcept {
    // release: publishes the writer's critical section to later readers and writers.
    // fetch_and keeps a writer_waiting bit that another writer set meanwhile.
    word_.fetch_and(~writer_holds, std::memory_order_release);
  }

  void lock_shared() noexcept {
    Backoff backoff;
    for (;;) {
      std::uint32_t s = word_.load(std::memory_order_relaxed);
      if ((s & (writer_holds | writer_waiting)) == 0) {
        // acquire: pairs with the writer's release in unlock().
        if (word_.compare_exchange_weak(s, s + one_reader, std::memory_order_acquire,
                                        std::memory_order_relaxed))
          return;
        continue;  // another reader moved the count: retry at once
      }
      backoff();
    }
  }

  void unlock_shared() noexcept {
    // release: the reader's loads happen-before the next writer's stores.
    word_.fetch_sub(one_reader, std::memory_order_release);
  }

 private:
  static constexpr std::uint32_t writer_holds = 1;
  static constexpr std::uint32_t writer_waiting = 2;
  static constexpr std::uint32_t one_reader = 4;
  std::atomic<std::uint32_t> word_{0};
};
static_assert(sizeof(RwSpinLock) == 4);

}  // namespace cdsb
