// Double-width compare-and-swap: one atomic CAS of two adjacent 64-bit words (x86-64
// `lock cmpxchg16b`), for the structures whose cells pair an index with a value (LCRQ).
//
// Written as inline assembly rather than std::atomic<__int128>: GCC sends 16-byte atomics to
// libatomic, which is not lock-free by its own account and implements a plain load as a CAS.
// The two words are read one by one with 64-bit atomic loads, which is enough for the
// algorithms that use this: they decide from such (possibly torn) reads only what stays true
// (an index that only grows) and commit through the CAS, which fails if either word changed.
// A 128-bit CAS in assembly beside 64-bit atomic loads of its halves is outside the C++ memory
// model: what orders it is x86's (a locked instruction is a full barrier, x86-TSO), so the
// structures using it say so and are built for x86-64 only. Under ThreadSanitizer a 16-byte
// atomic builtin stands in for the assembly (so TSan sees the CAS's synchronisation); the
// assembly itself runs in the release and ASan builds.
//
// The first x86-64 CPUs lacked cmpxchg16b: dwcas_available() asks the CPU (CPUID.01H:ECX bit
// 13), and a structure that needs it refuses to run without it, saying so.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace cdsb {

// Two words that are compared and swapped together; 16-byte aligned, as cmpxchg16b requires.
struct alignas(16) DoubleWord {
  std::atomic<std::uint64_t> lo{0}, hi{0};
};

#if defined(__x86_64__)
inline constexpr bool dwcas_compiled = true;

inline bool dwcas_available() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  return (c & bit_CMPXCHG16B) != 0;
}

// Atomically: if (w.lo, w.hi) == (expected_lo, expected_hi), set it to (lo, hi) and return true;
// otherwise load its current words into expected_lo, expected_hi and return false. A full
// barrier (sequentially consistent), as every locked x86 instruction.
inline bool dwcas(DoubleWord& w, std::uint64_t& expected_lo, std::uint64_t& expected_hi, std::uint64_t lo,
                  std::uint64_t hi) noexcept {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer cannot see inside the assembly: a 16-byte atomic builtin, which it
  // instruments, lets it see the CAS as the release and acquire it is.
  unsigned __int128 expected = (static_cast<unsigned __int128>(expected_hi) << 64) | expected_lo;
  unsigned __int128 desired = (static_cast<unsigned __int128>(hi) << 64) | lo;
  const bool done = __atomic_compare_exchange(reinterpret_cast<unsigned __int128*>(&w), &expected, &desired, false,
                                              __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  expected_lo = static_cast<std::uint64_t>(expected);
  expected_hi = static_cast<std::uint64_t>(expected >> 64);
  return done;
#endif
  bool swapped;
  asm volatile("lock cmpxchg16b %1"
               : "=@ccz"(swapped), "+m"(w), "+a"(expected_lo), "+d"(expected_hi)
               : "b"(lo), "c"(hi)
               : "memory");
  return swapped;
}
#else
inline constexpr bool dwcas_compiled = false;
inline bool dwcas_available() noexcept { return false; }
#endif

}  // namespace cdsb
