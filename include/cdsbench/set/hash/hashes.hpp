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
// clients choose with a seed they do not know; on byte strings (std::string_view keys: the
// sorted-set server's key space) it is SipHash-1-3 keyed by the seed (Aumasson & Bernstein,
// "SipHash: a fast short-input PRF", INDOCRYPT 2012; the variant of Rust's and CPython's hash
// tables, Redis using 1-2): a pseudorandom function, so a client that does not know the seed
// (a server draws it at start; the harness's builds use 0) cannot choose keys that collide,
// which a mixing hash such as Murmur's does not promise. parsec3 and bytesum are the digest
// hashes of dedup and take no byte strings.
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

// SipHash-c-d of `bytes` under the 128-bit key (k0, k1), as the paper specifies it: the
// message in little-endian 8-byte words, each absorbed with c rounds, the last word padded with
// zeros and the length's low byte in its top byte, then d rounds. (This code assumes a
// little-endian host, as the project does.)
template <int C, int D>
std::uint64_t siphash(std::uint64_t k0, std::uint64_t k1, std::string_view bytes) {
  std::uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
  std::uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
  const auto rounds = [&](int n) {
    for (int i = 0; i < n; ++i) {
      v0 += v1, v1 = std::rotl(v1, 13), v1 ^= v0, v0 = std::rotl(v0, 32);
      v2 += v3, v3 = std::rotl(v3, 16), v3 ^= v2;
      v0 += v3, v3 = std::rotl(v3, 21), v3 ^= v0;
      v2 += v1, v1 = std::rotl(v1, 17), v1 ^= v2, v2 = std::rotl(v2, 32);
    }
  };
  const auto absorb = [&](std::uint64_t m) {
    v3 ^= m;
    rounds(C);
    v0 ^= m;
  };
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t whole = bytes.size() / 8 * 8;
  for (std::size_t i = 0; i < whole; i += 8) absorb(load64(p + i));
  std::uint64_t last = static_cast<std::uint64_t>(bytes.size() & 0xff) << 56;
  if (bytes.size() > whole) std::memcpy(&last, p + whole, bytes.size() - whole);  // the tail, in the low bytes
  absorb(last);
  v2 ^= 0xff;
  rounds(D);
  return v0 ^ v1 ^ v2 ^ v3;
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
  // The seed is SipHash's key: its first word, and a mix of it as the second.
  std::uint64_t operator()(std::string_view bytes) const {
    return siphash<1, 3>(seed, mix64(seed ^ 0x9e3779b97f4a7c15ULL), bytes);
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
