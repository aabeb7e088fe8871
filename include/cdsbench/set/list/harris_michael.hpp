// The Harris–Michael lock-free sorted linked list.
//
// T. Harris, "A Pragmatic Implementation of Non-Blocking Linked-Lists", DISC 2001: a node is
// deleted in two steps, first logically by marking its own next pointer (which freezes it),
// then physically by a CAS on its predecessor's link. M. Michael, "High Performance Dynamic
// Lock-Free Hash Tables and List-Based Sets", SPAA 2002: every traversal unlinks the marked
// nodes it meets (so a node is unlinked, and retired, by exactly one thread) and validates
// each step so that the list works with hazard pointers as well as with epochs.
//
// The algorithm lives in HarrisMichaelChains, which runs it on any number of chains that share
// one reclaimer: the list is one chain, Michael's hash map (set/hash/michael_hash_map.hpp) one
// chain per bucket.
//
// Node layout (24 bytes + the reclaimer's NodeBase: 8 more with IBR; a byte-string key takes 16
// bytes and its bytes apart, set/stored_key.hpp): key first, then the marked next pointer (the
// two fields a search reads), then the value.
//
// Values: a node's value is an atomic word that `assign` overwrites in place (release; `find`
// reads it with acquire, so a value that points to data publishes it). An assign or find that
// touches a node after an erase marked it found the node unmarked before the mark, so its
// interval contains the mark: it is linearized just before the erase, in the order of its
// access to the value word. Hence assign and find are linearizable without a lock.
//
// Reclaimers: none, ebr, hp (3 slots: prev, cur, next), ibr. The traversal never follows a
// link out of a node it has not validated as reachable (the predecessor's link still points
// to it, unmarked), which is what HP and IBR require.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/marked_ptr.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/stored_key.hpp"

namespace cdsb {
namespace detail {

// The Harris-Michael algorithm on chains headed by links the owner keeps; the reclaimer and
// the statistics are shared by all of them. Every operation takes the chain's head.
template <reclaim::Reclaimer R, class Key, class Value>
class HarrisMichaelChains {
  struct Node;
  using Ptr = MarkedPtr<Node>;  // mark set: the node holding this link is logically deleted

  using Stored = stored_key_t<Key>;  // the key as a node keeps it (stored_key.hpp)
  struct Node : R::NodeBase {
    Node(const Key& k, Value v, Ptr n) : key(k), next(n), value(v) {}
    const Stored key;
    std::atomic<Ptr> next;
    std::atomic<Value> value;
  };

 public:
  using Link = std::atomic<Ptr>;
  static constexpr int hazard_slots = 3;
  static constexpr std::size_t node_bytes = sizeof(Node);

  HarrisMichaelChains(int max_threads, reclaim::ReclaimOptions options)
      : reclaimer_(max_threads, hazard_slots, options),
        stats_(max_threads, {{"find_restarts", StatKind::counter}, {"helped_unlinks", StatKind::counter}}) {}

  // Quiescent: frees the chain's nodes.
  void free_chain(Link& head) {
    Node* n = head.load(std::memory_order_relaxed).get();
    while (n) {
      Node* next = n->next.load(std::memory_order_relaxed).get();
      reclaimer_.deallocate(0, n);
      n = next;
    }
    head.store(Ptr(), std::memory_order_relaxed);
  }

  // Linearizable (at the CAS that links the node, or at the find that saw the key; with
  // *existing, at the load of its value, as find_value); lock-free. The key's value, if it was
  // present, goes to *existing.
  bool insert(int tid, Link& head, Key key, Value value, Value* existing = nullptr) {
    auto guard = reclaimer_.enter(tid);
    bool inserted;
    Node* node = link_node(tid, head, key, value, inserted);
    if (!inserted && existing) *existing = node->value.load(std::memory_order_acquire);  // node still protected
    return inserted;
  }

  // Links a node with `key` that is never erased, or finds the one another thread linked, and
  // returns its link: a sentinel from which other operations start as from a head (the
  // split-ordered map's bucket nodes). Lock-free. Never freed before free_chain, so the link
  // stays valid after the guard ends.
  Link& sentinel(int tid, Link& head, Key key) {
    auto guard = reclaimer_.enter(tid);
    bool inserted;
    return link_node(tid, head, key, Value{}, inserted)->next;
  }

  // Linearizable (at the CAS that marks the node, or at the find that missed the key);
  // lock-free.
  bool erase(int tid, Link& head, Key key) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      Position pos;
      if (!find(tid, head, key, pos)) return false;
      Ptr next = pos.next;  // unmarked: find returns only an unmarked node
      // release: keeps next's publication in the chain for whoever reads the marked link.
      // Marking decides which erase of the key succeeds (its linearization point).
      if (!pos.cur.get()->next.compare_exchange_strong(next, next.with_mark(1), std::memory_order_release,
                                                        std::memory_order_relaxed))
        continue;  // a successor was inserted or removed, or someone else marked it
      CDSB_INTERLEAVE("hm.erase.marked");  // logically deleted, still linked
      Ptr expected = pos.cur;
      // release: publishes `next` (inserted by others) to readers of this link. The unlink
      // precedes the retire's reclamation checks by program order and the scheme's fences.
      if (pos.prev->compare_exchange_strong(expected, next, std::memory_order_release, std::memory_order_relaxed))
        reclaimer_.retire(tid, pos.cur.get());
      else
        find(tid, head, key, pos);  // unlinks (and retires) the marked node on its way
      return true;
    }
  }

  // Linearizable (when it reads the node's link, or the link past the key); lock-free (it
  // helps unlink marked nodes, as HP requires; with ebr and ibr their enter/protect loops
  // are lock-free too).
  bool contains(int tid, Link& head, Key key) {
    auto guard = reclaimer_.enter(tid);
    Position pos;
    return find(tid, head, key, pos);
  }

  // Linearizable: absent at the read that missed the key (as contains); present at the load
  // of the value if the node was still unmarked then, else just before the erase that marked
  // it (the top of the file); lock-free.
  std::optional<Value> find_value(int tid, Link& head, Key key) {
    auto guard = reclaimer_.enter(tid);
    Position pos;
    if (!find(tid, head, key, pos)) return std::nullopt;
    CDSB_INTERLEAVE("hm.find_value.located");  // node found unmarked (and protected), value not yet read
    // acquire: a value that points to data (dedup's compressed chunk) publishes it.
    return pos.cur->value.load(std::memory_order_acquire);
  }

  // Linearizable (at its store into a node found unmarked, see the top); lock-free.
  bool assign(int tid, Link& head, Key key, Value value) {
    auto guard = reclaimer_.enter(tid);
    Position pos;
    if (!find(tid, head, key, pos)) return false;
    CDSB_INTERLEAVE("hm.assign.located");  // node found unmarked, value not yet stored
    pos.cur->value.store(value, std::memory_order_release);  // release: pairs with find_value
    return true;
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_entry(const Link& head, Fn&& fn) const {
    for (Ptr p = head.load(std::memory_order_acquire); p.get(); p = p->next.load(std::memory_order_acquire))
      if (!p->next.load(std::memory_order_relaxed).marked()) fn(key_of(*p.get()), p->value.load(std::memory_order_relaxed));
  }

  // Keys strictly increasing and no marked node left reachable (every completed erase
  // unlinked its node); `chain` names the chain in the message.
  std::string check_chain(const Link& head, const std::string& chain) const {
    bool first = true;
    Key last{};
    std::uint64_t index = 0;
    for (Ptr p = head.load(std::memory_order_acquire); p.get(); p = p->next.load(std::memory_order_acquire), ++index) {
      if (p->next.load(std::memory_order_relaxed).marked())
        return chain + "node " + std::to_string(index) + " (key " + key_text(key_of(*p.get())) + ") is marked but still linked";
      if (!first && !(last < key_of(*p.get())))
        return chain + "keys out of order at node " + std::to_string(index) + " (" + key_text(last) + " then " +
               key_text(key_of(*p.get())) + ")";
      first = false;
      last = key_of(*p.get());
    }
    return {};
  }

  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat { find_restarts, helped_unlinks };

  static decltype(auto) key_of(const Node& n) { return KeyStorage<Key>::view(n.key); }

  static std::string key_text(const Key& k) {
    if constexpr (std::is_integral_v<Key>) return std::to_string(k);
    else if constexpr (is_byte_string_key<Key>) return "'" + std::string(k) + "'";
    else return "?";
  }

  struct Position {
    Link* prev;  // the link that points to cur
    Ptr cur;     // the first node with key >= the searched key (unmarked), or null
    Ptr next;    // cur's successor when found
  };

  // The node holding key: the one found, or a new one linked (inserted = true). The caller
  // holds a guard, which keeps a found node protected until it ends; a node this call linked is
  // not protected (hazard pointers hold no slot for it), so only a node that is never retired
  // (a sentinel) may be used after the guard.
  Node* link_node(int tid, Link& head, Key key, Value value, bool& inserted) {
    Node* node = nullptr;
    for (;;) {
      Position pos;
      if (find(tid, head, key, pos)) {
        if (node) reclaimer_.deallocate(tid, node);  // never published
        inserted = false;
        return pos.cur.get();
      }
      if (!node) node = reclaimer_.template allocate<Node>(tid, key, value, pos.cur);
      else node->next.store(pos.cur, std::memory_order_relaxed);  // published by the CAS below
      Ptr expected = pos.cur;
      CDSB_INTERLEAVE("hm.insert.located");  // position found, node not yet linked
      // release: publishes the node's fields to whoever reads this link (acquire/protect).
      if (pos.prev->compare_exchange_strong(expected, Ptr(node), std::memory_order_release,
                                            std::memory_order_relaxed)) {
        inserted = true;
        return node;
      }
    }
  }

  // Michael's find: on return, cur (and prev's node) are protected. Hazard slots rotate
  // between the roles prev / cur / next so a node keeps its hazard while its role changes.
  bool find(int tid, Link& head, Key key, Position& pos) {
  try_again:
    int s_prev = 0, s_cur = 1, s_next = 2;
    Link* prev = &head;
    Ptr cur = reclaimer_.protect(tid, s_cur, *prev);
    for (;;) {
      Node* c = cur.get();
      if (!c) {
        pos = {prev, cur, Ptr()};
        return false;
      }
      const Ptr next = reclaimer_.protect(tid, s_next, c->next);
      // cur is still reachable (prev's node unmarked, its link still pointing to cur), so
      // `next` was cur's successor while cur was reachable: safe to follow. A marked prev (its
      // node deleted under us) fails this test too. seq_cst (a plain load on x86): for HP the
      // proof that `next` was reachable after its hazard was published needs this load in the
      // single total order with the hazard store and the scanner's fence.
      if (prev->load(std::memory_order_seq_cst) != cur) {
        stats_.add(tid, find_restarts);
        goto try_again;
      }
      if (CDSB_MUTANT("hm.find_ignores_mark") || !next.marked()) {
        if (!(key_of(*c) < key)) {
          pos = {prev, cur, next};
          return key_of(*c) == key;
        }
        prev = &c->next;
        const int freed = s_prev;
        s_prev = s_cur;
        s_cur = s_next;
        s_next = freed;
      } else {
        // cur is logically deleted: unlink it (release, as in erase).
        Ptr expected = cur;
        if (!prev->compare_exchange_strong(expected, next.unmarked(), std::memory_order_release,
                                           std::memory_order_relaxed)) {
          stats_.add(tid, find_restarts);
          goto try_again;
        }
        reclaimer_.retire(tid, c);
        stats_.add(tid, helped_unlinks);
        const int freed = s_cur;
        s_cur = s_next;
        s_next = freed;
      }
      cur = next.unmarked();
    }
  }

  R reclaimer_;
  UserStats stats_;
};

}  // namespace detail

template <reclaim::Reclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class HarrisMichaelList {
  using Chains = detail::HarrisMichaelChains<R, Key, Value>;

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr int hazard_slots = Chains::hazard_slots;
  static constexpr std::size_t node_bytes = Chains::node_bytes;

  explicit HarrisMichaelList(int max_threads, reclaim::ReclaimOptions options = {}) : chains_(max_threads, options) {}

  HarrisMichaelList(const HarrisMichaelList&) = delete;
  HarrisMichaelList& operator=(const HarrisMichaelList&) = delete;

  ~HarrisMichaelList() { chains_.free_chain(head_); }

  // Each operation: linearizable and lock-free, as HarrisMichaelChains says.
  bool insert(int tid, Key key, Value value) { return chains_.insert(tid, head_, key, value); }
  bool erase(int tid, Key key) { return chains_.erase(tid, head_, key); }
  bool contains(int tid, Key key) { return chains_.contains(tid, head_, key); }
  std::optional<Value> find(int tid, Key key) { return chains_.find_value(tid, head_, key); }
  std::pair<Value, bool> find_or_insert(int tid, Key key, Value value) {
    Value existing{};
    return chains_.insert(tid, head_, key, value, &existing) ? std::pair{value, true} : std::pair{existing, false};
  }
  bool assign(int tid, Key key, Value value) { return chains_.assign(tid, head_, key, value); }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    chains_.for_each_entry(head_, [&](const Key& k, const Value&) { fn(k); });
  }
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    chains_.for_each_entry(head_, fn);
  }
  std::string check_invariants() const { return chains_.check_chain(head_, ""); }
  StatsReport stats() const { return chains_.stats(); }

 private:
  Chains chains_;
  alignas(false_sharing_range) typename Chains::Link head_{};
};

static_assert(HasAssign<HarrisMichaelList<reclaim::Archetype<false>>>);

}  // namespace cdsb
