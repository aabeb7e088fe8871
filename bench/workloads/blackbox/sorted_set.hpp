// The Redis sorted set under the black-box workload: add = ZINCRBY(key, +delta), remove =
// ZINCRBY(key, -delta), read = ZRANK(key). A key is the member of 8 bytes holding it big-endian
// (byte order is then numeric order, so ties rank as the integers do); scores are doubles
// holding small integers (exact: far below 2^53). Its items are its members; the checksum is
// the sum of their scores. Checked with the "sortedset" model (integer members and scores, as
// the events carry them) and against a std::map.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string_view>
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
  using Result = seq::SortedSet::Result;
  static constexpr const char* model = "sortedset";
  static constexpr std::uint64_t paper_prefill = 10'000;
  static constexpr bool distinct_prefill = true;
  // Hash seed 0, as every harness build of a keyed hash (set/hash/hashes.hpp).
  static seq::SortedSet make(const Config&) { return seq::SortedSet(0); }

  using Member = std::array<char, 8>;
  static Member member_of(std::uint64_t key) {
    Member m;
    for (int i = 0; i < 8; ++i) m[i] = static_cast<char>(key >> (56 - 8 * i));
    return m;
  }
  static std::uint64_t key_of(std::string_view member) {
    std::uint64_t key = 0;
    for (const char c : member) key = key << 8 | static_cast<unsigned char>(c);
    return key;
  }

  static std::int64_t delta(std::uint64_t random) { return 1 + static_cast<std::int64_t>(random % 16); }
  // The ops carry 8-byte members inline: nothing to dispose of.
  static Op add(std::uint64_t key, std::uint64_t random) { return zincrby(key, delta(random)); }
  static Op remove(std::uint64_t key, std::uint64_t random) { return zincrby(key, -delta(random)); }
  static Op read(std::uint64_t key) {
    const Member m = member_of(key);
    return seq::SortedSet::zrank({m.data(), m.size()}, false);
  }
  static ItemEffect effect(int type, const Op& op, const Result& r) {
    if (type == bb_read) return {r.ok, 0, 0};
    return {true, static_cast<std::uint64_t>(increment(op)), r.integer};
  }
  static HistoryEvent event(int type, const Op& op, const Result& r) {
    const auto m = static_cast<std::int64_t>(key_of(op.member()));
    if (type == bb_read) return {"zrank", {m, 0}, 1, r.integer, r.ok, 0, 0};
    return {"zincrby", {m, increment(op)}, 2, static_cast<std::int64_t>(r.score), true, 0, 0};
  }
  template <class S>
  static ItemTotals totals(const S& s) {
    ItemTotals t;
    s.for_each_item([&](std::string_view, double score) {
      t.sum += static_cast<std::uint64_t>(static_cast<std::int64_t>(score));
      ++t.count;
    });
    return t;
  }

  struct Reference {
    std::map<std::uint64_t, double> scores;
    Result apply(const Op& op) {
      const std::uint64_t member = key_of(op.member());
      const auto it = scores.find(member);
      Result r;
      if (op.code() == seq::SortedSet::Code::zincrby) {
        r.ok = true;
        r.integer = it == scores.end();
        r.score = it == scores.end() ? (scores[member] = op.score()) : (it->second += op.score());
        return r;
      }
      if (it == scores.end()) return r;
      std::int64_t rank = 0;  // members ordered before it by (score, member)
      for (const auto& [m, s] : scores) rank += s < it->second || (s == it->second && m < member);
      r.ok = true;
      r.integer = rank;
      return r;
    }
    template <class S>
    bool same_contents(const S& s) const {
      std::vector<std::tuple<double, std::uint64_t>> got, want;
      s.for_each_item([&](std::string_view m, double score) { got.emplace_back(score, key_of(m)); });
      for (const auto& [m, score] : scores) want.emplace_back(score, m);
      std::sort(want.begin(), want.end());
      return got == want;  // for_each_item walks in rank order
    }
  };

 private:
  static Op zincrby(std::uint64_t key, std::int64_t by) {
    const Member m = member_of(key);
    return seq::SortedSet::zincrby({m.data(), m.size()}, static_cast<double>(by));
  }
  static std::int64_t increment(const Op& op) { return static_cast<std::int64_t>(op.score()); }
};

}  // namespace cdsb::bench
