// The wait-free hash map of Feldman, LaBorde & Dechev ("Concurrent Multi-level Arrays:
// Wait-free Extensible Hash Maps", SAMOS 2013; LaBorde, Feldman & Dechev, "A Wait-Free Hash
// Map", IJPP 2017): a tree of arrays, no locks, no helping records, every operation finishing
// in a bounded number of its own steps.
//
// Shape. A head array of 2^H slots, child arrays of 2^A slots (A = 4). A key's path is a
// fixed bit string: its hash (64 bits) followed by the key's own bits (64 for an integer key,
// 160 for a digest). Level 0 is indexed by the path's first H bits, level l by the next A
// bits, so two keys share a slot at level l only while their paths agree so far; the deepest
// level (the path used up) has one possible key per slot. Because the key's bits end the path,
// distinct keys always separate, whatever the hash: the hash only decides how soon (a weak
// hash, as dedup's bytesum, shows as depth). A slot is one word:
//
//   0                 empty (above the deepest level)
//   D                 a data node {key, value}, immutable once published
//   D | MARK          frozen (above the deepest level): its only next state is an array
//   MARK              frozen empty: likewise
//   A | ARRAY         a child array: final (a stray MARK on it means nothing)
//   DEL, D | DEL      deepest level only: empty (how its arrays start), or D erased (dead)
//
// Byte-string keys (Key = std::string_view) have no fixed bits to end the path: their path is
// the 64-bit hash alone, so two keys whose hashes are equal (for `even`, SipHash, only by
// chance or by a client who knows the seed) meet at the deepest level, whose slot then holds an
// overflow chain: 0, or an immutable list of nodes (DEL unused). Insert prepends its node with
// one CAS; erase and assign CAS in a new list (the nodes before the key's copied, the key's
// node left out or replaced) and retire the nodes replaced (rewrite_chain). These are
// lock-free, not wait-free: a CAS fails only because another update of the chain succeeded.
// The bound below is stated for fixed-size keys; with byte strings it bounds the levels above
// the deepest.
//
// Operations walk from the head. At a level above the deepest: insert CASes an empty slot to
// its node, or, meeting another key's node, expands the slot: a new array holding that node at
// its next-level index, CASed in place of the node (the node moves down, same pointer);
// erase CASes its node to 0; assign CASes its node to a new one; find reads. Every iteration
// at a slot that neither descends nor returns is a failure; the iteration after max_failures
// (8) of them freezes the slot with one fetch_or(MARK) whose result is not used (so it is one
// `lock or` on x86, which always succeeds; a fetch_or whose result is used is a CAS loop
// there), reloads it, and, unless it is an array already, CASes the frozen word to a new array:
// a frozen slot can only become an array (every other CAS expects an unmarked word), so if that
// CAS fails another operation made the array. So a slot costs an operation at most
// max_failures + 1 iterations. This is the paper's mechanism (fail counter, mark, expand), with
// one change: the paper's mark is a CAS on a data node, which an adversary that inserts and
// erases another key in the slot can defeat forever (the slot keeps becoming empty, so the mark
// has nothing to hold); fetch_or marks an empty slot too.
//
// The deepest level holds one key, so only that key's operations meet there, and each
// finishes in at most 2 iterations without a counter:
//   erase    sets DEL with one fetch_or whose result is used for that bit only (`lock bts` on
//            x86): the key was present, and is now erased, iff the bit was clear (a live node;
//            empty slots hold DEL). The dead node stays in the word until an insert replaces it.
//   insert   CASes a dead or empty word to its node (retiring the dead node it replaced). A
//            failure returning a live node: present. One returning another dead node N: N was
//            installed after our read, so the key was present just after that install
//            (linearized there, with N's value).
//   assign   one CAS from the live node it read; a failure means another assign or erase
//            changed that node first: linearized just before it (a blind write overwritten).
//
// The bound (fixed-size keys): with L = levels below the head (L = ceil((64 + 8 sizeof(Key) -
// H) / A)), an operation takes at most steps_bound() = L (max_failures + 1) + 2 iterations of
// its slot loop; max_steps (a statistic) is the largest count any operation took. Each
// iteration is a constant number of atomic instructions, every one of which completes in one
// step on x86 (loads, one CAS, `lock or`, `lock bts`), plus at most one array allocated.
//
// Linearization points: insert, erase, assign: their successful CAS or fetch_or; a failing
// find, erase or assign: the read (or failed CAS) that showed the slot empty or another key's
// node; insert of a present key: the read or failed CAS that showed the key's live node, or
// just after the install of the dead node it met (above); assign's CAS overtaken by another
// write: just before that write (above). Expansion and freezing move no key: no abstract
// change. find: the read of the slot holding its node or none.
//
// Progress: wait-free in the map's own steps, as bounded above. Memory management is outside
// the bound, as the paper assumes it wait-free: the paper reclaims with one watched pointer per
// thread re-validated after publishing it, a re-validation that can fail forever under hazard
// pointers' protocol too, so this map takes the reclaimers whose guard covers the whole
// operation and never re-validates a read: none (nothing to do) and ebr (its enter retries
// while the global epoch moves, and may free a bag of retired nodes; lock-free). Allocation is
// the allocation policy's (malloc, or a pool that takes a lock). Reclamation: a node replaced
// by assign, or a dead node replaced by insert, is retired by the thread whose CAS unlinked it;
// dead nodes still in the map and arrays are freed with the map (the paper's arrays are
// permanent too); an unpublished array or node is freed at once.
//
// Memory orders: slot loads acquire (they read the fields of the node or array a release CAS
// published); CAS acq_rel on success (release publishes a new node or array, acquire lets the
// caller read the node the word named) and acquire on failure (the observed node is read);
// the freeze's fetch_or is followed by an acquire reload, and erase's reads nothing through
// the word; every write of a slot is a read-modify-write, so each publishing CAS's release
// sequence reaches every later reader.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/hash/hashes.hpp"
#include "cdsbench/set/stored_key.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t, class Hash = hash::Even>
  requires(std::has_unique_object_representations_v<Key> || is_byte_string_key<Key>) && std::is_trivially_copyable_v<Value>
class FeldmanWaitFreeMap {
  using Word = std::uintptr_t;
  using Slot = std::atomic<Word>;
  static constexpr Word mark_bit = 1, array_bit = 2, del_bit = 4, tag_bits = 7;

  // Byte-string keys: the path is the hash alone, and the deepest level holds overflow chains.
  static constexpr bool overflow = is_byte_string_key<Key>;
  struct NoNext {};

  struct DataNode : R::NodeBase {
    DataNode(const Key& k, const Value& v, const DataNode* n = nullptr) : key(k), value(v) {
      if constexpr (overflow) next = n;
    }
    const stored_key_t<Key> key;  // a byte string's own copy (stored_key.hpp)
    const Value value;
    // Overflow chains only: the next node of the chain, written before the node is published.
    [[no_unique_address]] std::conditional_t<overflow, const DataNode*, NoNext> next{};
  };
  static_assert(alignof(DataNode) > tag_bits);

  // A key's path: its hash, then (fixed-size keys) its own bits.
  static constexpr int path_words = overflow ? 1 : 1 + static_cast<int>((sizeof(Key) + 7) / 8);
  static constexpr int path_bits = overflow ? 64 : 64 + 8 * static_cast<int>(sizeof(Key));
  using Path = std::array<std::uint64_t, path_words>;

 public:
  using key_type = Key;
  using mapped_type = Value;
  using hash_type = Hash;
  using reclaimer_type = R;
  static constexpr int hazard_slots = 1;
  static constexpr std::size_t node_bytes = sizeof(DataNode);
  static constexpr int array_bits = 4;
  static constexpr int max_failures = 8;
  static constexpr int default_head_bits = 16;

  explicit FeldmanWaitFreeMap(int max_threads, reclaim::ReclaimOptions options = {}, SizeHint size = {}, Hash hash = {})
      : reclaimer_(max_threads, hazard_slots, options),
        head_bits_(size.keys ? std::clamp(static_cast<int>(std::bit_width(size.keys - 1)), 8, 24) : default_head_bits),
        deepest_((path_bits - head_bits_ + array_bits - 1) / array_bits),
        head_(new_array(std::size_t{1} << head_bits_)),
        hash_(hash),
        stats_(max_threads, {{"max_steps", StatKind::maximum},
                             {"expansions", StatKind::counter},
                             {"freezes", StatKind::counter}}) {}

  FeldmanWaitFreeMap(const FeldmanWaitFreeMap&) = delete;
  FeldmanWaitFreeMap& operator=(const FeldmanWaitFreeMap&) = delete;

  ~FeldmanWaitFreeMap() { free_array(head_, 0); }

  // The most iterations of the slot loop any operation may take (see the top of the file):
  // fixed-size keys only (an overflow chain's updates are lock-free).
  int steps_bound() const
    requires(!overflow)
  {
    return deepest_ * (max_failures + 1) + 2;
  }
  int head_bits() const { return head_bits_; }
  int deepest_level() const { return deepest_; }

  bool insert(int tid, Key key, Value value) { return put(tid, key, value).second; }

  std::pair<Value, bool> find_or_insert(int tid, Key key, Value value) { return put(tid, key, value); }

  std::optional<Value> find(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    const Path path = path_of(key);
    Slot* array = head_;
    int steps = 0;
    for (int level = 0;; ++level) {
      ++steps;
      const Word w = slot_at(array, path, level).load(std::memory_order_acquire);
      if (is_array(w)) {
        array = array_of(w);
        continue;
      }
      done(tid, steps);
      if (is_dead(w, level)) return std::nullopt;
      const DataNode* n = holding(w, key);
      if (n == nullptr) return std::nullopt;
      return n->value;
    }
  }

  bool contains(int tid, Key key) { return find(tid, key).has_value(); }

  bool erase(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    const Path path = path_of(key);
    Slot* array = head_;
    int steps = 0;
    for (int level = 0;; ++level) {
      Slot& slot = slot_at(array, path, level);
      if (overflow && level == deepest_) {
        const bool erased = rewrite_chain(tid, slot, key, nullptr, steps);
        done(tid, steps);
        return erased;
      }
      if (level == deepest_) {
        ++steps;
        CDSB_INTERLEAVE("fwf.erase.deepest");
        // Only the DEL bit of the result is used (one `lock bts`); the node stays in the word
        // until an insert replaces it. acq_rel: in the slot's order as every write is.
        const bool was_dead = (slot.fetch_or(del_bit, std::memory_order_acq_rel) & del_bit) != 0;
        done(tid, steps);
        return !was_dead;
      }
      Word w = slot.load(std::memory_order_acquire);
      for (int failures = 0;; ++failures) {
        ++steps;
        if (settle(tid, slot, w, level, failures)) break;  // the slot holds an array: descend
        DataNode* n = node_of(w);
        if (n == nullptr || key_of(*n) != key) return done(tid, steps), false;
        CDSB_INTERLEAVE("fwf.erase.found");
        if (slot.compare_exchange_strong(w, 0, std::memory_order_acq_rel, std::memory_order_acquire)) {
          reclaimer_.retire(tid, n);
          return done(tid, steps), true;
        }
      }
      array = array_of(slot.load(std::memory_order_acquire));
    }
  }

  bool assign(int tid, Key key, Value value) {
    auto guard = reclaimer_.enter(tid);
    const Path path = path_of(key);
    Slot* array = head_;
    DataNode* fresh = nullptr;
    int steps = 0;
    const auto finish = [&](bool assigned) {
      if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
      done(tid, steps);
      return assigned;
    };
    for (int level = 0;; ++level) {
      Slot& slot = slot_at(array, path, level);
      if (overflow && level == deepest_) return finish(rewrite_chain(tid, slot, key, &value, steps));
      Word w = slot.load(std::memory_order_acquire);
      for (int failures = 0;; ++failures) {
        ++steps;
        if (level < deepest_ && settle(tid, slot, w, level, failures)) break;
        if (is_dead(w, level)) return finish(false);
        DataNode* n = node_of(w);
        if (n == nullptr || key_of(*n) != key) return finish(false);
        if (!fresh) fresh = reclaimer_.template allocate<DataNode>(tid, key, value);
        CDSB_INTERLEAVE("fwf.assign.found");
        if (slot.compare_exchange_strong(w, reinterpret_cast<Word>(fresh), std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
          fresh = nullptr;
          reclaimer_.retire(tid, n);
          return finish(true);
        }
        // Overtaken by another assign or erase of the key (not a freeze or an expansion, which
        // leave a tag): linearized just before that write.
        if ((w & (mark_bit | array_bit)) == 0 || CDSB_MUTANT("fwf.assign_gives_up_on_expansion"))
          return finish(!CDSB_MUTANT("fwf.assign_fails_when_overtaken"));
      }
      array = array_of(slot.load(std::memory_order_acquire));
    }
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    walk(head_, 0, [&](const DataNode& n, int) { fn(key_of(n), n.value); });
  }
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    walk(head_, 0, [&](const DataNode& n, int) { fn(key_of(n)); });
  }
  // Depth: the arrays a search for the key reads (1 = the head).
  template <class Fn>
  void for_each_key_depth(Fn&& fn) const {
    walk(head_, 0, [&](const DataNode& n, int level) { fn(key_of(n), static_cast<std::size_t>(level + 1)); });
  }

  // Each live node on its own path, no frozen data word left (every freezer expands before it
  // goes on), no DEL above the deepest level, no array at it.
  std::string check_invariants() const {
    std::vector<std::size_t> route;
    return check(head_, 0, route);
  }

  // The reclaimer's counters, the operations' largest step count, expansions and freezes, and
  // occupancy: arrays and their slots, and the deepest level holding a key; the bound on steps
  // (fixed-size keys), or the longest overflow chain (byte strings: keys whose hashes are equal).
  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    std::uint64_t arrays = 0, deepest_key = 0, longest_chain = 0;
    count_arrays(head_, 0, arrays, longest_chain);
    walk(head_, 0, [&](const DataNode&, int level) { deepest_key = std::max<std::uint64_t>(deepest_key, level + 1); });
    r.values.insert(r.values.end(), {{"head_slots", std::uint64_t{1} << head_bits_},
                                     {"child_arrays", arrays},
                                     {"deepest_key_depth", deepest_key}});
    if constexpr (overflow) r.values.emplace_back("longest_overflow_chain", longest_chain);
    else r.values.emplace_back("steps_bound", static_cast<std::uint64_t>(steps_bound()));
    return r;
  }

 private:
  enum Stat { stat_max_steps, stat_expansions, stat_freezes };

  // Insert-if-absent: (the value now held, whether this call inserted it).
  std::pair<Value, bool> put(int tid, const Key& key, const Value& value) {
    auto guard = reclaimer_.enter(tid);
    const Path path = path_of(key);
    Slot* array = head_;
    DataNode* fresh = nullptr;
    int steps = 0;
    const auto finish = [&](std::pair<Value, bool> result) {
      if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
      done(tid, steps);
      return result;
    };
    for (int level = 0;; ++level) {
      Slot& slot = slot_at(array, path, level);
      Word w = slot.load(std::memory_order_acquire);
      if constexpr (overflow) {
        // The key's chain: prepend a node unless the key is in it (lock-free: a CAS fails only
        // when another update of the chain succeeded).
        while (level == deepest_) {
          ++steps;
          if (const DataNode* n = holding(w, key)) return finish({n->value, false});
          if (!fresh) fresh = reclaimer_.template allocate<DataNode>(tid, key, value, node_of(w));
          else if (!CDSB_MUTANT("fwf.chain_insert_keeps_stale_next")) fresh->next = node_of(w);  // published by the CAS (release)
          CDSB_INTERLEAVE("fwf.insert.chain");
          if (slot.compare_exchange_strong(w, reinterpret_cast<Word>(fresh), std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
            fresh = nullptr;
            return finish({value, true});
          }
        }
      }
      if (level == deepest_) {
        for (;;) {
          ++steps;
          if (!is_dead(w, level)) return finish({node_of(w)->value, false});  // live: present
          if (!fresh) fresh = reclaimer_.template allocate<DataNode>(tid, key, value);
          const Word seen = w;
          CDSB_INTERLEAVE("fwf.insert.deepest");
          if (slot.compare_exchange_strong(w, reinterpret_cast<Word>(fresh), std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
            if (DataNode* dead = node_of(seen)) reclaimer_.retire(tid, dead);
            fresh = nullptr;
            return finish({value, true});
          }
          // Another dead node: installed after our read, so the key was present meanwhile (its
          // value immutable; retired only by a later insert, after our guard began). A word's
          // node changes only by an install, so a failed CAS never returns `seen`'s node dead.
          if (is_dead(w, level)) return finish({node_of(w)->value, false});
        }
      }
      for (int failures = 0;; ++failures) {
        ++steps;
        if (settle(tid, slot, w, level, failures)) break;
        if (w == 0) {
          if (!fresh) fresh = reclaimer_.template allocate<DataNode>(tid, key, value);
          CDSB_INTERLEAVE("fwf.insert.empty");
          if (slot.compare_exchange_strong(w, reinterpret_cast<Word>(fresh), std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
            fresh = nullptr;
            return finish({value, true});
          }
          continue;
        }
        const DataNode* n = node_of(w);
        if (key_of(*n) == key) return finish({n->value, false});
        CDSB_INTERLEAVE("fwf.insert.collision");
        if (expand(tid, slot, w, level)) break;
      }
      array = array_of(slot.load(std::memory_order_acquire));
    }
  }

  // At a level above the deepest, with w the slot's word as last read: true when the slot now
  // holds an array (descend); else w is an unfrozen data word or 0 to act on. A frozen slot is
  // expanded here; after max_failures the slot is frozen first.
  bool settle(int tid, Slot& slot, Word& w, int level, int failures) {
    if (is_array(w)) return true;
    if (failures >= max_failures && (w & mark_bit) == 0 && !CDSB_MUTANT("fwf.never_freeze")) {
      CDSB_INTERLEAVE("fwf.freeze");
      // The result unused: one `lock or`, which cannot fail (a used one is a CAS loop on x86).
      slot.fetch_or(mark_bit, std::memory_order_acq_rel);
      // acquire: the node a frozen word names is read by the expansion below. Now frozen, or
      // an array already (the only change a frozen word allows).
      w = slot.load(std::memory_order_acquire);
      stats_.add(tid, stat_freezes);
      if (is_array(w)) return true;
    }
    if ((w & mark_bit) == 0) return false;
    // Frozen: one CAS to an array; if it fails, another made the array.
    expand(tid, slot, w, level);
    return true;
  }

  // Replaces w (a data word, frozen or not, or frozen empty) by a new array holding w's node at
  // its next-level index. True when this call's CAS did it; false (w updated) when the slot
  // changed first.
  bool expand(int tid, Slot& slot, Word& w, int level) {
    Slot* child = new_array(std::size_t{1} << array_bits, level + 1 == deepest_ && !overflow ? del_bit : 0);
    // (With overflow chains, the node moved to the deepest level is a chain of one: its next is null.)
    if (const DataNode* n = node_of(w)) slot_at(child, path_of(key_of(*n)), level + 1).store(w & ~mark_bit, std::memory_order_relaxed);
    // release: the child's slots (and the node, published before) reach whoever reads the array.
    if (slot.compare_exchange_strong(w, reinterpret_cast<Word>(child) | array_bit, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      stats_.add(tid, stat_expansions);
      return true;
    }
    delete[] child;  // never published
    return false;
  }

  // The deepest level with byte-string keys: the slot holds an immutable chain of the keys whose
  // hashes are equal (0: none). erase (value null) and assign replace it by one CAS with a chain
  // without the key's node (assign: with a new node for the key) and with copies of the nodes
  // before it (in reverse order: a chain is a set), and retire the nodes replaced. Linearized at
  // that CAS, or, key absent, at the read that showed the chain without it. Lock-free: the CAS
  // fails only when another update of the chain succeeded.
  bool rewrite_chain(int tid, Slot& slot, const Key& key, const Value* value, int& steps) {
    Word w = slot.load(std::memory_order_acquire);
    for (;;) {
      ++steps;
      const DataNode* target = holding(w, key);
      if (target == nullptr) return false;
      const DataNode* const tail = CDSB_MUTANT("fwf.chain_rewrite_drops_tail") ? nullptr : next_of(target);
      const DataNode* chain = tail;
      try {
        if (value) chain = reclaimer_.template allocate<DataNode>(tid, key, *value, chain);
        for (const DataNode* p = node_of(w); p != target; p = next_of(p))
          chain = reclaimer_.template allocate<DataNode>(tid, key_of(*p), p->value, chain);
      } catch (...) {  // an allocation failed: the copies made so far go, the map is unchanged
        free_unpublished(tid, chain, tail);
        throw;
      }
      CDSB_INTERLEAVE("fwf.chain.rewrite");
      if (slot.compare_exchange_strong(w, reinterpret_cast<Word>(chain), std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        for (const DataNode* p = node_of(w); p != tail;) reclaimer_.retire(tid, const_cast<DataNode*>(std::exchange(p, next_of(p))));
        return true;
      }
      free_unpublished(tid, chain, tail);
    }
  }
  // The nodes of a chain built privately, down to the tail it shares with the published one.
  void free_unpublished(int tid, const DataNode* chain, const DataNode* tail) {
    while (chain != tail) reclaimer_.deallocate(tid, const_cast<DataNode*>(std::exchange(chain, next_of(chain))));
  }

  // The node of word w holding key (searching the chain, at the deepest level with byte-string
  // keys), or null.
  static const DataNode* holding(Word w, const Key& key) {
    for (const DataNode* n = node_of(w); n; n = next_of(n))
      if (key_of(*n) == key) return n;
    return nullptr;
  }
  static const DataNode* next_of(const DataNode* n) {
    if constexpr (overflow) return n->next;
    else return nullptr;
  }
  static decltype(auto) key_of(const DataNode& n) { return KeyStorage<Key>::view(n.key); }

  static bool is_array(Word w) { return (w & array_bit) != 0; }
  bool is_dead(Word w, int level) const { return !overflow && level == deepest_ && (w & del_bit) != 0; }
  static Slot* array_of(Word w) { return reinterpret_cast<Slot*>(w & ~tag_bits); }
  static DataNode* node_of(Word w) { return reinterpret_cast<DataNode*>(w & ~tag_bits); }

  // Slots start empty: 0, or DEL at the deepest level.
  static Slot* new_array(std::size_t slots, Word empty = 0) {
    Slot* a = new Slot[slots];
    for (std::size_t i = 0; i < slots; ++i) a[i].store(empty, std::memory_order_relaxed);
    return a;
  }

  Path path_of(const Key& key) const {
    Path p{};
    p[0] = hash_(key);
    if constexpr (!overflow) std::memcpy(&p[1], &key, sizeof(Key));
    return p;
  }
  // The path bits that index level `level`.
  std::size_t index_at(const Path& path, int level) const {
    const int offset = level == 0 ? 0 : head_bits_ + (level - 1) * array_bits;
    const int width = level == 0 ? head_bits_ : array_bits;
    const int word = offset / 64, bit = offset % 64;
    std::uint64_t v = path[word] >> bit;
    if (bit + width > 64 && word + 1 < path_words) v |= path[word + 1] << (64 - bit);
    return static_cast<std::size_t>(v & ((std::uint64_t{1} << width) - 1));
  }
  Slot& slot_at(Slot* array, const Path& path, int level) const { return array[index_at(path, level)]; }
  std::size_t slots_at(int level) const { return std::size_t{1} << (level == 0 ? head_bits_ : array_bits); }

  void done(int tid, int steps) { stats_.set_max(tid, stat_max_steps, static_cast<std::uint64_t>(steps)); }

  template <class Fn>
  void walk(const Slot* array, int level, Fn&& fn) const {
    for (std::size_t i = 0; i < slots_at(level); ++i) {
      const Word w = array[i].load(std::memory_order_acquire);
      if (is_array(w))
        walk(array_of(w), level + 1, fn);
      else if (!is_dead(w, level))
        for (const DataNode* n = node_of(w); n; n = next_of(n)) fn(*n, level);
    }
  }

  void count_arrays(const Slot* array, int level, std::uint64_t& arrays, std::uint64_t& longest_chain) const {
    for (std::size_t i = 0; i < slots_at(level); ++i) {
      const Word w = array[i].load(std::memory_order_relaxed);
      if (is_array(w)) count_arrays(array_of(w), level + 1, ++arrays, longest_chain);
      std::uint64_t length = 0;
      if (level == deepest_ && !is_dead(w, level))
        for (const DataNode* n = node_of(w); n; n = next_of(n)) ++length;
      longest_chain = std::max(longest_chain, length);
    }
  }

  // route: the indices that led to this array, one per level above it.
  std::string check(const Slot* array, int level, std::vector<std::size_t>& route) const {
    for (std::size_t i = 0; i < slots_at(level); ++i) {
      const Word w = array[i].load(std::memory_order_acquire);
      const std::string where = "level " + std::to_string(level) + " slot " + std::to_string(i) + ": ";
      route.push_back(i);
      std::string bad;
      if (is_array(w)) {
        bad = level == deepest_ ? where + "an array at the deepest level" : check(array_of(w), level + 1, route);
      } else if ((w & mark_bit) != 0) {
        bad = where + "a frozen slot that was never expanded";
      } else if ((w & del_bit) != 0 && (level != deepest_ || overflow)) {
        bad = where + "an erased node above the deepest level, or in an overflow chain";
      } else if (w == 0 && level == deepest_ && !overflow) {
        bad = where + "an empty slot at the deepest level without DEL";
      } else if (!is_dead(w, level)) {
        for (const DataNode* n = node_of(w); n && bad.empty(); n = next_of(n)) {
          const Path path = path_of(key_of(*n));
          for (int l = 0; l <= level && bad.empty(); ++l)
            if (index_at(path, l) != route[static_cast<std::size_t>(l)]) bad = where + "holds a key whose path leads elsewhere";
          if (next_of(n) && level != deepest_) bad = where + "a chain above the deepest level";
          if (holding(reinterpret_cast<Word>(next_of(n)), key_of(*n))) bad = where + "a key twice in its chain";
        }
      }
      route.pop_back();
      if (!bad.empty()) return bad;
    }
    return {};
  }

  void free_array(Slot* array, int level) {
    for (std::size_t i = 0; i < slots_at(level); ++i) {
      const Word w = array[i].load(std::memory_order_relaxed);
      if (is_array(w))
        free_array(array_of(w), level + 1);
      else  // live, or dead (retired only when an insert replaces it), or a chain
        for (const DataNode* n = node_of(w); n;) reclaimer_.deallocate(0, const_cast<DataNode*>(std::exchange(n, next_of(n))));
    }
    delete[] array;
  }

  R reclaimer_;
  const int head_bits_;
  const int deepest_;  // the level whose slots hold one possible key
  Slot* const head_;
  [[no_unique_address]] const Hash hash_;
  UserStats stats_;
};

static_assert(HasAssign<FeldmanWaitFreeMap<reclaim::Archetype<true>>>);

}  // namespace cdsb
