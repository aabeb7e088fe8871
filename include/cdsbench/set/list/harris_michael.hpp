// The Harris–Michael lock-free sorted linked list.
//
// T. Harris, "A Pragmatic Implementation of Non-Blocking Linked-Lists", DISC 2001: a node is
// deleted in two steps, first logically by marking its own next pointer (which freezes it),
// then physically by a CAS on its predecessor's link. M. Michael, "High Performance Dynamic
// Lock-Free Hash Tables and List-Based Sets", SPAA 2002: every traversal unlinks the marked
// nodes it meets (so a node is unlinked, and retired, by exactly one thread) and validates
// each step so that the list works with hazard pointers as well as with epochs.
//
// Node layout (24 bytes + the reclaimer's NodeBase: 8 more with IBR): key first, then the
// marked next pointer (the two fields a search reads), then the value.
//
// Reclaimers: none, ebr, hp (3 slots: prev, cur, next), ibr. The traversal never follows a
// link out of a node it has not validated as reachable (the predecessor's link still points
// to it, unmarked), which is what HP and IBR require.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/marked_ptr.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"

namespace cdsb {

template <reclaim::Reclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class HarrisMichaelList {
  struct Node;
  using Ptr = MarkedPtr<Node>;  // mark set: the node holding this link is logically deleted
  using Link = std::atomic<Ptr>;

  struct Node : R::NodeBase {
    Node(Key k, Value v, Ptr n) : key(k), next(n), value(v) {}
    const Key key;
    Link next;
    Value value;
  };

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr int hazard_slots = 3;
  static constexpr std::size_t node_bytes = sizeof(Node);

  explicit HarrisMichaelList(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, hazard_slots, options),
        stats_(max_threads, {{"find_restarts", StatKind::counter}, {"helped_unlinks", StatKind::counter}}) {}

  HarrisMichaelList(const HarrisMichaelList&) = delete;
  HarrisMichaelList& operator=(const HarrisMichaelList&) = delete;

  ~HarrisMichaelList() {
    Node* n = head_.load(std::memory_order_relaxed).get();
    while (n) {
      Node* next = n->next.load(std::memory_order_relaxed).get();
      reclaimer_.deallocate(0, n);
      n = next;
    }
  }

  // Linearizable (at the CAS that links the node, or at the find that saw the key);
  // lock-free.
  bool insert(int tid, Key key, Value value) {
    auto guard = reclaimer_.enter(tid);
    Node* node = nullptr;
    for (;;) {
      Position pos;
      if (find(tid, key, pos)) {
        if (node) reclaimer_.deallocate(tid, node);  // never published
        return false;
      }
      if (!node) node = reclaimer_.template allocate<Node>(tid, key, value, pos.cur);
      else node->next.store(pos.cur, std::memory_order_relaxed);  // published by the CAS below
      Ptr expected = pos.cur;
      CDSB_INTERLEAVE("hm.insert.located");  // position found, node not yet linked
      // release: publishes the node's fields to whoever reads this link (acquire/protect).
      if (pos.prev->compare_exchange_strong(expected, Ptr(node), std::memory_order_release,
                                            std::memory_order_relaxed))
        return true;
    }
  }

  // Linearizable (at the CAS that marks the node, or at the find that missed the key);
  // lock-free.
  bool erase(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      Position pos;
      if (!find(tid, key, pos)) return false;
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
        find(tid, key, pos);  // unlinks (and retires) the marked node on its way
      return true;
    }
  }

  // Linearizable (when it reads the node's link, or the link past the key); lock-free (it
  // helps unlink marked nodes, as HP requires; with ebr and ibr their enter/protect loops
  // are lock-free too).
  bool contains(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    Position pos;
    return find(tid, key, pos);
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for (Ptr p = head_.load(std::memory_order_acquire); p.get(); p = p->next.load(std::memory_order_acquire))
      if (!p->next.load(std::memory_order_relaxed).marked()) fn(p->key);
  }

  // Keys strictly increasing and no marked node left reachable (every completed erase
  // unlinked its node).
  std::string check_invariants() const {
    bool first = true;
    Key last{};
    std::uint64_t index = 0;
    for (Ptr p = head_.load(std::memory_order_acquire); p.get(); p = p->next.load(std::memory_order_acquire), ++index) {
      if (p->next.load(std::memory_order_relaxed).marked())
        return "node " + std::to_string(index) + " (key " + std::to_string(p->key) + ") is marked but still linked";
      if (!first && !(last < p->key))
        return "keys out of order at node " + std::to_string(index) + " (" + std::to_string(last) + " then " +
               std::to_string(p->key) + ")";
      first = false;
      last = p->key;
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

  struct Position {
    Link* prev;  // the link that points to cur
    Ptr cur;     // the first node with key >= the searched key (unmarked), or null
    Ptr next;    // cur's successor when found
  };

  // Michael's find: on return, cur (and prev's node) are protected. Hazard slots rotate
  // between the roles prev / cur / next so a node keeps its hazard while its role changes.
  bool find(int tid, Key key, Position& pos) {
  try_again:
    int s_prev = 0, s_cur = 1, s_next = 2;
    Link* prev = &head_;
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
        if (!(c->key < key)) {
          pos = {prev, cur, next};
          return c->key == key;
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
  alignas(false_sharing_range) Link head_{Ptr()};
  UserStats stats_;
};

static_assert(ConcurrentSet<HarrisMichaelList<reclaim::Archetype<false>>>);

}  // namespace cdsb
