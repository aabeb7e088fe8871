// What the black-box workload needs to know of a sequential structure, declared once: the
// generic operations and their effect on the multiset of items. Each sequential structure
// gives all its black-box knowledge in one header beside this one (the paper's mapping of
// add / remove / read onto its operations, its validation totals, its history events and the
// standard-library reference the differential test compares it with).
#pragma once

#include <cstdint>

#include "bench/workloads/op_mix.hpp"

namespace cdsb::bench {

// The generic operations, numbered as OpMix draws them: reads are the rest.
enum BlackBoxOp : int { bb_read = op_read, bb_add = op_insert, bb_remove = op_delete };

// What one operation did to the multiset of items: whether it succeeded, and the change of
// the item checksum (modulo 2^64) and of the item count.
struct ItemEffect {
  bool success = false;
  std::uint64_t sum = 0;
  std::int64_t count = 0;
};

struct ItemTotals {
  std::uint64_t sum = 0;
  std::int64_t count = 0;
};

// The totals of a structure whose items are single values (for_each_item(fn(value))).
template <class S>
ItemTotals value_totals(const S& s) {
  ItemTotals t;
  s.for_each_item([&](std::uint64_t v) {
    t.sum += v;
    ++t.count;
  });
  return t;
}

// Specialised once per sequential structure (blackbox/*.hpp). Members:
//   Op, model (the checker's), paper_prefill, distinct_prefill, make(Config),
//   add(key, random), remove(key, random), read(key) -> Op,
//   effect(type, op, result) -> ItemEffect, event(type, op, result) -> HistoryEvent,
//   totals(structure) -> ItemTotals, and Reference: apply(op) -> result, same_contents(s).
template <class D>
struct BlackBox;

}  // namespace cdsb::bench
