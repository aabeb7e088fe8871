// Periodic reseeding of a generator from a cryptographic source (OpenSSL RAND_bytes).
//
// Reseeding bounds how long a run depends on one seed's stream (pitfall P3: an optional
// defence against patterned generators). It is not free: RAND_bytes costs about a
// microsecond, so reseed every thousands of draws, not every draw.
#pragma once

#include <openssl/rand.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "cdsbench/random/generators.hpp"

namespace cdsb {

namespace detail {

// 64 bits from OpenSSL's CSPRNG. A failure means no usable entropy: a run would silently
// lose its reseeding, so stop instead.
inline std::uint64_t crypto_random_u64() {
  unsigned char bytes[8];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    std::fputs("cdsbench: OpenSSL RAND_bytes failed; cannot reseed the generator\n", stderr);
    std::abort();
  }
  std::uint64_t value = 0;
  for (unsigned char b : bytes) value = (value << 8) | b;
  return value;
}

}  // namespace detail

// Wraps G; after every `every` draws (0 = never) the wrapped generator is seeded afresh with
// 64 bits from RAND_bytes. Not reproducible across runs by design when every > 0.
template <Generator G>
class Reseeding {
 public:
  Reseeding(G g, std::uint64_t every)
      : inner_(std::move(g)), every_(every), countdown_(initial_countdown(every)) {}

  // The fast path is one decrement and one well-predicted branch. With every == 0 the
  // countdown starts at 2^64 - 1 and reaching zero only re-arms it. Always inlined (the
  // measured loop's draws; see AnyGenerator::next).
  [[gnu::always_inline]] std::uint64_t next() {
    const std::uint64_t value = inner_.next();
    if (--countdown_ == 0) [[unlikely]] reseed();
    return value;
  }

  // Seeds the wrapped generator and restarts the countdown.
  void seed(std::uint64_t s) {
    inner_.seed(s);
    countdown_ = initial_countdown(every_);
  }

  std::uint64_t reseeds() const noexcept { return reseeds_; }
  std::uint64_t every() const noexcept { return every_; }
  const G& inner() const noexcept { return inner_; }

 private:
  static constexpr std::uint64_t initial_countdown(std::uint64_t every) noexcept {
    return every == 0 ? std::numeric_limits<std::uint64_t>::max() : every;
  }

  [[gnu::noinline, gnu::cold]] void reseed() {
    countdown_ = initial_countdown(every_);
    if (every_ == 0) return;
    inner_.seed(detail::crypto_random_u64());
    ++reseeds_;
  }

  G inner_;
  std::uint64_t every_;
  std::uint64_t countdown_;
  std::uint64_t reseeds_ = 0;
};

}  // namespace cdsb
