// Michael's lock-free hash map.
//
// M. Michael, "High Performance Dynamic Lock-Free Hash Tables and List-Based Sets", SPAA 2002:
// a fixed array of buckets, each a lock-free sorted chain of the Harris-Michael list
// (set/list/harris_michael.hpp, whose algorithm this map runs unchanged), all chains sharing
// one reclaimer. An operation hashes its key to a bucket and runs the list's operation on that
// chain; so each is linearizable and lock-free exactly as the list's, with the same
// reclaimers (none, ebr, hp with 3 slots, ibr).
//
// The bucket array never grows (the paper's design: no resize). Its size is the power of two
// at or above the expected number of keys (SizeHint; load factor <= 1 at that size, 2^16
// buckets without a hint), fixed for the map's life; a bucket is one 8-byte link, so buckets
// cost 8 to 16 bytes per expected key. The bucket index is the hash's low bits, as in every
// map here, so that the 32-bit named hashes (parsec3, bytesum) index it as they did dedup's.
// Keys: 64-bit integers, digests or byte strings (std::string_view, copied into their node:
// set/stored_key.hpp); a chain is sorted by the key itself.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/hash/hashes.hpp"
#include "cdsbench/set/list/harris_michael.hpp"

namespace cdsb {

template <reclaim::Reclaimer R, class Key = std::uint64_t, class Value = std::uint64_t, class Hash = hash::Even>
class MichaelHashMap {
  using Chains = detail::HarrisMichaelChains<R, Key, Value>;
  using Link = typename Chains::Link;

 public:
  using key_type = Key;
  using mapped_type = Value;
  using hash_type = Hash;
  using reclaimer_type = R;
  static constexpr int hazard_slots = Chains::hazard_slots;
  static constexpr std::size_t node_bytes = Chains::node_bytes;
  static constexpr std::uint64_t default_buckets = std::uint64_t{1} << 16;
  static constexpr std::uint64_t max_buckets = std::uint64_t{1} << 40;

  explicit MichaelHashMap(int max_threads, reclaim::ReclaimOptions options = {}, SizeHint size = {}, Hash hash = {})
      : chains_(max_threads, options),
        bucket_bits_(std::countr_zero(std::bit_ceil(size.keys ? std::min(size.keys, max_buckets) : default_buckets))),
        buckets_(std::make_unique<Link[]>(bucket_count())),
        hash_(hash) {}

  MichaelHashMap(const MichaelHashMap&) = delete;
  MichaelHashMap& operator=(const MichaelHashMap&) = delete;

  ~MichaelHashMap() {
    for (std::uint64_t b = 0; b < bucket_count(); ++b) chains_.free_chain(buckets_[b]);
  }

  // Each operation: linearizable and lock-free, as the list's (HarrisMichaelChains).
  bool insert(int tid, Key key, Value value) { return chains_.insert(tid, bucket(key), key, value); }
  bool erase(int tid, Key key) { return chains_.erase(tid, bucket(key), key); }
  bool contains(int tid, Key key) { return chains_.contains(tid, bucket(key), key); }
  std::optional<Value> find(int tid, Key key) { return chains_.find_value(tid, bucket(key), key); }
  std::pair<Value, bool> find_or_insert(int tid, Key key, Value value) {
    Value existing{};
    return chains_.insert(tid, bucket(key), key, value, &existing) ? std::pair{value, true} : std::pair{existing, false};
  }
  bool assign(int tid, Key key, Value value) { return chains_.assign(tid, bucket(key), key, value); }

  std::uint64_t bucket_count() const { return std::uint64_t{1} << bucket_bits_; }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for (std::uint64_t b = 0; b < bucket_count(); ++b) chains_.for_each_entry(buckets_[b], fn);
  }
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for_each_entry([&](const Key& k, const Value&) { fn(k); });
  }

  // Each chain sound (sorted, no marked node linked) and each key in its own bucket.
  std::string check_invariants() const {
    for (std::uint64_t b = 0; b < bucket_count(); ++b) {
      const std::string where = "bucket " + std::to_string(b) + ": ";
      std::string violation = chains_.check_chain(buckets_[b], where);
      chains_.for_each_entry(buckets_[b], [&](const Key& k, const Value&) {
        if (violation.empty() && index_of(k) != b) violation = where + "holds a key that hashes to bucket " + std::to_string(index_of(k));
      });
      if (!violation.empty()) return violation;
    }
    return {};
  }

  // The reclaimer's and the chains' counters, and occupancy: how many buckets hold a key and
  // the longest chain.
  StatsReport stats() const {
    StatsReport r = chains_.stats();
    std::uint64_t used = 0, longest = 0;
    for (std::uint64_t b = 0; b < bucket_count(); ++b) {
      std::uint64_t length = 0;
      chains_.for_each_entry(buckets_[b], [&](const Key&, const Value&) { ++length; });
      used += length > 0;
      longest = std::max(longest, length);
    }
    r.values.insert(r.values.end(), {{"buckets", bucket_count()}, {"buckets_used", used}, {"longest_chain", longest}});
    return r;
  }

 private:
  std::uint64_t index_of(const Key& key) const { return hash_(key) & (bucket_count() - 1); }
  Link& bucket(const Key& key) { return buckets_[index_of(key)]; }

  Chains chains_;
  const int bucket_bits_;
  const std::unique_ptr<Link[]> buckets_;
  [[no_unique_address]] const Hash hash_;
};

static_assert(HasAssign<MichaelHashMap<reclaim::Archetype<false>>>);

}  // namespace cdsb
