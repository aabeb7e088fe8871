// The contract between concurrent sets/maps and everything that uses them (architecture.md §3).
//
// Keys live in [1, key_range]; a structure may reserve 0 and the maximum key as sentinels.
// Thread ids are dense (0..max_threads-1) and passed to every operation, so a structure
// never needs a thread-local lookup on its hot path.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cdsb {

template <class S>
concept ConcurrentSet =
    requires(S& s, int tid, typename S::key_type k, typename S::mapped_type v) {
      { s.insert(tid, k, v) } -> std::same_as<bool>;  // true iff k was absent and is now present
      { s.erase(tid, k) } -> std::same_as<bool>;      // true iff k was present and is now absent
      { s.contains(tid, k) } -> std::same_as<bool>;
    };

// A map: a set whose keys carry values, with the lookup dedup's pattern needs. Every
// operation is linearizable.
template <class S>
concept ConcurrentMap =
    ConcurrentSet<S> &&
    requires(S& s, int tid, typename S::key_type k, typename S::mapped_type v) {
      { s.find(tid, k) } -> std::same_as<std::optional<typename S::mapped_type>>;  // k's value
      // k's value and false if k was present, else (v, true) with k now mapped to v: the
      // dedup pattern (look a digest up, insert it if absent, learn whether another thread won).
      { s.find_or_insert(tid, k, v) } -> std::same_as<std::pair<typename S::mapped_type, bool>>;
    };

// A map's assign: true iff k was present and now maps to v (dedup stores the compressed chunk
// back into its entry: the study's atomic_update); never inserts. Linearizable. Every map of
// ours has it; a peer without a linearizable one (a value written in place, unsynchronised with
// readers) does not offer it.
template <class S>
concept HasAssign = ConcurrentMap<S> && requires(S& s, int tid, typename S::key_type k, typename S::mapped_type v) {
  { s.assign(tid, k, v) } -> std::same_as<bool>;
};

// How many keys a structure should expect to hold, given at construction to those that take
// it (a hash map sizes its table by it; one whose table is fixed keeps that size for good).
struct SizeHint {
  std::uint64_t keys = 0;  // 0: no hint, the structure's default
};

// Optional capabilities: detected, never required.

// Keys in [lo, hi] appended to out (cleared first); returns how many.
template <class S>
concept HasRangeQuery =
    requires(S& s, int tid, typename S::key_type k, std::vector<typename S::key_type>& out) {
      { s.range_query(tid, k, k, out) } -> std::same_as<std::size_t>;
    };

// Called by each thread before its first and after its last operation.
template <class S>
concept HasThreadHooks = requires(S& s, int tid) {
  s.thread_init(tid);
  s.thread_exit(tid);
};

// Quiescent helpers: called only while no operation runs.
template <class S>
concept HasForEachKey = requires(const S& s, void (*fn)(typename S::key_type)) {
  s.for_each_key(fn);
};

// fn(key, value) for each entry of a map.
template <class S>
concept HasForEachEntry = requires(const S& s, void (*fn)(typename S::key_type, typename S::mapped_type)) {
  s.for_each_entry(fn);
};

// fn(key, depth) for each key in the set, depth being the nodes a search for the key reads
// from the structure's entry node down to the node that holds it, sentinels on the way
// included (trees; for the benchmark's shape figures).
template <class S>
concept HasSearchDepths = requires(const S& s, void (*fn)(typename S::key_type, std::size_t)) {
  s.for_each_key_depth(fn);
};

template <class S>
concept HasInvariantCheck = requires(const S& s) {
  { s.check_invariants() } -> std::same_as<std::string>;  // empty when sound
};

}  // namespace cdsb
