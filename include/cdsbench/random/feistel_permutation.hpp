// A keyed pseudo-random bijection of [0, n), for scrambling Zipf ranks over the key range
// so that the hot keys are spread out instead of adjacent (adjacent hot keys share cache
// lines and subtrees, which would make a skewed workload measure locality, not contention).
//
// Method: a balanced Feistel network (Luby & Rackoff) over the smallest even number of bits
// 2h with 2^(2h) >= n, four rounds, round function murmur3 fmix64(half ^ round key) cut to h
// bits. A Feistel network is a bijection of [0, 2^(2h)) whatever its round function;
// cycle-walking (Black & Rogaway, "Ciphers with arbitrary finite domains", 2002) re-applies
// it until the value lands in [0, n), which restricts it to a bijection of [0, n). Since
// 2^(2h) < 4n, a call costs fewer than 4 network evaluations on average (16 fmix64 calls).
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>

#include "cdsbench/random/generators.hpp"

namespace cdsb {

class FeistelPermutation {
 public:
  static constexpr int rounds = 4;

  // Throws std::invalid_argument for n == 0 (no domain to permute).
  FeistelPermutation(std::uint64_t n, std::uint64_t seed) : n_(n) {
    if (n == 0) throw std::invalid_argument("FeistelPermutation: n must be >= 1");
    const int bits = std::bit_width(n - 1);  // values 0 .. n-1 fit in `bits` bits
    half_bits_ = bits <= 2 ? 1 : (bits + 1) / 2;
    half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
    SplitMix64 key_stream(seed);
    for (auto& key : keys_) key = key_stream.next();
  }

  // Precondition: x < n (a value outside the domain may sit on a cycle that never enters it).
  std::uint64_t operator()(std::uint64_t x) const noexcept {
    do {
      x = network(x);
    } while (x >= n_);
    return x;
  }

  std::uint64_t size() const noexcept { return n_; }

 private:
  std::uint64_t network(std::uint64_t x) const noexcept {
    std::uint64_t left = x >> half_bits_;
    std::uint64_t right = x & half_mask_;
    for (const std::uint64_t key : keys_) {
      const std::uint64_t mixed = left ^ (detail::murmur3_fmix64(right ^ key) & half_mask_);
      left = right;
      right = mixed;
    }
    return (left << half_bits_) | right;
  }

  std::uint64_t n_;
  int half_bits_ = 1;
  std::uint64_t half_mask_ = 1;
  std::array<std::uint64_t, rounds> keys_{};
};

}  // namespace cdsb
