// Key types and named hash functions of the hash maps (set/hash/).
//
// A map takes its hash as a template parameter, because the dedup study (Feldman et al.,
// SPLASH 2013) traced its maps' behaviour inside dedup to the hash: a hash that uses few bits
// of a SHA-1 digest crowds the keys into few buckets. The named hashes:
//
//   even     a full mixing hash of the whole key: every input bit affects every output bit.
//   parsec3  PARSEC 3.0 dedup's: the digest's first 32 bits, read as a native integer. SHA-1 bits
//            are uniform, so it spreads digests as evenly as `even` (not other keys: for a
//            64-bit key it is the key's low 32 bits).
//   bytesum  the sum of the key's bytes, as earlier dedup versions hashed digests: 20 bytes give
//            values 0..5,100 only, so at most 5,101 of PARSEC's 98,317 buckets are ever used,
//            the most crowded ones near the mean (2,550) holding the most keys.
//
// Each is a function object callable on a 64-bit key and on a Digest160, returning 64 bits
// (parsec3 and bytesum fit in 32). `even` takes a seed, so that a server can hash keys its
// clients choose with a seed they do not know.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "cdsbench/random/generators.hpp"

namespace cdsb {

// A 160-bit digest (SHA-1) used as a key, as dedup keys its chunks.
struct Digest160 {
  std::array<std::uint8_t, 20> bytes{};
  auto operator<=>(const Digest160&) const = default;
};

namespace hash {

// MurmurHash3's 64-bit finaliser: a bijection with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t x) { return detail::murmur3_fmix64(x); }

inline std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint32_t load32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Even {
  static constexpr std::string_view name = "even";
  std::uint64_t seed = 0;
  std::uint64_t operator()(std::uint64_t key) const { return mix64(key ^ seed); }
  std::uint64_t operator()(const Digest160& d) const {
    const std::uint8_t* p = d.bytes.data();
    // Each 8-byte word mixed into the running hash: a digest differing in any bit (a shared
    // prefix included) hashes apart.
    std::uint64_t h = mix64(load64(p) ^ seed);
    h = mix64(h ^ load64(p + 8));
    return mix64(h ^ load32(p + 16));
  }
};

struct Parsec3 {
  static constexpr std::string_view name = "parsec3";
  std::uint64_t operator()(std::uint64_t key) const { return static_cast<std::uint32_t>(key); }
  std::uint64_t operator()(const Digest160& d) const { return load32(d.bytes.data()); }
};

struct ByteSum {
  static constexpr std::string_view name = "bytesum";
  template <std::size_t N>
  static std::uint64_t sum(const std::array<std::uint8_t, N>& bytes) {
    std::uint64_t s = 0;
    for (std::uint8_t b : bytes) s += b;
    return s;
  }
  std::uint64_t operator()(std::uint64_t key) const { return sum(std::bit_cast<std::array<std::uint8_t, 8>>(key)); }
  std::uint64_t operator()(const Digest160& d) const { return sum(d.bytes); }
};

}  // namespace hash
}  // namespace cdsb
