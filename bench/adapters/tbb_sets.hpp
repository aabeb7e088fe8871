// oneTBB peers behind our ConcurrentSet interface (architecture.md §3): oneTBB 2021.8 as Debian
// ships it (libtbb-dev), run through the same loop, prefill, validation and correctness
// matrix as our structures.
//
//   tbb.concurrent_map       tbb::concurrent_map: a skip list; insert, find and traversal are
//                            thread-safe, but its only erase is `unsafe_erase`, which must not
//                            run beside any other operation. The adapter says so
//                            (concurrent_erase = false): the command line refuses `--delete` > 0
//                            when more than one thread runs, steady prefill ages the shape on
//                            one thread (bench/workloads/set_workload.hpp), lincheck and the stress test
//                            run it on inserts and searches. With one thread it runs any mix,
//                            slowly: unsafe_erase finds the erased node's predecessors by walking
//                            each of its levels from the head (fill_prev_array_for_existing_node
//                            in oneTBB 2021.8), O(n) for the many nodes of height 1; at 50%
//                            updates on one thread, 2.1 M ops/s at 2,000 keys, 0.18 M at 20,000,
//                            0.002 M at 200,000 (`cdsbench --ds tbb.concurrent_map --key-range
//                            200000 --insert 25 --delete 25 --prefill insert-only`).
//   tbb.concurrent_unordered_map  tbb::concurrent_unordered_map: a split-ordered list (as
//                            split_ordered_map); insert and find are thread-safe, erase is
//                            unsafe_erase (the concurrent_map rule: deletes with one thread
//                            only), and there is no synchronised update of a value, so it
//                            registers without assign. Built with our `even` hash.
//   tbb.concurrent_hash_map  tbb::concurrent_hash_map: oneTBB's structure with a thread-safe
//                            erase (a readers-writer lock per bucket and per item): not ordered,
//                            so not a search-tree peer, but the oneTBB baseline for updates, and
//                            a map peer (find, find_or_insert and assign under its item locks).
//
// Nothing is reclaimed later: concurrent_hash_map frees an erased item once no accessor holds
// it, concurrent_map's unsafe_erase at once, so both are registered as `immediate`. Nodes come
// from the process's malloc through std::allocator (oneTBB's default is tbb_allocator, i.e.
// tbbmalloc when it is installed; our structures' `system` allocator is malloc, so the peers
// use it too). concurrent_map's nodes are counted (CountingAllocator: one block per node and
// tower); concurrent_hash_map allocates nodes and bucket arrays through the same allocator, so
// its nodes are not counted. concurrent_map draws node heights from per-thread generators
// seeded with time(nullptr): its shape is not a function of --seed.
#pragma once

#include <oneapi/tbb/concurrent_hash_map.h>
#include <oneapi/tbb/concurrent_map.h>
#include <oneapi/tbb/concurrent_unordered_map.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "bench/adapters/counting_allocator.hpp"
#include "bench/adapters/peer_checks.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/set/hash/hashes.hpp"

namespace cdsb::bench::peers {

class TbbConcurrentMap {
  struct NodeTag {};
  using Value = std::pair<const std::uint64_t, std::uint64_t>;
  using Map = tbb::concurrent_map<std::uint64_t, std::uint64_t, std::less<std::uint64_t>, CountingAllocator<Value, NodeTag>>;
  struct Internals : Map {
    static constexpr std::size_t node_bytes = sizeof(typename Map::list_node_type);
    static constexpr std::size_t max_level = Map::max_level;
  };

 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  // unsafe_erase: only while no other thread runs an operation (see the top).
  static constexpr bool concurrent_erase = false;

  explicit TbbConcurrentMap(int) {}

  // Linearizable; lock-free (oneTBB's skip-list insert: CAS per level).
  bool insert(int, key_type k, mapped_type v) { return map_.emplace(k, v).second; }
  // NOT thread-safe: oneTBB's unsafe_erase; the harness runs it only while no other thread
  // operates (one thread, or thread 0 alone between prefill barriers).
  bool erase(int, key_type k) { return map_.unsafe_erase(k) == 1; }
  // Linearizable; wait-free traversal of the skip list.
  bool contains(int, key_type k) { return map_.contains(k); }

  // Quiescent.
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for (const auto& kv : map_) fn(kv.first);
  }

  // Quiescent: keys in strictly increasing order along the bottom level.
  std::string check_invariants() const {
    bool first = true;
    key_type last = 0;
    std::uint64_t index = 0;
    for (const auto& kv : map_) {
      if (!first && !(last < kv.first))
        return "keys out of order at position " + std::to_string(index) + " (" + std::to_string(last) + " then " +
               std::to_string(kv.first) + ")";
      first = false;
      last = kv.first;
      ++index;
    }
    return {};
  }

  // Quiescent: nodes through the allocator since construction (the head node included).
  StatsReport stats() const {
    const AllocationTotals nodes = nodes_.now();
    StatsReport r;
    r.values = {{"nodes_allocated", nodes.allocated}, {"nodes_freed", nodes.freed}};
    return r;
  }

  static std::string layout() {
    return "node " + std::to_string(Internals::node_bytes) + " B + 8 B per level, one block; up to " +
           std::to_string(Internals::max_level) + " levels";
  }

 private:
  AllocationSince<NodeTag> nodes_;
  Map map_;
};

class TbbConcurrentUnorderedMap {
  struct EvenHash {
    std::size_t operator()(std::uint64_t k) const { return hash::Even{}(k); }
  };
  using Value = std::pair<const std::uint64_t, std::uint64_t>;
  using Map = tbb::concurrent_unordered_map<std::uint64_t, std::uint64_t, EvenHash, std::equal_to<std::uint64_t>,
                                            std::allocator<Value>>;

 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  // unsafe_erase: only while no other thread runs an operation (see the top).
  static constexpr bool concurrent_erase = false;

  explicit TbbConcurrentUnorderedMap(int) {}

  // Linearizable; lock-free (oneTBB's split-ordered list: a CAS to link).
  bool insert(int, key_type k, mapped_type v) { return map_.emplace(k, v).second; }
  // NOT thread-safe: oneTBB's unsafe_erase; run only while no other thread operates.
  bool erase(int, key_type k) { return map_.unsafe_erase(k) == 1; }
  // Linearizable; wait-free traversal.
  bool contains(int, key_type k) { return map_.contains(k); }
  // Linearizable: a value is written once, before its node is linked, and never changed.
  std::optional<mapped_type> find(int, key_type k) {
    const auto it = map_.find(k);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  // Linearizable: emplace links the new item or finds the present one; lock-free.
  std::pair<mapped_type, bool> find_or_insert(int, key_type k, mapped_type v) {
    const auto [it, inserted] = map_.emplace(k, v);
    return {it->second, inserted};
  }

  // Quiescent.
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for (const auto& kv : map_) fn(kv.first, kv.second);
  }
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for (const auto& kv : map_) fn(kv.first);
  }

  // Quiescent: every item once, and size() agrees with the items.
  std::string check_invariants() const { return size_matches_iteration(*this, map_.size()); }

 private:
  Map map_;
};

// Key: 64-bit integers (hashed by oneTBB's own tbb_hash_compare, as shipped), digests or byte
// strings, hashed by one of our named hashes (Hash), as the dedup study ran oneTBB's map with
// dedup's. A byte-string key (std::string_view at the interface) is stored as a std::string and
// looked up without a copy (the hash-compare is transparent: oneTBB's find, count and erase
// take the view); an insert copies it, as our maps do.
template <class Key = std::uint64_t, class Hash = void>
class TbbConcurrentHashMap {
  static constexpr bool byte_keys = std::is_same_v<Key, std::string_view>;
  using Stored = std::conditional_t<byte_keys, std::string, Key>;
  template <class A>
  static decltype(auto) as_key(const A& k) {
    if constexpr (byte_keys) return std::string_view(k);
    else return (k);
  }
  struct NamedHashCompare {
    using is_transparent = void;
    template <class A>
    std::size_t hash(const A& k) const {
      return Hash{}(as_key(k));
    }
    template <class A, class B>
    bool equal(const A& a, const B& b) const {
      return as_key(a) == as_key(b);
    }
  };
  using HashCompare = std::conditional_t<std::is_void_v<Hash>, tbb::tbb_hash_compare<Key>, NamedHashCompare>;
  using Value = std::pair<const Stored, std::uint64_t>;
  using Map = tbb::concurrent_hash_map<Stored, std::uint64_t, HashCompare, std::allocator<Value>>;

 public:
  using key_type = Key;
  using mapped_type = std::uint64_t;
  using hash_type = Hash;

  explicit TbbConcurrentHashMap(int) {}

  // Linearizable; blocking (the bucket's readers-writer lock).
  bool insert(int, key_type k, mapped_type v) { return map_.insert(Value{Stored(k), v}); }
  // Linearizable; blocking (the bucket's lock, then the item's, which waits for its readers).
  bool erase(int, key_type k) { return map_.erase(k); }
  // Linearizable; blocking (the bucket's lock, shared).
  bool contains(int, key_type k) { return map_.count(k) != 0; }
  // Linearizable; blocking (the item's lock, shared, held while the value is read).
  std::optional<mapped_type> find(int, key_type k) {
    typename Map::const_accessor item;
    if (!map_.find(item, k)) return std::nullopt;
    return item->second;
  }
  // Linearizable: oneTBB's insert with an accessor either inserts or finds, and holds the
  // item's lock (shared) while the value is read; blocking.
  // A byte key is looked up first, so that a key present costs no copy (linearized at that
  // find); otherwise the insert, which finds or inserts it, is the linearization point.
  std::pair<mapped_type, bool> find_or_insert(int, key_type k, mapped_type v) {
    typename Map::const_accessor item;
    if constexpr (byte_keys)
      if (map_.find(item, k)) return {item->second, false};
    const bool inserted = map_.insert(item, Value{Stored(k), v});
    return {item->second, inserted};
  }
  // Linearizable: the value is written under the item's exclusive lock; blocking.
  bool assign(int, key_type k, mapped_type v) {
    typename Map::accessor item;
    if (!map_.find(item, k)) return false;
    item->second = v;
    return true;
  }

  // Quiescent.
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for (const auto& kv : map_) fn(kv.first);
  }
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for (const auto& kv : map_) fn(kv.first, kv.second);
  }

  // Quiescent: every item once, and size() agrees with the items.
  std::string check_invariants() const { return size_matches_iteration(*this, map_.size()); }

 private:
  Map map_;
};

}  // namespace cdsb::bench::peers
