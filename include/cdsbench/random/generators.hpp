// Pseudo-random generators for the benchmark loop and for studying generator quality.
//
// Every generator here produces 64-bit words through `next()` and is re-seeded from one
// 64-bit value through `seed(s)`, so any of them can drive the same workload (see the
// `Generator` concept). The default of the harness is xoshiro256** (pitfall P3: a weak or
// patterned generator distorts key streams); the others are kept to be compared with it,
// and two of them (fnv1a_counter, rdrand) to demonstrate what goes wrong.
#pragma once

#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace cdsb {

template <class G>
concept Generator = requires(G& g, std::uint64_t s) {
  { g.next() } -> std::same_as<std::uint64_t>;
  g.seed(s);
};

namespace detail {

// Weyl increment of splitmix64: the odd integer closest to 2^64 / golden ratio.
inline constexpr std::uint64_t splitmix64_gamma = 0x9e3779b97f4a7c15ULL;

// The output function of splitmix64 (Stafford's "Mix13" variant of fmix64); a bijection.
constexpr std::uint64_t splitmix64_mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// MurmurHash3's 64-bit finalizer (Appleby): a bijection with full avalanche.
constexpr std::uint64_t murmur3_fmix64(std::uint64_t k) noexcept {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

}  // namespace detail

// Steele, Lea & Flood, "Fast splittable pseudorandom number generators" (OOPSLA 2014), Vigna's
// splitmix64.c: period 2^64, passes BigCrush; used here mainly to expand seeds.
class SplitMix64 {
 public:
  static constexpr std::string_view name = "splitmix64";

  explicit constexpr SplitMix64(std::uint64_t state = 0) noexcept : state_(state) {}

  constexpr void seed(std::uint64_t s) noexcept { state_ = s; }

  constexpr std::uint64_t next() noexcept {
    state_ += detail::splitmix64_gamma;
    return detail::splitmix64_mix(state_);
  }

 private:
  std::uint64_t state_;
};

// Blackman & Vigna, "Scrambled linear pseudorandom number generators" (TOMS 2021): period
// 2^256 - 1, passes BigCrush and PractRand; the harness default.
class Xoshiro256StarStar {
 public:
  static constexpr std::string_view name = "xoshiro256starstar";

  constexpr Xoshiro256StarStar() noexcept { seed(0); }

  // Raw state, for the published reference vectors. The all-zero state is a fixed point.
  explicit constexpr Xoshiro256StarStar(std::array<std::uint64_t, 4> state) : s_(state) {
    if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) {
      throw std::invalid_argument("Xoshiro256StarStar: the all-zero state is not allowed");
    }
  }

  // Four consecutive splitmix64 outputs are pairwise distinct (its output function is a
  // bijection of distinct states), so at most one word is zero and the state is never zero.
  constexpr void seed(std::uint64_t s) noexcept {
    SplitMix64 expand(s);
    for (auto& word : s_) word = expand.next();
  }

  constexpr std::uint64_t next() noexcept {
    const std::uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }

 private:
  std::array<std::uint64_t, 4> s_{};
};

// Vigna, "An experimental exploration of Marsaglia's xorshift generators, scrambled" (TOMS
// 2016): period 2^64 - 1; fails a few BigCrush linearity tests in its low bits.
class Xorshift64Star {
 public:
  static constexpr std::string_view name = "xorshift64star";

  constexpr Xorshift64Star() noexcept { seed(0); }
  explicit constexpr Xorshift64Star(std::uint64_t s) noexcept { seed(s); }

  // Zero is the one state xorshift never leaves; exactly one seed maps to it, remapped here.
  constexpr void seed(std::uint64_t s) noexcept {
    x_ = SplitMix64(s).next();
    if (x_ == 0) x_ = detail::splitmix64_gamma;
  }

  constexpr std::uint64_t next() noexcept {
    x_ ^= x_ >> 12;
    x_ ^= x_ << 25;
    x_ ^= x_ >> 27;
    return x_ * 0x2545f4914f6cdd1dULL;
  }

 private:
  std::uint64_t x_ = 0;
};

// Counter-based: MurmurHash3 fmix64 (Appleby) of a Weyl sequence; period 2^64, each output
// appears once per period; decent statistics, no published quality claim.
class Murmur3Counter {
 public:
  static constexpr std::string_view name = "murmur3_counter";

  constexpr Murmur3Counter() noexcept { seed(0); }
  explicit constexpr Murmur3Counter(std::uint64_t s) noexcept { seed(s); }

  // A seed-dependent odd increment keeps the period 2^64 and makes different seeds walk
  // different sequences rather than shifted copies of one sequence.
  constexpr void seed(std::uint64_t s) noexcept {
    counter_ = s;
    increment_ = detail::splitmix64_mix(s) | 1;
  }

  constexpr std::uint64_t next() noexcept {
    counter_ += increment_;
    return detail::murmur3_fmix64(counter_);
  }

 private:
  std::uint64_t counter_ = 0;
  std::uint64_t increment_ = 1;
};

// Counter-based: MurmurHash64A (Appleby, MurmurHash2) of an 8-byte counter keyed by the seed;
// period 2^64; weaker mixing than fmix64 (one multiply per step), no published quality claim.
class Murmur2Counter {
 public:
  static constexpr std::string_view name = "murmur2_counter";

  constexpr Murmur2Counter() noexcept = default;
  explicit constexpr Murmur2Counter(std::uint64_t s) noexcept { seed(s); }

  constexpr void seed(std::uint64_t s) noexcept {
    key_ = s;
    counter_ = 0;
  }

  // MurmurHash64A on exactly one 8-byte block: no tail bytes to fold in.
  constexpr std::uint64_t next() noexcept {
    constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
    constexpr int r = 47;
    std::uint64_t k = counter_++;
    std::uint64_t h = key_ ^ (8 * m);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
  }

 private:
  std::uint64_t key_ = 0;
  std::uint64_t counter_ = 0;
};

// Matsumoto & Nishimura, 64-bit Mersenne Twister (2000), via std::mt19937_64: period
// 2^19937 - 1, 2.5 KiB of state; fails BigCrush's linear-complexity tests.
// The engine lives on the heap so that AnyGenerator, a variant over all generators, stays
// 40 bytes (state and discriminant in one cache line) instead of 2.5 KiB.
class Mt19937_64 {
 public:
  static constexpr std::string_view name = "mt19937_64";

  // std's default seed 5489, as in the C++ standard's check value.
  Mt19937_64() : engine_(std::make_unique<std::mt19937_64>()) {}
  explicit Mt19937_64(std::uint64_t s) : engine_(std::make_unique<std::mt19937_64>(s)) {}

  // Copies are deep: two copies continue the same sequence independently.
  Mt19937_64(const Mt19937_64& other)
      : engine_(std::make_unique<std::mt19937_64>(*other.engine_)) {}
  Mt19937_64& operator=(const Mt19937_64& other) {
    if (this != &other) engine_ = std::make_unique<std::mt19937_64>(*other.engine_);
    return *this;
  }
  Mt19937_64(Mt19937_64&&) noexcept = default;  // a moved-from object may only be destroyed
  Mt19937_64& operator=(Mt19937_64&&) noexcept = default;  // or assigned to
  ~Mt19937_64() = default;

  void seed(std::uint64_t s) { engine_->seed(s); }
  std::uint64_t next() { return (*engine_)(); }

 private:
  std::unique_ptr<std::mt19937_64> engine_;
};

// FNV-1a 64-bit (Fowler, Noll & Vo) of an incrementing counter: period 2^64 but visibly
// flawed: the low output bit is the parity of the counter bytes' low bits, so consecutive
// outputs alternate odd/even except where a carry crosses a byte (P3). Kept to show it.
class Fnv1aCounter {
 public:
  static constexpr std::string_view name = "fnv1a_counter";

  constexpr Fnv1aCounter() noexcept = default;
  explicit constexpr Fnv1aCounter(std::uint64_t s) noexcept : counter_(s) {}

  constexpr void seed(std::uint64_t s) noexcept { counter_ = s; }

  constexpr std::uint64_t next() noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-64 offset basis
    const std::uint64_t c = counter_++;
    for (int byte = 0; byte < 8; ++byte) {  // little-endian byte order, fixed on any host
      h ^= (c >> (8 * byte)) & 0xff;
      h *= 0x100000001b3ULL;  // FNV-64 prime
    }
    return h;
  }

 private:
  std::uint64_t counter_ = 0;
};

namespace detail {

#if defined(__x86_64__) || defined(__i386__)
// Intel's DRNG guide advises 10 retries: a failure after that means a broken DRNG.
__attribute__((target("rdrnd"))) inline std::uint64_t rdrand64() {
  for (int attempt = 0; attempt < 10; ++attempt) {
    unsigned long long value;
    if (_rdrand64_step(&value) != 0) return value;
  }
  std::fputs("cdsbench: RDRAND failed 10 times in a row; the hardware generator is broken\n",
             stderr);
  std::abort();
}
#else
inline std::uint64_t rdrand64() {
  std::fputs("cdsbench: RDRAND is an x86 instruction; this build does not target x86\n", stderr);
  std::abort();
}
#endif

}  // namespace detail

// Intel RDRAND (hardware DRBG reseeded from an entropy source): no period, cryptographic
// quality, but tens to thousands of cycles per call: a poor per-operation generator (P3).
class Rdrand {
 public:
  static constexpr std::string_view name = "rdrand";

  // CPUID leaf 1, ECX bit 30. Cached: CPUID itself is slow (and traps in many VMs).
  static bool available() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    static const bool has_rdrand = [] {
      unsigned a = 0, b = 0, c = 0, d = 0;
      if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
      return ((c >> 30) & 1u) != 0;
    }();
    return has_rdrand;
#else
    return false;
#endif
  }

  void seed(std::uint64_t) noexcept {}  // nothing to seed: the hardware draws its own entropy
  std::uint64_t next() { return detail::rdrand64(); }
};

}  // namespace cdsb
