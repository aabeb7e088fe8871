// The lazy list: S. Heller, M. Herlihy, V. Luchangco, M. Moir, W. Scherer & N. Shavit,
// "A Lazy Concurrent List-Based Set Algorithm", OPODIS 2005.
//
// Updates lock the predecessor and the current node (4-byte spin locks in the nodes, as the
// BST study recommends over pthread mutexes), validate that both are unmarked and still
// adjacent, and then change the list; erase marks the node (logical deletion) before
// unlinking it. contains takes no lock and never retries: it walks to the key and checks
// the mark.
//
// Node layout (32 bytes + the reclaimer's NodeBase): key and next first (what contains
// reads), then the mark and the lock, then the value. Sentinels with keys 0 and the
// maximum key bound the list (keys live in [1, max - 1]).
//
// Reclaimers: none, ebr. Not hp and not ibr: traversals walk through removed nodes without
// validating anything (that is the algorithm's point). HP and IBR both make a pointer safe by
// re-reading the link it came from after publishing the hazard or raising the reservation;
// a removed node's link is frozen, so that re-read proves nothing, and its successor may
// already have been retired and freed by a scan that missed the reservation (ASan and TSan
// showed exactly that with IBR). Epochs need no per-pointer proof.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/spin_lock.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class LazyList {
  struct Node : R::NodeBase {
    Node(Key k, Value v, Node* n) : key(k), next(n), value(v) {}
    const Key key;
    std::atomic<Node*> next;
    std::atomic<bool> marked{false};
    SpinLock lock;
    Value value;
  };

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Node);

  explicit LazyList(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options), stats_(max_threads, {{"lock_validation_retries", StatKind::counter}}) {
    tail_ = reclaimer_.template allocate<Node>(0, std::numeric_limits<Key>::max(), Value{}, nullptr);
    head_ = reclaimer_.template allocate<Node>(0, std::numeric_limits<Key>::min(), Value{}, tail_);
  }

  LazyList(const LazyList&) = delete;
  LazyList& operator=(const LazyList&) = delete;

  ~LazyList() {
    for (Node* n = head_; n;) {
      Node* next = n->next.load(std::memory_order_relaxed);
      reclaimer_.deallocate(0, n);
      n = next;
    }
  }

  // Linearizable (at the link store, or when validated with the key present); blocking.
  bool insert(int tid, Key key, Value value) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      auto [pred, curr] = locate(tid, key);
      CDSB_INTERLEAVE("lazy.insert.located");  // found without locks: either may be removed now
      // Locks in list order (pred before curr): no deadlock.
      std::scoped_lock lock_pred(pred->lock), lock_curr(curr->lock);
      if (!valid(pred, curr)) {
        stats_.add(tid, lock_validation_retries);
        continue;
      }
      if (curr->key == key) return false;
      Node* node = reclaimer_.template allocate<Node>(tid, key, value, curr);
      // release: publishes the node's fields to traversals (their acquire loads).
      pred->next.store(node, std::memory_order_release);
      return true;
    }
  }

  // Linearizable (at the mark store, or when validated with the key absent); blocking.
  bool erase(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      auto [pred, curr] = locate(tid, key);
      {
        std::scoped_lock lock_pred(pred->lock), lock_curr(curr->lock);
        if (!valid(pred, curr)) {
          stats_.add(tid, lock_validation_retries);
          continue;
        }
        if (curr->key != key) return false;
        // release: a contains that sees the mark (acquire) sees the node as deleted; this is
        // the erase's linearization point.
        curr->marked.store(true, std::memory_order_release);
        CDSB_INTERLEAVE("lazy.erase.marked");  // logically deleted, still linked (and locked)
        // release: pairs with traversals' acquire loads of pred->next.
        pred->next.store(curr->next.load(std::memory_order_relaxed), std::memory_order_release);
      }
      reclaimer_.retire(tid, curr);
      return true;
    }
  }

  // Linearizable. Takes no lock and never retries: wait-free with `none` (bounded by the
  // list's length); with ebr as lock-free as its enter.
  bool contains(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    Node* curr = head_;
    while (curr->key < key) curr = reclaimer_.protect(tid, 0, curr->next);
    if (CDSB_MUTANT("lazy.contains_ignores_mark")) return curr->key == key;
    // acquire: pairs with erase's release of the mark.
    return curr->key == key && !curr->marked.load(std::memory_order_acquire);
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for (Node* n = head_->next.load(std::memory_order_acquire); n != tail_; n = n->next.load(std::memory_order_acquire))
      fn(n->key);
  }

  // Keys strictly increasing between the sentinels; no marked or locked node reachable.
  std::string check_invariants() const {
    std::uint64_t index = 0;
    for (Node* n = head_; n != tail_; ++index) {
      Node* next = n->next.load(std::memory_order_acquire);
      if (!next) return "the list ends at node " + std::to_string(index) + " before the tail sentinel";
      if (!(n->key < next->key))
        return "keys out of order at node " + std::to_string(index + 1) + " (" + std::to_string(n->key) + " then " +
               std::to_string(next->key) + ")";
      if (next->marked.load(std::memory_order_relaxed))
        return "node " + std::to_string(index + 1) + " (key " + std::to_string(next->key) + ") is marked but still linked";
      if (!next->lock.try_lock()) return "node " + std::to_string(index + 1) + " is still locked";
      next->lock.unlock();
      n = next;
    }
    return {};
  }

  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat { lock_validation_retries };

  // The last node with key < `key` and its successor, found without locks.
  std::pair<Node*, Node*> locate(int tid, Key key) {
    Node* pred = head_;
    Node* curr = reclaimer_.protect(tid, 0, pred->next);
    while (curr->key < key) {
      pred = curr;
      curr = reclaimer_.protect(tid, 0, curr->next);
    }
    return {pred, curr};
  }

  // Under both locks: neither node deleted, and still adjacent.
  static bool valid(Node* pred, Node* curr) {
    // relaxed: the locks order these reads after the writes of the previous lock holders.
    if (CDSB_MUTANT("lazy.validate_ignores_marks")) return pred->next.load(std::memory_order_relaxed) == curr;
    return !pred->marked.load(std::memory_order_relaxed) && !curr->marked.load(std::memory_order_relaxed) &&
           pred->next.load(std::memory_order_relaxed) == curr;
  }

  R reclaimer_;
  Node* head_;
  Node* tail_;
  UserStats stats_;
};

static_assert(ConcurrentSet<LazyList<reclaim::Archetype<>>>);

}  // namespace cdsb
