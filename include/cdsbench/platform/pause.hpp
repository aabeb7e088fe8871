// Spin-wait hints and bounded exponential backoff.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace cdsb {

// Tells the core we are spinning: frees pipeline resources for the SMT sibling and avoids
// the memory-order mis-speculation penalty when the awaited line finally changes.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Exponential backoff for contended retries. After `yield_after` doublings it yields the
// CPU: with more threads than CPUs (oversubscription, which the harness allows and warns
// about) a waiter that never yields can spin away the lock holder's time slice.
class Backoff {
 public:
  explicit Backoff(std::uint32_t max_spins = 1024) noexcept : max_spins_(max_spins) {}

  void operator()() noexcept {
    if (spins_ >= max_spins_) {
      std::this_thread::yield();
      return;
    }
    for (std::uint32_t i = 0; i < spins_; ++i) cpu_relax();
    spins_ *= 2;
  }

  void reset() noexcept { spins_ = 1; }

 private:
  std::uint32_t spins_ = 1;
  std::uint32_t max_spins_;
};

}  // namespace cdsb
