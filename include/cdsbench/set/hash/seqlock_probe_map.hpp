// A hash map of our own, built to be the fastest here: open addressing over cache-line buckets,
// finds that only read (each bucket validated by its version, a seqlock), updates under
// per-bucket locks, and a table that doubles when it fills.
//
// Why this shape. At 1 M keys a lookup costs what its cache misses cost: a chaining map reads a
// bucket, then a node (2+ misses), a multi-level array several arrays. Here a key and its value
// live inline in a 64-byte bucket, so a find usually reads one line, and writes nothing shared
// (no reader count, no lock word written), so readers on different cores never invalidate each
// other's lines. In a small, cached table the find is a hash, three compares and two loads of
// the version word.
//
// Layout. A table is 2^b buckets, each one cache line: a version word, 3 keys, 3 values, and a
// count of the keys that passed this bucket (below). Bucket i is the home of the keys whose
// hash ends in i; a key lives in its home or, when that is full, in the next bucket with room
// (linear probing over buckets); every bucket it passes on the way counts it in `passed`, so a
// find goes on past a bucket only while that count is not 0, and an erase of a displaced key
// takes its counts back (so churn does not leave stale marks that lengthen every probe). The
// version word:
//
//   bit 0     LOCK      a writer holds the bucket
//   bit 1     MOVED     the table was replaced (set with LOCK, for good): look in the new one
//   bits 2-4  the occupied slots
//   bits 8-   a counter, advanced by every change, so that a reader can tell one happened
//
// find(k): from k's home, read each bucket: the version (acquire; a locked one is waited for),
// the slots and `passed` (acquire loads), the version again; if it changed, read the bucket
// again. k found: its value. Else stop at the first bucket that no key passed: absent.
//
// Updates of k (insert, erase, assign, find_or_insert) first lock k's home, so they run one at a
// time per home: no other thread can add, move or remove k meanwhile. Other buckets they need
// (where k is, the buckets k passed) are taken with one try each: if one is held, everything is
// released and the update starts over, so an update never waits for a lock while holding one.
// An insert places k in the first free slot from its home on, counting k in each full bucket it
// passes before k is written further on; an erase removes k, then takes back its counts, so no
// count is ever short of the keys past it. Slots are written with release stores between the
// lock and the unlock, which advances the counter (release): a find that read a new slot then
// reads the version changed, and reads the bucket again.
//
// Growth. Each thread counts its inserts and erases; an insert checks the total every
// min(64, slots / 8 threads) of its inserts (so the table is at most 3/4 + 1/8 full) and, past
// 3/4 full, or when it found no free slot at all, doubles the table: it locks bucket 0, then
// allocates the new table (private until published), locks every other bucket in index order,
// waiting for each (the only place a thread waits while holding locks: the holders it waits
// for never wait), rehashes every key, publishes the new table and marks each old bucket MOVED;
// waiting finds and updates then start over in the new table. The old table is retired through
// the reclaimer (a find may still be reading it). Two threads that double at once: the second
// waits for bucket 0, finds it MOVED and leaves, having allocated nothing. The doubling is stop-the-world (as libcuckoo's and oneTBB's): a
// latency outlier of O(items), rare by doubling.
//
// Linearizability: insert, erase and assign take effect at the unlock of the bucket whose slot
// they change; an update that finds the key present (insert, find_or_insert) or absent (erase,
// assign) takes effect anywhere while it holds the home lock, as k cannot change then. find:
// at the validated read of the bucket holding k; absent: if k were present throughout the find,
// it would stay in one slot (keys move only by a doubling, which the find would have met), and
// every bucket from its home to that slot counts it (counts are taken back only after k is
// gone), so the scan would reach it; hence k was absent at some moment of the find.
//
// Progress: updates are blocking (bucket locks; a doubling holds them all). finds write
// nothing; they wait while a writer holds a bucket they read and read it again after each
// change to it, so a bucket written without pause can delay them without bound. Reclaimers:
// ebr (an old table is freed once no find can read it), none (freed with the map).
//
// Byte-string keys (Key = std::string_view): a slot's key word is the address of an immutable
// blob (the key's bytes and its 64-bit hash) tagged with the hash's top 16 bits; a find compares
// the tag, then the hash, then the bytes. An erase retires the blob through the reclaimer after
// clearing the slot's bit; a find reads a blob only under a version that showed its slot
// occupied during the find's guard, so the blob was retired after the guard began (ebr keeps it).
// A doubling moves the words and rehashes with the stored hashes.
//
// Memory (64-bit keys; byte strings add their blobs, which bytes_held leaves out): 64 bytes per
// 3 slots; after growth at most 3/4 full (+1/8 between checks) and at least 3/8 just after a
// doubling: 28 to 57 bytes per key (2^20 keys: 2^19 buckets, 32 bytes per key). During a
// doubling the old and the new table coexist: bytes_held_peak reports the most this map held
// from its allocator at once, retired tables not yet freed included.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/hash/hashes.hpp"
#include "cdsbench/set/stored_key.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Hash = hash::Even>
  requires std::same_as<Key, std::uint64_t> || is_byte_string_key<Key>
class SeqlockProbeMap {
  using Word = std::uint64_t;
  static constexpr bool byte_keys = is_byte_string_key<Key>;

  // A byte-string key lives in a blob of its own, retired through the reclaimer when erased; its
  // slot's key word is the blob's address with the top 16 bits of the key's hash above bit 48,
  // a tag that settles most mismatches without reading the blob.
  struct KeyBlob : R::NodeBase {
    KeyBlob(Key k, std::uint64_t h) : hash(h), key(k) {}
    const std::uint64_t hash;
    const ByteString key;
  };
  static constexpr int tag_shift = 48;
  static constexpr Word lock_bit = 1, moved_bit = 2, counter_unit = 256;
  static constexpr int slots_per_bucket = 3;
  static constexpr Word slot_bit(int s) { return Word{4} << s; }
  static constexpr Word all_slots = slot_bit(0) | slot_bit(1) | slot_bit(2);

  struct alignas(cache_line_size) Bucket {
    std::atomic<Word> version{0};
    std::atomic<std::uint64_t> keys[slots_per_bucket]{};
    std::atomic<std::uint64_t> values[slots_per_bucket]{};
    std::atomic<std::uint64_t> passed{0};  // keys stored further on whose probe passed this bucket
  };
  static_assert(sizeof(Bucket) == cache_line_size);

  // A table, retired through the reclaimer when replaced.
  struct Table : R::NodeBase {
    Table(std::size_t bucket_count, std::atomic<std::int64_t>& held) : mask(bucket_count - 1), held_bytes(held) {
      buckets = new Bucket[bucket_count];  // over-aligned: operator new[] with the alignment
      held_bytes.fetch_add(static_cast<std::int64_t>(bytes()), std::memory_order_relaxed);
    }
    ~Table() {
      delete[] buckets;
      held_bytes.fetch_sub(static_cast<std::int64_t>(bytes()), std::memory_order_relaxed);
    }
    std::size_t bucket_count() const { return mask + 1; }
    std::size_t bytes() const { return bucket_count() * sizeof(Bucket) + sizeof(Table); }
    std::size_t next(std::size_t b) const { return (b + 1) & mask; }
    const std::size_t mask;
    Bucket* buckets;
    std::atomic<std::int64_t>& held_bytes;
  };

 public:
  using key_type = Key;
  using mapped_type = std::uint64_t;
  using hash_type = Hash;
  using reclaimer_type = R;
  static constexpr std::size_t bucket_bytes = sizeof(Bucket);
  static constexpr std::size_t min_buckets = 16;

  explicit SeqlockProbeMap(int max_threads, reclaim::ReclaimOptions options = {}, SizeHint size = {}, Hash hash = {})
      : reclaimer_(max_threads, 1, options),
        hash_(hash),
        threads_(max_threads),
        counts_(static_cast<std::size_t>(max_threads)),
        stats_(max_threads, {{"resizes", StatKind::counter}, {"bucket_retries", StatKind::counter}}) {
    table_.store(reclaimer_.template allocate<Table>(0, buckets_for(size.keys), held_bytes_), std::memory_order_relaxed);
    held_peak_ = held();
  }

  SeqlockProbeMap(const SeqlockProbeMap&) = delete;
  SeqlockProbeMap& operator=(const SeqlockProbeMap&) = delete;

  ~SeqlockProbeMap() {
    if constexpr (byte_keys) for_each_word([&](Word k, std::uint64_t) { reclaimer_.deallocate(0, const_cast<KeyBlob*>(blob_of(k))); });
    reclaimer_.deallocate(0, table_.load(std::memory_order_relaxed));
  }

  // ---- operations -----------------------------------------------------------------------
  std::optional<std::uint64_t> find(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    const std::uint64_t h = hash_(key);
    for (;;) {
      const Table* t = table_.load(std::memory_order_acquire);
      std::size_t b = h & t->mask, probe = 0;
      for (;;) {
        const Bucket& bucket = t->buckets[b];
        const Word v = stable_version(bucket);
        if (v & moved_bit) break;  // replaced: start over in the new table
        int slot = -1;
        std::uint64_t value = 0;
        for (int s = 0; s < slots_per_bucket; ++s)
          // A byte string's blob is read before the bucket is validated: it is safe, as the slot
          // was occupied by it during this find's guard, so it was retired (if at all) after the
          // guard began.
          if ((v & slot_bit(s)) && matches(bucket.keys[s].load(std::memory_order_acquire), key, h)) {
            CDSB_INTERLEAVE("spm.find.key_matched");  // the key read, its value not yet
            slot = s;
            value = bucket.values[s].load(std::memory_order_acquire);
            break;
          }
        const std::uint64_t passed = bucket.passed.load(std::memory_order_acquire);
        // The acquire loads above keep this load after them: if one read a writer's store, this
        // one reads that writer's lock or a later version.
        if (bucket.version.load(std::memory_order_relaxed) != v && !CDSB_MUTANT("spm.find_skips_validation")) {
          stats_.add(tid, stat_bucket_retries);
          continue;  // changed under us: read the bucket again
        }
        if (slot >= 0) return value;
        if (passed == 0 || probe++ == t->mask) return std::nullopt;
        b = t->next(b);
      }
    }
  }

  bool contains(int tid, Key key) { return find(tid, key).has_value(); }

  bool insert(int tid, Key key, std::uint64_t value) { return put(tid, key, value).second; }
  std::pair<std::uint64_t, bool> find_or_insert(int tid, Key key, std::uint64_t value) { return put(tid, key, value); }

  bool erase(int tid, Key key) { return update(tid, key, std::nullopt); }
  bool assign(int tid, Key key, std::uint64_t value) { return update(tid, key, value); }

  // Quiescent (a running doubling may free the table it reads).
  std::size_t bucket_count() const { return table_.load(std::memory_order_acquire)->bucket_count(); }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for_each_word([&](Word k, std::uint64_t v) { fn(key_of(k), v); });
  }
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for_each_word([&](Word k, std::uint64_t) { fn(key_of(k)); });
  }

  // No bucket locked or moved; each key once; each bucket's `passed` exactly the keys stored
  // further on whose probe from their home crossed it; the per-thread counts sum to the keys.
  std::string check_invariants() const {
    const Table* t = table_.load(std::memory_order_acquire);
    std::vector<Key> keys;
    std::vector<std::uint64_t> passed(t->bucket_count(), 0);
    for (std::size_t b = 0; b <= t->mask; ++b) {
      const Word v = t->buckets[b].version.load(std::memory_order_acquire);
      if (v & (lock_bit | moved_bit)) return "bucket " + std::to_string(b) + " locked or moved while quiescent";
      for (int s = 0; s < slots_per_bucket; ++s) {
        if (!(v & slot_bit(s))) continue;
        const Word k = t->buckets[b].keys[s].load(std::memory_order_relaxed);
        keys.push_back(key_of(k));
        if (!matches(k, key_of(k), hash_(key_of(k)))) return "bucket " + std::to_string(b) + " holds a key with a wrong hash or tag";
        for (std::size_t i = hash_of(k) & t->mask; i != b; i = t->next(i)) ++passed[i];
      }
    }
    for (std::size_t b = 0; b <= t->mask; ++b)
      if (const std::uint64_t p = t->buckets[b].passed.load(std::memory_order_relaxed); p != passed[b])
        return "bucket " + std::to_string(b) + " counts " + std::to_string(p) + " keys passed, " +
               std::to_string(passed[b]) + " did";
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return "a key is held twice";
    if (static_cast<std::int64_t>(keys.size()) != item_count())
      return "the counters say " + std::to_string(item_count()) + " keys, the table holds " + std::to_string(keys.size());
    return {};
  }

  // The reclaimer's counters, doublings and bucket re-reads, the buckets, and the bytes held
  // from the allocator (tables, retired ones not yet freed included): now and at most.
  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    r.values.insert(r.values.end(), {{"buckets", bucket_count()},
                                     {"bytes_held", static_cast<std::uint64_t>(held())},
                                     {"bytes_held_peak", static_cast<std::uint64_t>(held_peak_)}});
    return r;
  }

 private:
  enum Stat { stat_resizes, stat_bucket_retries };

  static std::size_t buckets_for(std::uint64_t keys) {
    // At most 3/4 full: keys x 4/3 slots, 3 per bucket, a power of two.
    const std::uint64_t wanted = keys * 4 / 9 + 1;
    return std::max<std::size_t>(min_buckets, std::bit_ceil(wanted));
  }

  // The bucket's version once no writer holds it (a moved bucket stays locked: returned as is).
  static Word stable_version(const Bucket& bucket) {
    for (;;) {
      const Word v = bucket.version.load(std::memory_order_acquire);
      if (!(v & lock_bit) || (v & moved_bit)) return v;
      cpu_relax();
    }
  }

  // Locks a bucket, waiting for its holder: its version before, or nullopt when moved.
  static std::optional<Word> lock(Bucket& bucket) {
    for (;;) {
      Word v = stable_version(bucket);
      if (v & moved_bit) return std::nullopt;
      // acquire: what the last holder wrote before its unlock (release) is visible.
      if (bucket.version.compare_exchange_weak(v, v | lock_bit, std::memory_order_acquire, std::memory_order_relaxed))
        return v;
    }
  }
  // One attempt: the version before, or nullopt if held (or moved).
  static std::optional<Word> try_lock(Bucket& bucket) {
    Word v = bucket.version.load(std::memory_order_relaxed);
    if ((v & lock_bit) ||
        !bucket.version.compare_exchange_strong(v, v | lock_bit, std::memory_order_acquire, std::memory_order_relaxed))
      return std::nullopt;
    return v;
  }
  // Unlocks with the bucket's version as it should read now; the counter moves on only if the
  // bucket changed (else finds need not read it again). release: what was written meanwhile is
  // visible to whoever reads this version.
  static void unlock(Bucket& bucket, Word version, bool changed) {
    bucket.version.store((version & ~lock_bit) + (changed ? counter_unit : 0), std::memory_order_release);
  }

  // Where k lives, searched while k's home is locked: the bucket index and slot, or slot -1.
  // No validation, and no wait for a bucket another writer holds: k's slots, and the counts k
  // added, change only under its home's lock, which we hold, and what their last writer wrote is
  // visible (its unlocks, release; our lock, acquire); other slots and counts may change, but
  // never to k, nor below what k added.
  std::pair<std::size_t, int> locate(const Table* t, std::size_t home, Word home_version, Key key, std::uint64_t h) const {
    std::size_t b = home;
    Word v = home_version;
    for (std::size_t probe = 0;; ++probe) {
      const Bucket& bucket = t->buckets[b];
      if (probe > 0) v = bucket.version.load(std::memory_order_acquire);
      for (int s = 0; s < slots_per_bucket; ++s)
        if ((v & slot_bit(s)) && matches(bucket.keys[s].load(std::memory_order_acquire), key, h)) return {b, s};
      if (bucket.passed.load(std::memory_order_acquire) == 0 || probe == t->mask) return {b, -1};
      b = t->next(b);
    }
  }

  // Locks buckets first..last (wrapping) with one try each, appending their versions; false,
  // with none of them held, if one is taken.
  static bool try_lock_run(Table* t, std::size_t first, std::size_t last, std::vector<Word>& versions) {
    const std::size_t held_before = versions.size();
    for (std::size_t b = first;; b = t->next(b)) {
      const std::optional<Word> v = try_lock(t->buckets[b]);
      if (!v) {
        for (std::size_t i = held_before, c = first; i < versions.size(); ++i, c = t->next(c))
          unlock(t->buckets[c], versions[i], false);
        versions.resize(held_before);
        return false;
      }
      versions.push_back(*v);
      if (b == last) return true;
    }
  }

  // The current table with the home bucket of hash h locked in it, and the home's version
  // before (a table replaced while we waited is left for the new one).
  struct LockedHome {
    Table* t;
    std::size_t home;
    Word version;
  };
  LockedHome lock_home(std::uint64_t h) {
    for (;;) {
      Table* t = table_.load(std::memory_order_acquire);
      if (const std::optional<Word> v = lock(t->buckets[h & t->mask])) return {t, h & t->mask, *v};
    }
  }

  // assign (a value) or erase (nullopt) of k, under k's home lock and the lock of every bucket
  // from there to k's slot; false if k is absent.
  bool update(int tid, Key key, std::optional<std::uint64_t> assign) {
    auto guard = reclaimer_.enter(tid);
    const std::uint64_t h = hash_(key);
    std::vector<Word>& versions = scratch(tid);
    for (;;) {
      const auto [t, home, home_version] = lock_home(h);
      CDSB_INTERLEAVE("spm.update.home_locked");
      const auto [at, slot] = locate(t, home, home_version, key, h);
      if (slot < 0) {
        unlock(t->buckets[home], home_version, false);
        return false;
      }
      // versions[i]: bucket home+i's, up to k's bucket. An assign needs k's bucket only; an
      // erase also every bucket k passed (their counts).
      versions.assign(1, home_version);
      if (at != home && !try_lock_run(t, assign ? at : t->next(home), at, versions)) {
        unlock(t->buckets[home], home_version, false);
        cpu_relax();
        continue;
      }
      Bucket& bucket = t->buckets[at];
      const Word before = versions.back();
      if (assign) {
        bucket.values[slot].store(*assign, std::memory_order_release);
        unlock(bucket, before, true);
        if (at != home) unlock(t->buckets[home], home_version, false);
        return true;
      }
      // Erase: k leaves its slot first, then its counts go (never short of the keys past them).
      const Word erased = bucket.keys[slot].load(std::memory_order_relaxed);
      unlock(bucket, before & ~slot_bit(slot), true);
      for (std::size_t i = 0, b = home; b != at; ++i, b = t->next(b)) {
        Bucket& passed = t->buckets[b];
        passed.passed.store(passed.passed.load(std::memory_order_relaxed) - 1, std::memory_order_release);
        unlock(passed, versions[i], true);
      }
      count(tid, -1);
      // Unreachable once its slot's bit is clear (a find reads a key word only under a version
      // with the bit set); the word itself stays until the slot is reused.
      if constexpr (byte_keys) reclaimer_.retire(tid, const_cast<KeyBlob*>(blob_of(erased)));
      return true;
    }
  }

  // Insert-if-absent: (the value now held, whether this call inserted it).
  std::pair<std::uint64_t, bool> put(int tid, Key key, std::uint64_t value) {
    auto guard = reclaimer_.enter(tid);
    const std::uint64_t h = hash_(key);
    std::vector<Word>& versions = scratch(tid);
    // The key word to store. A byte string's blob is allocated outside the locks (an allocation
    // would lengthen the time finds wait), on the first attempt that finds the key absent.
    Word word = byte_keys ? 0 : word_for(tid, key, h);
    for (;;) {
      const auto [t, home, home_version] = lock_home(h);
      CDSB_INTERLEAVE("spm.insert.home_locked");
      if (const auto [at, slot] = locate(t, home, home_version, key, h); slot >= 0) {
        const std::uint64_t existing = t->buckets[at].values[slot].load(std::memory_order_acquire);
        unlock(t->buckets[home], home_version, false);
        if constexpr (byte_keys)
          if (word) reclaimer_.deallocate(tid, const_cast<KeyBlob*>(blob_of(word)));  // never published
        return {existing, false};
      }
      if (byte_keys && word == 0) {
        unlock(t->buckets[home], home_version, false);
        word = word_for(tid, key, h);
        continue;
      }
      // The first bucket with a free slot from the home on, locking each on the way.
      versions.assign(1, home_version);
      std::size_t at = home;
      while ((versions.back() & all_slots) == all_slots && versions.size() <= t->mask) {
        const std::optional<Word> v = try_lock(t->buckets[t->next(at)]);
        if (!v) break;
        at = t->next(at);
        versions.push_back(*v);
      }
      const bool full = (versions.back() & all_slots) == all_slots;
      if (full) {  // a bucket on the way is held (start over), or no free slot at all (grow)
        for (std::size_t i = 0, b = home; i < versions.size(); ++i, b = t->next(b)) unlock(t->buckets[b], versions[i], false);
        if (versions.size() > t->mask) grow(tid, t);
        cpu_relax();
        continue;
      }
      // Counted in every bucket passed before it is written further on.
      for (std::size_t i = 0, b = home; b != at; ++i, b = t->next(b)) {
        Bucket& passed = t->buckets[b];
        passed.passed.store(passed.passed.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        if (b != home) unlock(passed, versions[i], true);
      }
      Bucket& bucket = t->buckets[at];
      const Word before = versions.back();
      const int s = std::countr_zero(~before & all_slots) - 2;
      bucket.keys[s].store(word, std::memory_order_release);
      bucket.values[s].store(value, std::memory_order_release);
      unlock(bucket, before | slot_bit(s), true);
      if (at != home) unlock(t->buckets[home], home_version, true);  // its count changed
      count(tid, 1);
      if (++counts_[static_cast<std::size_t>(tid)]->since_check >= check_interval(t)) {
        counts_[static_cast<std::size_t>(tid)]->since_check = 0;
        if (item_count() * 4 > static_cast<std::int64_t>(t->bucket_count() * slots_per_bucket * 3)) grow(tid, t);
      }
      return {value, true};
    }
  }

  // Inserts of one thread between its load checks: at most 64, and few enough that all threads
  // together overshoot 3/4 full by at most 1/8 of the slots.
  std::uint64_t check_interval(const Table* t) const {
    return std::clamp<std::uint64_t>(t->bucket_count() * slots_per_bucket / (8 * static_cast<std::uint64_t>(threads_)), 1, 64);
  }

  // Each thread counts its inserts minus its erases in a word of its own (relaxed: the sum is
  // an estimate while threads run, exact when quiescent).
  void count(int tid, std::int64_t delta) {
    std::atomic<std::int64_t>& items = counts_[static_cast<std::size_t>(tid)]->items;
    items.store(items.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
  }
  std::int64_t item_count() const {
    std::int64_t n = 0;
    for (const auto& c : counts_) n += c->items.load(std::memory_order_relaxed);
    return n;
  }
  std::vector<Word>& scratch(int tid) { return counts_[static_cast<std::size_t>(tid)]->versions; }

  std::int64_t held() const { return held_bytes_.load(std::memory_order_relaxed); }

  // ---- key words ------------------------------------------------------------------------
  // The word an insert stores for k (a byte string's blob allocated here).
  Word word_for(int tid, Key key, std::uint64_t h) {
    if constexpr (byte_keys) {
      const auto address = reinterpret_cast<std::uintptr_t>(reclaimer_.template allocate<KeyBlob>(tid, key, h));
      // Linux keeps user-space addresses below 2^47 unless a program maps above on purpose (x86
      // 5-level paging with a high hint); pointers tagged in their top byte (ARM TBI, MTE) would
      // need the tag elsewhere.
      if (address >> tag_shift) {
        std::fputs("cdsbench: seqlock_probe_map: an allocation above 2^48 leaves no room for the hash tag\n", stderr);
        std::abort();
      }
      return address | (h >> tag_shift << tag_shift);
    } else {
      return key;
    }
  }
  static const KeyBlob* blob_of(Word w) { return reinterpret_cast<const KeyBlob*>(w & ((Word{1} << tag_shift) - 1)); }
  static bool matches(Word w, Key key, std::uint64_t h) {
    if constexpr (byte_keys) return w >> tag_shift == h >> tag_shift && blob_of(w)->hash == h && blob_of(w)->key.view() == key;
    else return w == key;
  }
  static Key key_of(Word w) {
    if constexpr (byte_keys) return blob_of(w)->key.view();
    else return w;
  }
  std::uint64_t hash_of(Word w) const {
    if constexpr (byte_keys) return blob_of(w)->hash;  // (a doubling rehashes without SipHash)
    else return hash_(w);
  }

  // Quiescent: fn(key word, value) for each key of the current table.
  template <class Fn>
  void for_each_word(Fn&& fn) const {
    const Table* t = table_.load(std::memory_order_acquire);
    for (std::size_t b = 0; b <= t->mask; ++b) {
      const Bucket& bucket = t->buckets[b];
      const Word v = bucket.version.load(std::memory_order_acquire);
      for (int s = 0; s < slots_per_bucket; ++s)
        if (v & slot_bit(s)) fn(bucket.keys[s].load(std::memory_order_relaxed), bucket.values[s].load(std::memory_order_relaxed));
    }
  }

  // Doubles table t, unless another thread replaced it first. Bucket 0 is locked first, then the
  // new table allocated: threads that pass 3/4 full together all come here, and had each
  // allocated (and zeroed) a table before finding t moved, the peak would hold one table per
  // thread (dedup at 4 threads: 24 MiB more than the two). Then every other bucket is locked in
  // index order, every key rehashed, the new table published (release: its buckets are visible
  // to whoever loads it) before the old buckets are marked MOVED (so that a waiter that sees
  // MOVED finds the new table), and the old table retired.
  void grow(int tid, Table* t) {
    CDSB_INTERLEAVE("spm.grow.begin");
    const std::optional<Word> first = lock(t->buckets[0]);
    if (!first) return;  // moved: another thread doubled it
    // Bucket 0 held: no other doubling of t can start; those that hold a bucket never wait.
    Table* bigger;
    try {
      bigger = reclaimer_.template allocate<Table>(tid, t->bucket_count() * 2, held_bytes_);
    } catch (...) {
      unlock(t->buckets[0], *first, false);
      throw;
    }
    for (std::size_t b = 1; b <= t->mask; ++b) lock(t->buckets[b]);
    CDSB_INTERLEAVE("spm.grow.all_locked");
    held_peak_ = std::max(held_peak_, held());
    for (std::size_t b = 0; b <= t->mask; ++b) {
      const Bucket& bucket = t->buckets[b];
      const Word v = bucket.version.load(std::memory_order_relaxed);
      for (int s = 0; s < slots_per_bucket; ++s)
        if (v & slot_bit(s))
          place(bigger, bucket.keys[s].load(std::memory_order_relaxed), bucket.values[s].load(std::memory_order_relaxed));
    }
    table_.store(bigger, std::memory_order_release);
    for (std::size_t b = 0; b <= t->mask; ++b) t->buckets[b].version.store(lock_bit | moved_bit, std::memory_order_release);
    stats_.add(tid, stat_resizes);
    reclaimer_.retire(tid, t);
  }

  // Rehash into a private table (no locks: no other thread can see it yet).
  void place(Table* t, Word key, std::uint64_t value) {
    for (std::size_t b = hash_of(key) & t->mask;; b = t->next(b)) {
      Bucket& bucket = t->buckets[b];
      const Word v = bucket.version.load(std::memory_order_relaxed);
      if ((v & all_slots) == all_slots) {
        bucket.passed.store(bucket.passed.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        continue;
      }
      const int s = std::countr_zero(~v & all_slots) - 2;
      bucket.keys[s].store(key, std::memory_order_relaxed);
      bucket.values[s].store(value, std::memory_order_relaxed);
      bucket.version.store(v | slot_bit(s), std::memory_order_relaxed);
      return;
    }
  }

  struct PerThread {
    std::atomic<std::int64_t> items{0};  // inserts minus erases; written by its thread only
    std::uint64_t since_check = 0;
    std::vector<Word> versions;  // an update's locked buckets' versions (no allocation per update)
  };

  std::atomic<std::int64_t> held_bytes_{0};  // first: retired tables, freed by reclaimer_, update it
  R reclaimer_;
  [[no_unique_address]] const Hash hash_;
  const int threads_;
  std::atomic<Table*> table_{nullptr};
  std::int64_t held_peak_ = 0;  // written by a doubling, which holds every lock of the table
  std::vector<Padded<PerThread>> counts_;
  UserStats stats_;
};

static_assert(HasAssign<SeqlockProbeMap<reclaim::Archetype<true>>>);

}  // namespace cdsb
