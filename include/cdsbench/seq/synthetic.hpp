// The synthetic structure of Calciu et al.'s evaluation (ASPLOS 2017, §6): a buffer of n
// entries, each one cache line with a spare line between neighbours (so adjacent-line
// prefetch does not couple them), of which every operation touches c, plus one hot entry
// that every operation touches. It isolates the cost a black-box construction adds to a
// structure whose operations touch a known number of lines.
//
// update(key, delta): entries start, start + s, ..., start + (c-1)s (mod n), with
// start = mix(key) mod n and s = n / c, get delta added to their first word (and the key
// folded into their second, so the whole line is written); the hot entry keeps
//   fingerprint  of the updates so far (seq/fingerprint.hpp: step(fp, key, delta)),
//   sum          of the deltas, and count (+1 for a positive delta, -1 otherwise).
// read(key): reads the same c entries and the hot entry.
// Both return the fingerprint (after the update) and the sum of the touched entries' first
// words, so results depend on every earlier update: the checker's `oracle` model verifies the
// fingerprints, the differential test the touched sums. Invariant: the first words of all
// entries sum to c x sum.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/seq/fingerprint.hpp"

namespace cdsb::seq {

class Synthetic {
 public:
  static constexpr int default_touched = 8;

  enum class Code : std::uint8_t { update, read };
  struct Op {
    Code code = Code::read;
    std::uint64_t key = 0;
    std::int64_t delta = 0;  // update only
  };
  struct Result {
    std::uint64_t fingerprint = 0;
    std::uint64_t touched_sum = 0;  // modulo 2^64
    friend bool operator==(const Result&, const Result&) = default;
  };

  static bool is_read_only(const Op& op) noexcept { return op.code == Code::read; }

  explicit Synthetic(std::size_t entries = 4096, int touched = default_touched)
      : n_(std::max<std::size_t>(entries, 1)),
        c_(static_cast<std::size_t>(std::clamp<long long>(touched, 1, static_cast<long long>(n_)))),
        stride_(std::max<std::size_t>(n_ / c_, 1)),
        lines_(2 * n_) {}

  Result execute(const Op& op) {
    const std::size_t start = cdsb::detail::splitmix64_mix(op.key) % n_;
    Result r;
    if (op.code == Code::update) {
      for (std::size_t j = 0; j < c_; ++j) {
        Line& e = entry((start + j * stride_) % n_);
        e.w[0] += static_cast<std::uint64_t>(op.delta);
        e.w[1] ^= op.key;
        r.touched_sum += e.w[0];
      }
      hot_.w[0] = fingerprint_step(hot_.w[0], {op.key, static_cast<std::uint64_t>(op.delta)});
      hot_.w[1] += static_cast<std::uint64_t>(op.delta);
      hot_.w[2] += op.delta > 0 ? 1 : static_cast<std::uint64_t>(-1);
      r.fingerprint = hot_.w[0];
      return r;
    }
    for (std::size_t j = 0; j < c_; ++j) r.touched_sum += entry((start + j * stride_) % n_).w[0];
    r.fingerprint = hot_.w[0];
    return r;
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  std::size_t entries() const noexcept { return n_; }
  std::size_t touched() const noexcept { return c_; }
  std::uint64_t fingerprint() const noexcept { return hot_.w[0]; }
  std::uint64_t delta_sum() const noexcept { return hot_.w[1]; }          // modulo 2^64
  std::int64_t delta_count() const noexcept { return static_cast<std::int64_t>(hot_.w[2]); }

  std::string check_invariants() const {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < n_; ++i) total += lines_[2 * i].w[0];
    if (total != c_ * hot_.w[1]) return "entries sum to " + std::to_string(total) + ", not touched x delta sum";
    for (std::size_t i = 0; i < n_; ++i)
      for (std::uint64_t w : lines_[2 * i + 1].w)
        if (w) return "a spare line was written";
    return {};
  }

  std::size_t memory_bytes() const noexcept { return sizeof(*this) + lines_.capacity() * sizeof(Line); }

  friend bool operator==(const Synthetic& a, const Synthetic& b) {
    return a.n_ == b.n_ && a.c_ == b.c_ && a.hot_ == b.hot_ && a.lines_ == b.lines_;
  }

 private:
  struct alignas(cache_line_size) Line {
    std::uint64_t w[cache_line_size / sizeof(std::uint64_t)]{};
    friend bool operator==(const Line&, const Line&) = default;
  };
  Line& entry(std::size_t i) noexcept { return lines_[2 * i]; }
  const Line& entry(std::size_t i) const noexcept { return lines_[2 * i]; }

  std::size_t n_, c_, stride_;
  std::vector<Line> lines_;  // entry i at line 2i, line 2i+1 the spare
  alignas(false_sharing_range) Line hot_;
};

static_assert(SequentialStructure<Synthetic> && QuiescentlyCheckable<Synthetic>);

}  // namespace cdsb::seq
