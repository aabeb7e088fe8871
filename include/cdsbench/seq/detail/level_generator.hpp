// Deterministic skip-list tower heights. Node Replication keeps one replica per node and
// relies on every replica reaching the same state from the same operations, so a skip list
// used as a sequential structure must not draw heights from a per-thread or time-seeded
// generator: each instance owns this generator, seeded with a constant, and draws exactly one
// word per insertion. Height h >= 1 has probability (1 - p) p^(h-1), p = 1 / 2^log2_inverse_p.
#pragma once

#include <bit>
#include <cstdint>

#include "cdsbench/random/generators.hpp"

namespace cdsb::seq::detail {

template <int MaxHeight, int Log2InverseP>
class LevelGenerator {
 public:
  static_assert(MaxHeight >= 1 && MaxHeight * Log2InverseP <= 64);
  static constexpr int max_height = MaxHeight;

  int next() noexcept {
    // Each group of Log2InverseP low bits that are all ones adds a level.
    std::uint64_t bits = rng_.next();
    int h = 1;
    constexpr std::uint64_t group = (std::uint64_t{1} << Log2InverseP) - 1;
    while (h < MaxHeight && (bits & group) == group) {
      bits >>= Log2InverseP;
      ++h;
    }
    return h;
  }

  friend bool operator==(const LevelGenerator& a, const LevelGenerator& b) noexcept {
    LevelGenerator x = a, y = b;  // equal iff their next outputs agree (the state is private)
    for (int i = 0; i < 4; ++i)
      if (x.rng_.next() != y.rng_.next()) return false;
    return true;
  }

 private:
  SplitMix64 rng_{0x5EEDC0DEULL};
};

}  // namespace cdsb::seq::detail
