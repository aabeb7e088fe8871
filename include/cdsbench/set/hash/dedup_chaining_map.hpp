// PARSEC dedup's hash table: the baseline of the dedup study (Feldman et al., SPLASH 2013).
//
// The design of PARSEC 3.0's `hashtable.c` (pthreads build), rebuilt here: a fixed array of
// bucket heads, each a singly linked chain of entries (key, value, 32-bit hash, next), new
// entries pushed at the chain's head; a second array of one mutex per bucket
// (`hashtable_getlock` returns the key's bucket's mutex, which dedup takes around its
// search-then-insert); no resize (dedup builds it without ENABLE_DYNAMIC_EXPANSION). The
// bucket count is the first prime of PARSEC's table (53, 97, 193, ..., 1,610,612,741) above the
// requested minimum: dedup asks for 65,536 and gets 98,317 (the default here); the harness asks
// for its expected key count (SizeHint). The bucket index is PARSEC's: the user hash's low 32
// bits, spread by the supplemental hash PARSEC took from Java 1.4's HashMap, modulo the prime.
// A search compares the stored 32-bit hash before the key, as PARSEC's does. Keys: 64-bit
// integers, digests, or byte strings (an entry keeps a copy: set/stored_key.hpp).
//
// Every operation takes its bucket's mutex (std::mutex, i.e. the same pthread mutex) for its
// whole length, searches included (dedup searches under the lock too): each is linearizable
// at its critical section, and blocking. Entries are freed at once, under or after the lock
// (no reader runs without it), so the map has no reclaimer: it is registered as `immediate`.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/hash/hashes.hpp"
#include "cdsbench/set/stored_key.hpp"

namespace cdsb {

template <class Key = std::uint64_t, class Value = std::uint64_t, class Hash = hash::Even>
class DedupChainingMap {
  struct Entry {
    Entry(const Key& k, const Value& v, std::uint32_t h, Entry* n) : key(k), value(v), hash(h), next(n) {}
    const stored_key_t<Key> key;  // a byte string's own copy (stored_key.hpp)
    Value value;
    std::uint32_t hash;
    Entry* next;
  };

 public:
  using key_type = Key;
  using mapped_type = Value;
  using hash_type = Hash;
  static constexpr std::size_t node_bytes = sizeof(Entry);
  static constexpr std::uint64_t dedup_minimum = 65'536;  // what PARSEC dedup asks for

  // PARSEC's sizes: primes, each about twice the one before.
  static constexpr std::array<std::uint32_t, 26> primes{
      53,       97,       193,      389,       769,       1543,      3079,      6151,      12289,
      24593,    49157,    98317,    196613,    393241,    786433,    1572869,   3145739,   6291469,
      12582917, 25165843, 50331653, 100663319, 201326611, 402653189, 805306457, 1610612741};

  // The first of PARSEC's primes above `minimum` (the last one if none is).
  static std::uint32_t bucket_count_for(std::uint64_t minimum) {
    const auto it = std::upper_bound(primes.begin(), primes.end(), minimum);
    return it == primes.end() ? primes.back() : *it;
  }

  explicit DedupChainingMap(int /*max_threads*/, SizeHint size = {}, Hash hash = {})
      : buckets_(bucket_count_for(size.keys ? size.keys : dedup_minimum)),
        heads_(std::make_unique<Entry*[]>(buckets_)),
        locks_(std::make_unique<std::mutex[]>(buckets_)),
        hash_(hash) {}

  DedupChainingMap(const DedupChainingMap&) = delete;
  DedupChainingMap& operator=(const DedupChainingMap&) = delete;

  ~DedupChainingMap() {
    for (std::uint32_t b = 0; b < buckets_; ++b)
      for (Entry* e = heads_[b]; e;) delete std::exchange(e, e->next);
  }

  // Every operation: linearizable (inside its bucket's critical section); blocking.
  bool insert(int, Key key, Value value) {
    const std::uint32_t h = hash_of(key);
    std::lock_guard lock(locks_[index_of(h)]);
    if (search(h, key)) return false;
    push(h, key, value);
    return true;
  }

  bool erase(int, Key key) {
    const std::uint32_t h = hash_of(key);
    Entry* removed = nullptr;
    {
      std::lock_guard lock(locks_[index_of(h)]);
      for (Entry** link = &heads_[index_of(h)]; *link; link = &(*link)->next)
        if ((*link)->hash == h && key_of(**link) == key) {
          removed = std::exchange(*link, (*link)->next);
          break;
        }
    }
    delete removed;  // unreachable, and no one reads a chain without its lock
    return removed != nullptr;
  }

  bool contains(int tid, Key key) { return find(tid, key).has_value(); }

  std::optional<Value> find(int, Key key) {
    const std::uint32_t h = hash_of(key);
    std::lock_guard lock(locks_[index_of(h)]);
    if (const Entry* e = search(h, key)) return e->value;
    return std::nullopt;
  }

  // dedup's hashtable_getlock + hashtable_search + hashtable_insert.
  std::pair<Value, bool> find_or_insert(int, Key key, Value value) {
    const std::uint32_t h = hash_of(key);
    std::lock_guard lock(locks_[index_of(h)]);
    if (const Entry* e = search(h, key)) return {e->value, false};
    push(h, key, value);
    return {value, true};
  }

  // dedup's hashtable_change, under the bucket's lock as its compress stage takes it.
  bool assign(int, Key key, Value value) {
    const std::uint32_t h = hash_of(key);
    std::lock_guard lock(locks_[index_of(h)]);
    Entry* e = search(h, key);
    if (e) e->value = value;
    return e != nullptr;
  }

  std::uint32_t bucket_count() const { return buckets_; }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for (std::uint32_t b = 0; b < buckets_; ++b)
      for (const Entry* e = heads_[b]; e; e = e->next) fn(key_of(*e), e->value);
  }
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for_each_entry([&](const Key& k, const Value&) { fn(k); });
  }

  // Each entry in the bucket its key hashes to, with that hash stored.
  std::string check_invariants() const {
    for (std::uint32_t b = 0; b < buckets_; ++b)
      for (const Entry* e = heads_[b]; e; e = e->next) {
        const std::uint32_t h = hash_of(key_of(*e));
        if (e->hash != h) return "bucket " + std::to_string(b) + " holds an entry with a stale hash";
        if (index_of(h) != b)
          return "bucket " + std::to_string(b) + " holds a key of bucket " + std::to_string(index_of(h));
      }
    return {};
  }

  // Occupancy: how many buckets hold an entry, and the longest chain (the clustering the
  // dedup study describes).
  StatsReport stats() const {
    std::uint64_t used = 0, longest = 0;
    for (std::uint32_t b = 0; b < buckets_; ++b) {
      std::uint64_t length = 0;
      for (const Entry* e = heads_[b]; e; e = e->next) ++length;
      used += length > 0;
      longest = std::max(longest, length);
    }
    return {{{"buckets", buckets_}, {"buckets_used", used}, {"longest_chain", longest}}, {}};
  }

 private:
  // PARSEC's hash(): the supplemental hash of Java 1.4's HashMap over the user's 32 bits.
  std::uint32_t hash_of(const Key& key) const {
    std::uint32_t i = static_cast<std::uint32_t>(hash_(key));
    i += ~(i << 9);
    i ^= (i >> 14) | (i << 18);
    i += i << 4;
    i ^= (i >> 10) | (i << 22);
    return i;
  }
  std::uint32_t index_of(std::uint32_t h) const { return h % buckets_; }

  Entry* search(std::uint32_t h, const Key& key) const {
    for (Entry* e = heads_[index_of(h)]; e; e = e->next)
      if (e->hash == h && key_of(*e) == key) return e;
    return nullptr;
  }
  void push(std::uint32_t h, const Key& key, const Value& value) {
    heads_[index_of(h)] = new Entry(key, value, h, heads_[index_of(h)]);
  }
  static decltype(auto) key_of(const Entry& e) { return KeyStorage<Key>::view(e.key); }

  const std::uint32_t buckets_;
  const std::unique_ptr<Entry*[]> heads_;
  const std::unique_ptr<std::mutex[]> locks_;
  [[no_unique_address]] const Hash hash_;
};

static_assert(HasAssign<DedupChainingMap<>>);

}  // namespace cdsb
