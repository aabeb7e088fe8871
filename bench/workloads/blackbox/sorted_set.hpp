// The Redis-like sorted set under the black-box workload: add = ZINCRBY(key, +delta),
// remove = ZINCRBY(key, -delta), read = ZRANK(key). Its items are its members; the checksum
// is the sum of their scores. Checked with the "sortedset" model and against a std::map.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/harness/config.hpp"
#include "bench/workloads/blackbox/common.hpp"
#include "cdsbench/seq/sorted_set.hpp"

namespace cdsb::bench {

template <>
struct BlackBox<seq::SortedSet> {
  using Op = seq::SortedSet::Op;
  using Code = seq::SortedSet::Code;
  static constexpr const char* model = "sortedset";
  static constexpr std::uint64_t paper_prefill = 10'000;
  static constexpr bool distinct_prefill = true;
  static seq::SortedSet make(const Config&) { return {}; }
  static std::int64_t delta(std::uint64_t random) { return 1 + static_cast<std::int64_t>(random % 16); }
  static Op add(std::uint64_t key, std::uint64_t random) { return {Code::zincrby, key, delta(random)}; }
  static Op remove(std::uint64_t key, std::uint64_t random) { return {Code::zincrby, key, -delta(random)}; }
  static Op read(std::uint64_t key) { return {Code::zrank, key, 0}; }
  static ItemEffect effect(int type, const Op& op, const seq::Answer& r) {
    if (type == bb_read) return {r.ok, 0, 0};
    return {true, static_cast<std::uint64_t>(op.increment), r.ok ? 1 : 0};
  }
  static HistoryEvent event(int type, const Op& op, const seq::Answer& r) {
    const auto m = static_cast<std::int64_t>(op.member);
    if (type == bb_read) return {"zrank", {m, 0}, 1, static_cast<std::int64_t>(r.value), r.ok, 0, 0};
    return {"zincrby", {m, op.increment}, 2, static_cast<std::int64_t>(r.value), true, 0, 0};
  }
  template <class S>
  static ItemTotals totals(const S& s) {
    ItemTotals t;
    s.for_each_item([&](std::uint64_t, std::int64_t score) {
      t.sum += static_cast<std::uint64_t>(score);
      ++t.count;
    });
    return t;
  }

  struct Reference {
    std::map<std::uint64_t, std::int64_t> scores;
    seq::Answer apply(const Op& op) {
      const auto it = scores.find(op.member);
      if (op.code == Code::zincrby) {
        if (it == scores.end()) {
          scores.emplace(op.member, op.increment);
          return {true, static_cast<std::uint64_t>(op.increment)};
        }
        it->second = static_cast<std::int64_t>(static_cast<std::uint64_t>(it->second) + static_cast<std::uint64_t>(op.increment));
        return {false, static_cast<std::uint64_t>(it->second)};
      }
      if (it == scores.end()) return {false, 0};
      std::uint64_t rank = 0;  // members ordered before it by (score, member)
      for (const auto& [m, s] : scores) rank += s < it->second || (s == it->second && m < op.member);
      return {true, rank};
    }
    template <class S>
    bool same_contents(const S& s) const {
      std::vector<std::tuple<std::int64_t, std::uint64_t>> got, want;
      s.for_each_item([&](std::uint64_t m, std::int64_t score) { got.emplace_back(score, m); });
      for (const auto& [m, score] : scores) want.emplace_back(score, m);
      std::sort(want.begin(), want.end());
      return got == want;  // for_each_item walks in rank order
    }
  };
};

}  // namespace cdsb::bench
