// The keys steady prefill inserts, and their order.
//
// Every key k of [1, R] draws an arrival time a(k), a 64-bit hash of k and the trial's seed;
// the keys whose a(k) falls in the first target / R of the hash's range form the set: each is
// in with probability target / R, independently, so the set is a uniform one of about
// `target` keys. Inserted in order of arrival they would build a random BST (the treap with
// priorities a), as random inserts do, but every insert would walk a random path, missing the
// cache at each level below the top few: about 3 us per insert on a 1M-key tree here.
//
// So arrivals are grouped in rounds that each add an eighth of the keys already in (the first
// round: `first_round` keys, in arrival order), and a round is inserted in key order:
// consecutive inserts then share all but the last few levels of their paths, and the build
// runs about three times faster (1M keys into ellen_bst: 0.9 s against 2.3-3.0 s in arrival
// order, one thread). A round's keys fall into distinct gaps between earlier keys
// but for a few (a gap receives Poisson(1/8) of them; two or more in about 1 gap in 140),
// where key order replaces arrival order; tests/unit/test_prefill_plan.cpp measures what that
// changes in the shape of a BST (0.02 of a level deeper on average).
//
// Threads build the set together: a round is cut into chunks of consecutive keys, which the
// threads take in turn; a chunk starts only once every chunk of the earlier rounds is in (the
// rounds' order is what makes the shape). The plan holds 8 bytes per key until the build ends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cdsbench/random/generators.hpp"

namespace cdsb::bench {

class PrefillPlan {
 public:
  static constexpr std::uint64_t first_round = 64;  // inserted in arrival order
  static constexpr std::uint64_t growth_divisor = 8;  // a round adds 1/8 of the keys in
  static constexpr std::size_t chunk_keys = 256;

  struct Chunk {
    std::size_t begin, end;       // keys()[begin, end)
    std::size_t chunks_before;    // chunks of the earlier rounds: all must be in first
  };

  PrefillPlan() = default;

  // `keep_going(scanned)` is asked every 2^16 keys of the range; false abandons the plan
  // (complete() is then false): a prefill deadline bounds this scan too.
  template <class KeepGoing>
  PrefillPlan(std::uint64_t key_range, std::uint64_t target, std::uint64_t seed, KeepGoing&& keep_going)
      : range_(key_range), target_(std::min(target, key_range)), salt_(detail::splitmix64_mix(seed)) {
    if (target_ == 0) {
      complete_ = true;
      return;
    }
    for (std::uint64_t end = std::min(first_round, target_); end < target_;) {
      round_end_.push_back(end);
      end += std::max<std::uint64_t>(1, end / growth_divisor);
    }
    round_end_.push_back(target_);

    // Two passes over the range: count each round's keys, then place them; each round comes out
    // in key order, the scan's.
    std::vector<std::size_t> round_begin(round_end_.size() + 1, 0);
    if (!scan(keep_going, [&](std::uint64_t, std::size_t round) { ++round_begin[round + 1]; })) return;
    for (std::size_t r = 1; r < round_begin.size(); ++r) round_begin[r] += round_begin[r - 1];
    keys_.resize(round_begin.back());
    std::vector<std::size_t> next(round_begin.begin(), round_begin.end() - 1);
    if (!scan(keep_going, [&](std::uint64_t k, std::size_t round) { keys_[next[round]++] = k; })) return;
    std::sort(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(round_begin[1]),
              [&](std::uint64_t x, std::uint64_t y) { return arrival(x) < arrival(y); });

    // Round 0 is one chunk: in arrival order, it is also inserted by one thread in that order.
    for (std::size_t r = 0; r + 1 < round_begin.size(); ++r) {
      const std::size_t begin = round_begin[r], end = round_begin[r + 1], before = chunks_.size();
      const std::size_t step = r == 0 ? end - begin : chunk_keys;
      for (std::size_t b = begin; b < end; b += step) chunks_.push_back({b, std::min(end, b + step), before});
    }
    complete_ = true;
  }

  bool complete() const { return complete_; }
  const std::vector<std::uint64_t>& keys() const { return keys_; }
  const std::vector<Chunk>& chunks() const { return chunks_; }
  std::size_t rounds() const { return round_end_.size(); }

  // The arrival time of key k: the treap priority whose shape the plan follows.
  std::uint64_t arrival(std::uint64_t k) const { return detail::murmur3_fmix64(k ^ salt_); }

  // An arrival time scaled to [0, R): about how many keys of the range arrive before it. The key
  // set and the rounds are cut by it; it is monotone in the arrival, so rounds follow arrivals.
  std::uint64_t place_of(std::uint64_t arrival) const {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(arrival) * range_) >> 64);
  }

  // Frees the keys (a trial calls it once the build is done).
  void release() {
    std::vector<std::uint64_t>().swap(keys_);
    std::vector<Chunk>().swap(chunks_);
  }

 private:
  template <class KeepGoing, class Visit>
  bool scan(KeepGoing& keep_going, Visit&& visit) const {
    for (std::uint64_t k = 1; k <= range_; ++k) {
      if ((k & 0xffff) == 0 && !keep_going(k)) return false;
      const std::uint64_t place = place_of(arrival(k));
      if (place >= target_) continue;
      const auto round = static_cast<std::size_t>(std::upper_bound(round_end_.begin(), round_end_.end(), place) - round_end_.begin());
      visit(k, round);
    }
    return true;
  }

  std::uint64_t range_ = 0, target_ = 0, salt_ = 0;
  std::vector<std::uint64_t> round_end_;  // round r: places in [round_end_[r-1], round_end_[r])
  std::vector<std::uint64_t> keys_;
  std::vector<Chunk> chunks_;
  bool complete_ = false;
};

}  // namespace cdsb::bench
