// The priority queues under the black-box workload: add = insert(key), remove =
// delete_min(), read = find_min(); checked with the "pqueue" model and against a
// std::multiset.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/harness/config.hpp"
#include "bench/workloads/blackbox/common.hpp"
#include "cdsbench/seq/pairing_heap.hpp"
#include "cdsbench/seq/skiplist_pq.hpp"

namespace cdsb::bench {

template <class Q>
struct PriorityQueueBlackBox {
  using Op = typename Q::Op;
  using Code = typename Q::Code;
  static constexpr const char* model = "pqueue";
  static constexpr std::uint64_t paper_prefill = 200'000;
  static constexpr bool distinct_prefill = false;
  static Q make(const Config&) { return Q(); }
  static Op add(std::uint64_t key, std::uint64_t) { return {Code::insert, key}; }
  static Op remove(std::uint64_t, std::uint64_t) { return {Code::delete_min, 0}; }
  static Op read(std::uint64_t) { return {Code::find_min, 0}; }
  static ItemEffect effect(int type, const Op& op, const seq::Answer& r) {
    if (type == bb_add) return {true, op.value, 1};
    if (type == bb_remove) return {r.ok, r.ok ? -r.value : 0, r.ok ? -1 : 0};
    return {r.ok, 0, 0};
  }
  static HistoryEvent event(int type, const Op& op, const seq::Answer& r) {
    if (type == bb_add) return {"insert", {static_cast<std::int64_t>(op.value), 0}, 1, 0, false, 0, 0};
    return {type == bb_remove ? "delete_min" : "find_min", {0, 0}, 0, static_cast<std::int64_t>(r.value), r.ok, 0, 0};
  }
  template <class S>
  static ItemTotals totals(const S& s) {
    return value_totals(s);
  }

  struct Reference {
    std::multiset<std::uint64_t> items;
    seq::Answer apply(const Op& op) {
      switch (op.code) {
        case Code::insert:
          items.insert(op.value);
          return {true, op.value};
        case Code::delete_min: {
          if (items.empty()) return {false, 0};
          const std::uint64_t v = *items.begin();
          items.erase(items.begin());
          return {true, v};
        }
        default:
          return items.empty() ? seq::Answer{false, 0} : seq::Answer{true, *items.begin()};
      }
    }
    template <class S>
    bool same_contents(const S& s) const {
      std::vector<std::uint64_t> got;
      s.for_each_item([&](std::uint64_t v) { got.push_back(v); });
      std::sort(got.begin(), got.end());
      return got == std::vector<std::uint64_t>(items.begin(), items.end());
    }
  };
};

template <>
struct BlackBox<seq::SkipListPq> : PriorityQueueBlackBox<seq::SkipListPq> {};
template <>
struct BlackBox<seq::PairingHeap> : PriorityQueueBlackBox<seq::PairingHeap> {};

}  // namespace cdsb::bench
