// libcuckoo's concurrent cuckoo hash map behind our ConcurrentMap interface (architecture.md
// §3): libcuckoo 0.3.1 as Debian ships it (libcuckoo-dev, header-only), run through the same
// loop, prefill, validation and correctness matrix as our maps.
//
//   libcuckoo.map  libcuckoo::cuckoohash_map (Li, Andersen, Kaminsky & Freedman, "Algorithmic
//                  Improvements for Fast Concurrent Cuckoo Hashing", EuroSys 2014): a bucketed
//                  (4 slots) cuckoo table; each operation locks the stripes of its key's two
//                  candidate buckets (spin locks), a displacement path is found without locks
//                  (BFS) and then moved under them; the table doubles under all its locks.
//
// Every operation runs under its buckets' locks, so each is linearizable and blocking. The
// map is built with our `even` hash (the default std::hash<uint64_t> of libstdc++ is the
// identity, whose low bits libcuckoo would use for both the bucket and the 8-bit tag) and
// sized for the expected key count (SizeHint, as the fixed-size maps are; libcuckoo's default
// reserves 2^16 slots, which made each of lincheck's small histories build a 1 MiB table),
// with a quarter more slots: a cuckoo table sized exactly for its keys can fail an insert and
// double below that count, and libcuckoo 0.3.1's doubling races with concurrent operations
// (TSan, in a stress trial of the TSan tree: `lock_one` reads the lock list that
// `maybe_resize_locks` appends to; libcuckoo issue #107 and PR #173 discuss its races with
// resizing), so trials that stay near their expected size do not double it. It holds no
// nodes (items live in the table's slots), so nothing is reclaimed later:
// registered as `immediate`.
#pragma once

#include <libcuckoo/cuckoohash_map.hh>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "bench/adapters/peer_checks.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/hash/hashes.hpp"

namespace cdsb::bench::peers {

// Key: 64-bit integers or digests; Hash: one of our named hashes (hashes.hpp).
template <class Key = std::uint64_t, class Hash = hash::Even>
class LibcuckooMap {
  struct HashFn {
    std::size_t operator()(const Key& k) const { return Hash{}(k); }
  };
  using Map = libcuckoo::cuckoohash_map<Key, std::uint64_t, HashFn>;

 public:
  using key_type = Key;
  using mapped_type = std::uint64_t;
  using hash_type = Hash;

  LibcuckooMap(int, SizeHint size) : map_(std::max<std::uint64_t>(size.keys + size.keys / 4, 16)) {}

  // Each operation: linearizable (under its two buckets' locks); blocking.
  bool insert(int, key_type k, mapped_type v) { return map_.insert(k, v); }
  bool erase(int, key_type k) { return map_.erase(k); }
  bool contains(int, key_type k) { return map_.contains(k); }
  std::optional<mapped_type> find(int, key_type k) {
    mapped_type v;
    if (!map_.find(k, v)) return std::nullopt;
    return v;
  }
  // uprase_fn inserts v when k is absent, else runs fn on k's value under the locks (fn
  // returns false: keep the entry).
  std::pair<mapped_type, bool> find_or_insert(int, key_type k, mapped_type v) {
    mapped_type found = v;
    const bool inserted = map_.uprase_fn(k, [&](mapped_type& existing) {
      found = existing;
      return false;
    }, v);
    return {found, inserted};
  }
  bool assign(int, key_type k, mapped_type v) { return map_.update(k, v); }

  // Quiescent: lock_table() takes every lock for the walk (nothing else runs).
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    const auto table = map_.lock_table();
    for (const auto& kv : table) fn(kv.first, kv.second);
  }
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for_each_entry([&](const key_type& k, mapped_type) { fn(k); });
  }

  // Quiescent: size() agrees with the items.
  std::string check_invariants() const { return size_matches_iteration(*this, map_.size()); }

  // The table's slots (buckets x 4) at the end.
  StatsReport stats() const {
    StatsReport r;
    r.values = {{"buckets", map_.bucket_count()}, {"slots", map_.capacity()}};
    return r;
  }

 private:
  mutable Map map_;  // lock_table() is not const; it is called only while quiescent
};

}  // namespace cdsb::bench::peers
