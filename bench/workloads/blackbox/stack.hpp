// The sequential stack under the black-box workload: add = push(key), remove = pop(),
// read = top(); checked with the "stack" model and against a std::vector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/harness/config.hpp"
#include "bench/workloads/blackbox/common.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/queue/concepts.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/seq/stack.hpp"

namespace cdsb::bench {

template <>
struct BlackBox<seq::Stack> {
  using Op = seq::Stack::Op;
  using Code = seq::Stack::Code;
  static constexpr const char* model = "stack";
  static constexpr std::uint64_t paper_prefill = 200'000;
  static constexpr bool distinct_prefill = false;
  static seq::Stack make(const Config&) { return {}; }
  static Op add(std::uint64_t key, std::uint64_t) { return {Code::push, key}; }
  static Op remove(std::uint64_t, std::uint64_t) { return {Code::pop, 0}; }
  static Op read(std::uint64_t) { return {Code::top, 0}; }
  static ItemEffect effect(int type, const Op& op, const seq::Answer& r) {
    if (type == bb_add) return {true, op.value, 1};
    if (type == bb_remove) return {r.ok, r.ok ? -r.value : 0, r.ok ? -1 : 0};
    return {r.ok, 0, 0};
  }
  static HistoryEvent event(int type, const Op& op, const seq::Answer& r) {
    if (type == bb_add) return {"push", {static_cast<std::int64_t>(op.value), 0}, 1, 0, false, 0, 0};
    return {type == bb_remove ? "pop" : "top", {0, 0}, 0, static_cast<std::int64_t>(r.value), r.ok, 0, 0};
  }
  template <class S>
  static ItemTotals totals(const S& s) {
    return value_totals(s);
  }

  struct Reference {
    std::vector<std::uint64_t> items;  // std::stack cannot be walked for the final comparison
    seq::Answer apply(const Op& op) {
      if (op.code == Code::push) {
        items.push_back(op.value);
        return {true, op.value};
      }
      if (items.empty()) return {false, 0};
      const std::uint64_t v = items.back();
      if (op.code == Code::pop) items.pop_back();
      return {true, v};
    }
    template <class S>
    bool same_contents(const S& s) const {  // bottom to top
      std::vector<std::uint64_t> got;
      s.for_each_item([&](std::uint64_t v) { got.push_back(v); });
      return got == items;
    }
  };
};

// A concurrent stack (push/pop/top) as a black-box method over the sequential stack's
// operations: the LF baseline beside NR, SL, RWL, FC and FC+ over seq::Stack. The library's
// stacks know no seq/ type; this adapter maps the operations.
template <ConcurrentStack S>
class ConcurrentStackMethod {
 public:
  using structure_type = seq::Stack;
  using reclaimer_type = typename S::reclaimer_type;
  static constexpr std::size_t node_bytes = S::node_bytes;

  ConcurrentStackMethod(int max_threads, reclaim::ReclaimOptions options) : stack_(max_threads, options) {}

  seq::Answer execute(int tid, const seq::Stack::Op& op) {
    if (op.code == seq::Stack::Code::push) {
      stack_.push(tid, op.value);
      return {true, op.value};
    }
    const auto v = op.code == seq::Stack::Code::pop ? stack_.pop(tid) : stack_.top(tid);
    return {v.has_value(), v.value_or(0)};
  }

  const S& structure() const noexcept { return stack_; }  // for_each_item: bottom to top
  std::string check_invariants() const { return stack_.check_invariants(); }
  std::size_t memory_bytes() const { return stack_.memory_bytes(); }
  StatsReport stats() const { return stack_.stats(); }

 private:
  S stack_;
};

}  // namespace cdsb::bench
