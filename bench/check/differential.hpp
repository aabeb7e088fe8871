// Sequential differential test: a random sequence of operations run on a structure and on a
// standard-library reference, every result compared (architecture.md §5). Single-threaded, so a
// mismatch is a plain bug, reported with the operation, its index and the seed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/harness/make_structure.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/uniform.hpp"
#include "cdsbench/set/concepts.hpp"

namespace cdsb::bench {

// One differential run: its seed, length and key range, and the structure variant.
struct DifferentialRun {
  std::uint64_t seed = 1;
  int ops = 1000;
  std::uint64_t key_range = 16;
  std::string reclaimer, allocator;  // which variant of the structure (registry names)
  bool reclaim_eager = true;         // reclaim as soon as allowed: a use-after-free shows
};

// Empty when the structure agreed with std::map on every operation, on its final contents
// (keys, and a map's values) and (when it has one) its invariant check; else what differed.
template <ConcurrentSet S>
std::string set_differential(const DifferentialRun& run) {
  using Key = typename S::key_type;
  const std::uint64_t seed = run.seed, key_range = run.key_range;
  const int ops = run.ops;
  const auto owned = make_structure<S>(1, run.reclaim_eager, key_range);
  S& set = *owned;
  std::map<Key, typename S::mapped_type> reference;
  Xoshiro256StarStar rng;
  rng.seed(seed);
  std::vector<Key> got, want;
  auto where = [&](int i, const char* op, Key k) {
    return std::string(op) + "(" + std::to_string(k) + ") at operation " + std::to_string(i) +
           " (seed " + std::to_string(seed) + ")";
  };
  if constexpr (HasThreadHooks<S>) set.thread_init(0);
  // Operation kinds: insert, erase, contains, a range query where the structure has one,
  // then a map's find, find_or_insert and (where it has one) assign. A map's values are the
  // operation's index, so a value that belongs to another key or to an overwritten write shows.
  constexpr int first_map_kind = HasRangeQuery<S> ? 4 : 3;
  constexpr int op_kinds = first_map_kind + (ConcurrentMap<S> ? 2 : 0) + (HasAssign<S> ? 1 : 0);
  std::string error;
  for (int i = 0; i < ops && error.empty(); ++i) {
    const Key k = static_cast<Key>(1 + uniform_below(rng, key_range));
    const auto v = static_cast<typename S::mapped_type>(ConcurrentMap<S> ? i : k);
    const int kind = static_cast<int>(uniform_below(rng, op_kinds));
    if constexpr (ConcurrentMap<S>) {
      if (kind >= first_map_kind) {
        const auto present = reference.find(k);
        std::string got_text, want_text;
        switch (kind - first_map_kind) {
          case 0: {
            const auto r = set.find(0, k);
            if (r.has_value() != (present != reference.end()) || (r && *r != present->second)) {
              got_text = r ? std::to_string(*r) : "absent";
              want_text = present != reference.end() ? std::to_string(present->second) : "absent";
            }
            break;
          }
          case 1: {
            const auto r = set.find_or_insert(0, k, v);
            const auto e = present != reference.end() ? std::pair{present->second, false} : std::pair{v, true};
            if (e.second) reference.emplace(k, v);
            if (r != e) {
              got_text = std::to_string(r.first) + (r.second ? " inserted" : " found");
              want_text = std::to_string(e.first) + (e.second ? " inserted" : " found");
            }
            break;
          }
          default: {
            if constexpr (HasAssign<S>) {
              const bool r = set.assign(0, k, v), e = present != reference.end();
              if (e) present->second = v;
              if (r != e) got_text = std::to_string(r), want_text = std::to_string(e);
            }
          }
        }
        static constexpr const char* names[] = {"find", "find_or_insert", "assign"};
        if (!got_text.empty())
          error = where(i, names[kind - first_map_kind], k) + ": returned " + got_text + ", std::map " + want_text;
        continue;
      }
    }
    switch (kind) {
      case 0: {
        const bool r = set.insert(0, k, v), e = reference.try_emplace(k, v).second;
        if (r != e) error = where(i, "insert", k) + ": returned " + std::to_string(r) + ", std::map " + std::to_string(e);
        break;
      }
      case 1: {
        const bool r = set.erase(0, k), e = reference.erase(k) == 1;
        if (r != e) error = where(i, "erase", k) + ": returned " + std::to_string(r) + ", std::map " + std::to_string(e);
        break;
      }
      case 2: {
        const bool r = set.contains(0, k), e = reference.contains(k);
        if (r != e) error = where(i, "contains", k) + ": returned " + std::to_string(r) + ", std::map " + std::to_string(e);
        break;
      }
      default:
        if constexpr (HasRangeQuery<S>) {
          const Key hi = k + static_cast<Key>(uniform_below(rng, key_range / 4 + 1));
          set.range_query(0, k, hi, got);
          want.clear();
          for (auto it = reference.lower_bound(k); it != reference.end() && it->first <= hi; ++it)
            want.push_back(it->first);
          std::sort(got.begin(), got.end());
          if (got != want)
            error = where(i, "range_query", k) + ": returned " + std::to_string(got.size()) +
                    " keys, std::map " + std::to_string(want.size());
        }
    }
  }
  if (error.empty()) {
    got.clear();
    set.for_each_key([&](Key k) { got.push_back(k); });
    std::sort(got.begin(), got.end());
    want.clear();
    for (const auto& entry : reference) want.push_back(entry.first);
    if (got != want) error = "final contents differ from std::map (seed " + std::to_string(seed) + ")";
  }
  if constexpr (HasForEachEntry<S>) {
    if (error.empty()) {
      std::map<Key, typename S::mapped_type> entries;
      set.for_each_entry([&](Key k, typename S::mapped_type v) { entries.emplace(k, v); });
      if (entries != reference) error = "final values differ from std::map (seed " + std::to_string(seed) + ")";
    }
  }
  if constexpr (HasInvariantCheck<S>) {
    if (error.empty()) {
      const std::string violation = set.check_invariants();
      if (!violation.empty()) error = "invariant violated: " + violation;
    }
  }
  if constexpr (HasThreadHooks<S>) set.thread_exit(0);
  return error;
}

}  // namespace cdsb::bench
