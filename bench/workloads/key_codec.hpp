// The set workload's keys as a structure's key type. The workload draws, sums and validates
// 64-bit integers; a structure keyed by something else gets each integer encoded, and
// validation decodes what it holds. Digest keys (Digest160, the dedup study's SHA-1 chunk
// fingerprints) encode an integer as 20 bytes that look random, as SHA-1 output does, so the
// named hashes (parsec3: the first 4 bytes; bytesum: the sum of all 20) behave on them as on
// real digests; the first 8 bytes are a bijection of the integer, which decoding inverts.
// Byte-string keys (std::string_view) encode an integer as 8 to 64 bytes, the same 8 first and
// more bytes derived from the integer, the length varying with it; encode returns the bytes
// in a buffer of their own, which converts to the view the structure takes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "cdsbench/random/generators.hpp"
#include "cdsbench/set/hash/hashes.hpp"

namespace cdsb::bench {

template <class Key>
struct KeyCodec {
  static Key encode(std::uint64_t k) { return static_cast<Key>(k); }
  static std::uint64_t decode(Key k) { return static_cast<std::uint64_t>(k); }
};

template <>
struct KeyCodec<Digest160> {
  static Digest160 encode(std::uint64_t k) {
    const std::uint64_t words[3] = {::cdsb::detail::murmur3_fmix64(k), ::cdsb::detail::murmur3_fmix64(k ^ 0x5bd1e9955bd1e995ULL),
                                    ::cdsb::detail::murmur3_fmix64(k ^ 0xc6a4a7935bd1e995ULL)};
    Digest160 d;
    std::memcpy(d.bytes.data(), words, d.bytes.size());
    return d;
  }
  static std::uint64_t decode(const Digest160& d) { return unmix(hash::load64(d.bytes.data())); }

  // The inverse of murmur3_fmix64: x ^= x >> 33 is its own inverse, and each multiplier has one
  // modulo 2^64.
  static constexpr std::uint64_t unmix(std::uint64_t x) {
    x ^= x >> 33;
    x *= inverse(0xc4ceb9fe1a85ec53ULL);
    x ^= x >> 33;
    x *= inverse(0xff51afd7ed558ccdULL);
    x ^= x >> 33;
    return x;
  }
  // Newton's iteration for an odd a: each step doubles the correct low bits (3 to start).
  static constexpr std::uint64_t inverse(std::uint64_t a) {
    std::uint64_t x = a;
    for (int i = 0; i < 5; ++i) x *= 2 - a * x;
    return x;
  }
};

template <>
struct KeyCodec<std::string_view> {
  static constexpr std::size_t min_length = 8, max_length = 64;
  class Encoded {
   public:
    operator std::string_view() const { return {bytes_.data(), length_}; }

   private:
    friend struct KeyCodec;
    std::array<char, max_length> bytes_;
    std::size_t length_;
  };
  static Encoded encode(std::uint64_t k) {
    Encoded e;
    std::uint64_t word = ::cdsb::detail::murmur3_fmix64(k);
    e.length_ = min_length + ::cdsb::detail::murmur3_fmix64(k ^ 0x2545f4914f6cdd1dULL) % (max_length - min_length + 1);
    for (std::size_t at = 0; at < e.length_; at += 8) {
      std::memcpy(e.bytes_.data() + at, &word, 8);
      word = ::cdsb::detail::murmur3_fmix64(word ^ k);
    }
    return e;
  }
  // The integer, or 0 (which is no key) for bytes that are not an encoding: a structure that
  // damaged a key's tail or length fails validation.
  static std::uint64_t decode(std::string_view bytes) {
    if (bytes.size() < min_length) return 0;
    const std::uint64_t k = KeyCodec<Digest160>::unmix(hash::load64(reinterpret_cast<const std::uint8_t*>(bytes.data())));
    return std::string_view(encode(k)) == bytes ? k : 0;
  }
};

static_assert(KeyCodec<Digest160>::inverse(0xff51afd7ed558ccdULL) * 0xff51afd7ed558ccdULL == 1);
static_assert(KeyCodec<Digest160>::unmix(::cdsb::detail::murmur3_fmix64(12345)) == 12345);

}  // namespace cdsb::bench
