// The skip-list dictionary under the black-box workload: add = insert(key, value), remove =
// erase(key), read = find(key); checked with the "map" model and against a std::map.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/harness/config.hpp"
#include "bench/workloads/blackbox/common.hpp"
#include "cdsbench/seq/skiplist_dict.hpp"

namespace cdsb::bench {

template <>
struct BlackBox<seq::SkipListDict> {
  using Op = seq::SkipListDict::Op;
  using Code = seq::SkipListDict::Code;
  static constexpr const char* model = "map";
  static constexpr std::uint64_t paper_prefill = 200'000;
  static constexpr bool distinct_prefill = true;
  // A (key, value) item's contribution to the checksum.
  static std::uint64_t item(std::uint64_t k, std::uint64_t v) { return k * 0x9e3779b97f4a7c15ULL + v; }
  static seq::SkipListDict make(const Config&) { return {}; }
  static Op add(std::uint64_t key, std::uint64_t random) { return {Code::insert, key, 1 + random % 1'000'000}; }
  static Op remove(std::uint64_t key, std::uint64_t) { return {Code::erase, key, 0}; }
  static Op read(std::uint64_t key) { return {Code::find, key, 0}; }
  static ItemEffect effect(int type, const Op& op, const seq::Answer& r) {
    if (!r.ok) return {};
    if (type == bb_add) return {true, item(op.key, op.value), 1};
    if (type == bb_remove) return {true, -item(op.key, r.value), -1};
    return {true, 0, 0};
  }
  static HistoryEvent event(int type, const Op& op, const seq::Answer& r) {
    const auto k = static_cast<std::int64_t>(op.key);
    if (type == bb_add) return {"insert", {k, static_cast<std::int64_t>(op.value)}, 2, r.ok, true, 0, 0};
    if (type == bb_remove) return {"erase", {k, 0}, 1, r.ok, true, 0, 0};
    return {"find", {k, 0}, 1, static_cast<std::int64_t>(r.value), r.ok, 0, 0};
  }
  template <class S>
  static ItemTotals totals(const S& s) {
    ItemTotals t;
    s.for_each_item([&](std::uint64_t k, std::uint64_t v) {
      t.sum += item(k, v);
      ++t.count;
    });
    return t;
  }

  struct Reference {
    std::map<std::uint64_t, std::uint64_t> items;
    seq::Answer apply(const Op& op) {
      const auto it = items.find(op.key);
      switch (op.code) {
        case Code::insert:
          if (it != items.end()) return {false, it->second};
          items.emplace(op.key, op.value);
          return {true, op.value};
        case Code::erase: {
          if (it == items.end()) return {false, 0};
          const std::uint64_t v = it->second;
          items.erase(it);
          return {true, v};
        }
        default:
          return it == items.end() ? seq::Answer{false, 0} : seq::Answer{true, it->second};
      }
    }
    template <class S>
    bool same_contents(const S& s) const {
      std::vector<std::pair<std::uint64_t, std::uint64_t>> got;
      s.for_each_item([&](std::uint64_t k, std::uint64_t v) { got.emplace_back(k, v); });
      return got == std::vector<std::pair<std::uint64_t, std::uint64_t>>(items.begin(), items.end());
    }
  };
};

}  // namespace cdsb::bench
