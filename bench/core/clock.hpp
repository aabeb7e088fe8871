// The one clock of the harness: CLOCK_MONOTONIC through steady_clock, in nanoseconds, the
// same for every thread (trial phases, latency samples, history stamps).
#pragma once

#include <chrono>
#include <cstdint>

namespace cdsb::bench {

inline std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace cdsb::bench
