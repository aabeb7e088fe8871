// The split-ordered hash map of Shalev & Shavit, "Split-Ordered Lists: Lock-Free Extensible
// Hash Tables", PODC 2003 (J. ACM 2006): lock-free and resizable without moving an item.
//
// All items live in one Harris-Michael lock-free sorted list (set/list/harris_michael.hpp,
// whose algorithm runs unchanged), sorted by split order: the bit-reversed hash. Bucket b of
// a table of 2^i buckets holds the items whose hash is b modulo 2^i; in split order they follow
// each other, right after a sentinel node with key reverse(b). A bucket is a pointer to its
// sentinel, so an operation starts its list walk there. Doubling the table splits each bucket
// b into b and b + 2^i without moving anything: bucket b + 2^i's sentinel is linked, lazily,
// inside b's run, when an operation first needs it (a bucket's sentinel is linked after its
// parent's: b without its top bit).
//
// Split-order keys: an item's is reverse(hash) with the low bit set, a sentinel's reverse(b)
// with it clear, so a bucket's sentinel precedes its items and no item equals a sentinel; items
// whose split-order keys are equal (hashes equal but for bit 63) are ordered by their keys
// (64-bit integers, digests, or byte strings, which a node keeps a copy of: set/stored_key.hpp).
//
// The table grows (never shrinks) when the item count exceeds max_load x buckets: one CAS
// doubles the bucket count. The bucket array is a directory of levels (level l holds buckets
// [2^(l-1), 2^l), allocated by the first operation that needs one of them), so growing copies
// nothing; it costs 8 bytes per bucket. But the operation that first touches a level allocates
// and zeroes it inline (8 x 2^(l-1) bytes: 4 MiB at 2^20 buckets), a latency outlier, and
// threads that race for a level each zero a copy before one wins. The item count is one shared
// signed counter (as in the paper), updated after each successful insert and erase: an erase
// can count before the insert of its key does, so it may be briefly negative (never a reason
// to grow).
//
// Progress and linearizability: every operation is the list's operation, started from a
// sentinel, so it is linearizable and lock-free as the list's (HarrisMichaelChains), with the
// same reclaimers (none, ebr, hp with 3 slots, ibr). Linking a sentinel is the list's insert;
// initialising a bucket is lock-free (its parents first, at most log2(buckets) of them).
// Sentinels are never erased; they, and the bucket levels, are freed with the map. Items are
// retired through the reclaimer.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/hash/hashes.hpp"
#include "cdsbench/set/list/harris_michael.hpp"

namespace cdsb {
namespace detail {
// A list node's key: its split-order key, then (for items with equal split-order keys) the key.
template <class Key>
struct SplitOrderKey {
  std::uint64_t order;
  Key key;
  auto operator<=>(const SplitOrderKey&) const = default;
  bool is_sentinel() const { return (order & 1) == 0; }
};
}  // namespace detail

// A node keeps the split-order key and its own copy of the key (a byte string's: stored_key.hpp).
template <class Key>
struct KeyStorage<detail::SplitOrderKey<Key>> {
  struct type {
    explicit type(const detail::SplitOrderKey<Key>& k) : order(k.order), key(k.key) {}
    std::uint64_t order;
    stored_key_t<Key> key;
  };
  static detail::SplitOrderKey<Key> view(const type& k) { return {k.order, KeyStorage<Key>::view(k.key)}; }
};

template <reclaim::Reclaimer R, class Key = std::uint64_t, class Value = std::uint64_t, class Hash = hash::Even>
class SplitOrderedMap {
  using SplitKey = detail::SplitOrderKey<Key>;
  using Chains = detail::HarrisMichaelChains<R, SplitKey, Value>;
  using Link = typename Chains::Link;

 public:
  using key_type = Key;
  using mapped_type = Value;
  using hash_type = Hash;
  using reclaimer_type = R;
  static constexpr int hazard_slots = Chains::hazard_slots;
  static constexpr std::size_t node_bytes = Chains::node_bytes;  // items and sentinels alike
  static constexpr std::uint64_t max_load = 2;                   // items per bucket before doubling
  static constexpr int max_levels = 48;                          // levels 0..47: up to 2^47 buckets

  explicit SplitOrderedMap(int max_threads, reclaim::ReclaimOptions options = {}, Hash hash = {})
      : chains_(max_threads, options), hash_(hash) {
    // Bucket 0's sentinel (split-order key 0) heads the list; every other one follows it.
    slot(0).store(&chains_.sentinel(0, head_, SplitKey{0, Key{}}), std::memory_order_release);
  }

  SplitOrderedMap(const SplitOrderedMap&) = delete;
  SplitOrderedMap& operator=(const SplitOrderedMap&) = delete;

  ~SplitOrderedMap() {
    chains_.free_chain(head_);
    for (auto& level : levels_) delete[] level.load(std::memory_order_relaxed);
  }

  // Each operation: linearizable and lock-free, as the list's (HarrisMichaelChains); an insert
  // or erase that succeeds also updates the count, and an insert may double the table.
  bool insert(int tid, Key key, Value value) {
    const std::uint64_t h = hash_(key);
    if (!chains_.insert(tid, bucket(tid, h), item_key(h, key), value)) return false;
    CDSB_INTERLEAVE("so.insert.linked");  // the item is in, the count not yet
    grown_by_one();
    return true;
  }
  bool erase(int tid, Key key) {
    const std::uint64_t h = hash_(key);
    if (!chains_.erase(tid, bucket(tid, h), item_key(h, key))) return false;
    count_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  bool contains(int tid, Key key) {
    const std::uint64_t h = hash_(key);
    return chains_.contains(tid, bucket(tid, h), item_key(h, key));
  }
  std::optional<Value> find(int tid, Key key) {
    const std::uint64_t h = hash_(key);
    return chains_.find_value(tid, bucket(tid, h), item_key(h, key));
  }
  std::pair<Value, bool> find_or_insert(int tid, Key key, Value value) {
    const std::uint64_t h = hash_(key);
    Value existing{};
    if (!chains_.insert(tid, bucket(tid, h), item_key(h, key), value, &existing)) return {existing, false};
    grown_by_one();
    return {value, true};
  }
  bool assign(int tid, Key key, Value value) {
    const std::uint64_t h = hash_(key);
    return chains_.assign(tid, bucket(tid, h), item_key(h, key), value);
  }

  // Relaxed: nothing is published through it (see grown_by_one).
  std::uint64_t bucket_count() const { return buckets_.load(std::memory_order_relaxed); }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    chains_.for_each_entry(head_, [&](const SplitKey& k, const Value& v) {
      if (!k.is_sentinel()) fn(k.key, v);
    });
  }
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for_each_entry([&](const Key& k, const Value&) { fn(k); });
  }

  // The list sound (split order, no marked node linked); every item's split-order key its
  // hash's; every sentinel's bucket within the table and initialised, and no other bucket
  // initialised; the count the items'.
  std::string check_invariants() const {
    if (std::string bad = chains_.check_chain(head_, "list: "); !bad.empty()) return bad;
    std::uint64_t items = 0, sentinels = 0;
    std::string bad;
    chains_.for_each_entry(head_, [&](const SplitKey& k, const Value&) {
      if (k.is_sentinel()) {
        ++sentinels;
        const std::uint64_t b = reverse(k.order);
        const Slot* s = b < bucket_count() ? slot_if_allocated(b) : nullptr;
        if (bad.empty() && (s == nullptr || s->load(std::memory_order_relaxed) == nullptr))
          bad = "the sentinel of bucket " + std::to_string(b) + " is linked but its bucket is not initialised";
      } else {
        ++items;
        if (bad.empty() && k != item_key(hash_(k.key), k.key)) bad = "an item's split-order key is not its hash's";
      }
    });
    if (!bad.empty()) return bad;
    if (static_cast<std::int64_t>(items) != count_.load(std::memory_order_relaxed))
      return "count " + std::to_string(count_.load(std::memory_order_relaxed)) + " but " + std::to_string(items) + " items";
    std::uint64_t initialised = 0;
    for (std::uint64_t b = 0; b < bucket_count(); ++b) {
      const Slot* s = slot_if_allocated(b);
      initialised += s != nullptr && s->load(std::memory_order_relaxed) != nullptr;
    }
    if (initialised != sentinels)
      return std::to_string(sentinels) + " sentinels but " + std::to_string(initialised) + " initialised buckets";
    return {};
  }

  // The reclaimer's and the list's counters, the bucket count and the initialised buckets.
  StatsReport stats() const {
    StatsReport r = chains_.stats();
    std::uint64_t sentinels = 0;
    chains_.for_each_entry(head_, [&](const SplitKey& k, const Value&) { sentinels += k.is_sentinel(); });
    r.values.insert(r.values.end(), {{"buckets", bucket_count()}, {"buckets_initialised", sentinels}});
    return r;
  }

 private:
  static std::uint64_t reverse(std::uint64_t x) {
    x = (x >> 1 & 0x5555555555555555ULL) | (x & 0x5555555555555555ULL) << 1;
    x = (x >> 2 & 0x3333333333333333ULL) | (x & 0x3333333333333333ULL) << 2;
    x = (x >> 4 & 0x0f0f0f0f0f0f0f0fULL) | (x & 0x0f0f0f0f0f0f0f0fULL) << 4;
    return __builtin_bswap64(x);
  }
  static SplitKey item_key(std::uint64_t h, const Key& key) { return {reverse(h) | 1, key}; }
  static SplitKey sentinel_key(std::uint64_t b) { return {reverse(b), Key{}}; }
  static std::uint64_t parent_of(std::uint64_t b) {  // b > 0: bucket 0 has no parent (set up by the constructor)
    return b & ~(std::uint64_t{1} << (std::bit_width(b) - 1));
  }

  using Slot = std::atomic<Link*>;  // a bucket: its sentinel's link, null until initialised

  // Bucket b's slot in level bit_width(b), allocating the level if it is missing.
  Slot& slot(std::uint64_t b) {
    const int level = std::bit_width(b);
    Slot* slots = levels_[level].load(std::memory_order_acquire);
    if (slots == nullptr) {
      const std::uint64_t size = level == 0 ? 1 : std::uint64_t{1} << (level - 1);
      Slot* fresh = new Slot[size]();  // value-initialised: null
      // acq_rel: publishes the zeroed slots; on failure, acquire the winner's.
      if (levels_[level].compare_exchange_strong(slots, fresh, std::memory_order_acq_rel, std::memory_order_acquire))
        slots = fresh;
      else
        delete[] fresh;
    }
    return slots[level == 0 ? 0 : b - (std::uint64_t{1} << (level - 1))];
  }
  const Slot* slot_if_allocated(std::uint64_t b) const {
    const int level = std::bit_width(b);
    const Slot* slots = levels_[level].load(std::memory_order_acquire);
    return slots ? &slots[level == 0 ? 0 : b - (std::uint64_t{1} << (level - 1))] : nullptr;
  }

  // The link an operation on hash h starts from: its bucket's sentinel, linked first if need be.
  Link& bucket(int tid, std::uint64_t h) {
    const std::uint64_t b = h & (bucket_count() - 1);
    Slot& s = slot(b);
    // acquire: the sentinel's link was published (the list's CAS) before its slot was set.
    Link* link = s.load(std::memory_order_acquire);
    if (!link) link = &initialise(tid, b, s);
    CDSB_INTERLEAVE("so.bucket.chosen");  // the walk starts here, whatever the table does meanwhile
    return *link;
  }

  // Links bucket b's sentinel after its parent's (initialising the parent first), and publishes
  // it; racing initialisations find the same sentinel (the list keeps keys unique).
  Link& initialise(int tid, std::uint64_t b, Slot& s) {
    const std::uint64_t parent = parent_of(b);
    Slot& ps = slot(parent);
    Link* parent_link = ps.load(std::memory_order_acquire);
    if (!parent_link) parent_link = &initialise(tid, parent, ps);
    CDSB_INTERLEAVE("so.initialise.parent_ready");  // parent linked, own sentinel not yet
    Link& link = chains_.sentinel(tid, *parent_link, sentinel_key(b));
    s.store(&link, std::memory_order_release);  // release: pairs with bucket()'s acquire
    return link;
  }

  void grown_by_one() {
    const std::int64_t items = count_.fetch_add(1, std::memory_order_relaxed) + 1;
    std::uint64_t buckets = bucket_count();
    // One CAS doubles the table; a failure means another thread already did. Relaxed: nothing
    // is published through the bucket count (levels and sentinels are made on demand by
    // whoever needs them). A count that went negative (erases counted before their inserts)
    // never grows the table; read as unsigned it would double it on every insert.
    const bool over = CDSB_MUTANT("so.count_read_unsigned")
                          ? static_cast<std::uint64_t>(items) > max_load * buckets
                          : items > 0 && static_cast<std::uint64_t>(items) > max_load * buckets;
    if (over && std::bit_width(buckets) < max_levels)
      buckets_.compare_exchange_strong(buckets, buckets * 2, std::memory_order_relaxed, std::memory_order_relaxed);
  }

  Chains chains_;
  [[no_unique_address]] const Hash hash_;
  alignas(false_sharing_range) Link head_{};
  alignas(false_sharing_range) std::atomic<std::uint64_t> buckets_{2};
  alignas(false_sharing_range) std::atomic<std::int64_t> count_{0};
  std::atomic<Slot*> levels_[max_levels]{};
};

static_assert(HasAssign<SplitOrderedMap<reclaim::Archetype<false>>>);

}  // namespace cdsb
