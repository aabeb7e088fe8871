// Uniform integers and doubles from a 64-bit generator.
#pragma once

#include <cstdint>

#include "cdsbench/random/generators.hpp"

namespace cdsb {

// Uniform in [0, n) without modulo bias: Lemire, "Fast random integer generation in an
// interval" (TOMS 2019). The high word of next() * n is the result; only when the low word
// falls in the short biased region (< 2^64 mod n) is the draw rejected, so the division
// that computes that region runs with probability < n / 2^64. Precondition: n >= 1.
namespace detail {
// The rare rejection path, out of line so the common path inlines into callers.
template <Generator G>
[[gnu::noinline]] std::uint64_t uniform_below_retry(G& g, std::uint64_t n, std::uint64_t low,
                                                    std::uint64_t high) {
  __extension__ using Wide = unsigned __int128;
  const std::uint64_t biased_below = (0 - n) % n;  // 2^64 mod n
  while (low < biased_below) {
    const Wide product = static_cast<Wide>(g.next()) * n;
    low = static_cast<std::uint64_t>(product);
    high = static_cast<std::uint64_t>(product >> 64);
  }
  return high;
}
}  // namespace detail

template <Generator G>
[[gnu::always_inline]] inline std::uint64_t uniform_below(G& g, std::uint64_t n) {
  __extension__ using Wide = unsigned __int128;
  const Wide product = static_cast<Wide>(g.next()) * n;
  const auto low = static_cast<std::uint64_t>(product);
  const auto high = static_cast<std::uint64_t>(product >> 64);
  if (low < n) [[unlikely]] return detail::uniform_below_retry(g, n, low, high);
  return high;
}

// Uniform double in [0, 1) on the 2^53 grid: the top 53 bits (the low bits of some
// generators are the weaker ones) scaled by 2^-53, so every value is exact.
template <Generator G>
double uniform_01(G& g) {
  return static_cast<double>(g.next() >> 11) * 0x1.0p-53;
}

}  // namespace cdsb
