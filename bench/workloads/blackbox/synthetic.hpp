// The paper's synthetic buffer under the black-box workload: add = update(key, +delta),
// remove = update(key, -delta), read = read(key). Its items are the deltas of its updates
// (sum and count kept in its hot entry; its invariant check ties every entry to them).
// Checked with the "oracle" model and against plain counters written from its specification.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/harness/config.hpp"
#include "bench/workloads/blackbox/common.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/seq/fingerprint.hpp"
#include "cdsbench/seq/synthetic.hpp"

namespace cdsb::bench {

template <>
struct BlackBox<seq::Synthetic> {
  using Op = seq::Synthetic::Op;
  using Code = seq::Synthetic::Code;
  static constexpr const char* model = "oracle";
  static constexpr std::uint64_t paper_prefill = 0;
  static constexpr bool distinct_prefill = false;
  static constexpr std::uint64_t max_entries = std::uint64_t{1} << 20;  // --key-range limit
  static seq::Synthetic make(const Config& c) { return seq::Synthetic(c.key_range); }
  static std::int64_t delta(std::uint64_t random) { return 1 + static_cast<std::int64_t>(random % 16); }
  static Op add(std::uint64_t key, std::uint64_t random) { return {Code::update, key, delta(random)}; }
  static Op remove(std::uint64_t key, std::uint64_t random) { return {Code::update, key, -delta(random)}; }
  static Op read(std::uint64_t key) { return {Code::read, key, 0}; }
  static ItemEffect effect(int type, const Op& op, const seq::Synthetic::Result&) {
    if (type == bb_read) return {true, 0, 0};
    return {true, static_cast<std::uint64_t>(op.delta), op.delta > 0 ? 1 : -1};
  }
  static HistoryEvent event(int type, const Op& op, const seq::Synthetic::Result& r) {
    const auto fp = static_cast<std::int64_t>(r.fingerprint);
    if (type == bb_read) return {"read", {0, 0}, 0, fp, true, 0, 0};
    return {"update", {static_cast<std::int64_t>(op.key), op.delta}, 2, fp, true, 0, 0};
  }
  template <class S>
  static ItemTotals totals(const S& s) {
    return {s.delta_sum(), s.delta_count()};
  }

  // Which entries an operation touches, their sums and the fingerprint, with plain counters.
  struct Reference {
    explicit Reference(std::uint64_t n)
        : counters(n), c(std::min<std::uint64_t>(seq::Synthetic::default_touched, n)), stride(std::max<std::uint64_t>(n / c, 1)) {}
    std::vector<std::uint64_t> counters;
    std::uint64_t c, stride, fingerprint = 0, sum = 0;
    std::int64_t count = 0;
    seq::Synthetic::Result apply(const Op& op) {
      const std::uint64_t n = counters.size();
      const std::uint64_t start = cdsb::detail::splitmix64_mix(op.key) % n;
      seq::Synthetic::Result r;
      const bool update = op.code == Code::update;
      for (std::uint64_t j = 0; j < c; ++j) {
        std::uint64_t& e = counters[(start + j * stride) % n];
        if (update) e += static_cast<std::uint64_t>(op.delta);
        r.touched_sum += e;
      }
      if (update) {
        fingerprint = seq::fingerprint_step(fingerprint, {op.key, static_cast<std::uint64_t>(op.delta)});
        sum += static_cast<std::uint64_t>(op.delta);
        count += op.delta > 0 ? 1 : -1;
      }
      r.fingerprint = fingerprint;
      return r;
    }
    template <class S>
    bool same_contents(const S& s) const {
      return s.fingerprint() == fingerprint && s.delta_sum() == sum && s.delta_count() == count;
    }
  };
};

}  // namespace cdsb::bench
