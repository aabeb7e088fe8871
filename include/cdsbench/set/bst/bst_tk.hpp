// BST-TK, the external binary search tree with ticket locks of T. David, R. Guerraoui &
// V. Trigonakis, "Asynchronized Concurrency: The Secret to Scaling Concurrent Search Data
// Structures", ASPLOS 2015.
//
// Keys live in the leaves; internal (routing) nodes send a key k left when k < node.key and
// right otherwise. The paper's point (ASCY): searches, and the search phase of updates, run
// as in a sequential tree, without locks, stores, helping or restarts; an update then locks
// only what it changes and only if nothing changed since its search, else starts over.
//   - Each internal node has one 4-byte lock per child edge: a 16-bit version and a 16-bit
//     ticket, free when they are equal. An update's search reads the version of each edge
//     before following it. Locking is a single CAS from (v, v) to (v, v+1): it fails, and the
//     update restarts, if the edge is held or has changed since (the version moved on).
//     Unlocking after a change stores (v+1, v+1).
//   - insert: lock the parent's edge to the leaf; point it to a new internal node whose
//     children are the new leaf and the old leaf; unlock.
//   - delete: lock the grandparent's edge to the parent and both of the parent's edges; point
//     the grandparent's edge to the leaf's sibling; unlock the grandparent's edge. The parent
//     keeps both edges locked for ever: it is removed, and every later lock attempt on it
//     fails (the paper's "removed" lock state), so no update acts on a removed node.
//   A lock that fails after others were taken is reverted (the word restored: nothing
//   changed). Under the locks the update also re-checks the child pointers it read: a 16-bit
//   version wraps after 65,536 changes of one edge, and a thread preempted for that long
//   must not act on a stale view (cheap: the lines are already held).
//
// Reclamation: the deleting thread retires the parent and the leaf right after its store
// unlinked them (only it could: it held every lock that guards them).
//
// Node layout (+ the reclaimer's NodeBase): internal 32 bytes: key, left, right (what a
// search reads), then the two 4-byte edge locks (what an update's search reads to detect
// change; 8 bytes together, next to the children). Leaf 16 bytes: key, value.
// A child pointer's low bit says whether it points to a leaf. No pthread mutex, no padding.
// Sentinels: keys max-1 and max; user keys must be below max-1 (max_key). The tree starts
// as Root(max){ leaf max-1, leaf max }.
//
// Reclaimers: none, ebr. Not hp and not ibr: searches walk through removed nodes without
// validating anything (that is the design), and a removed node's child pointers are frozen,
// so re-reading them after publishing a hazard or raising a reservation proves nothing (see
// lazy.hpp). Epochs need no per-pointer proof.
//
// Memory orders.
//  - Child loads are acquire: they pair with the release store that linked the node, so its
//    key and children are visible.
//  - An update's search loads an edge's lock word with acquire *before* the child: it pairs
//    with the release of the unlock that ended the last change, so the child read is at least
//    that change's; a later change makes the lock CAS fail.
//  - Lock CAS: acquire (the critical section reads the children as the last holder left
//    them); relaxed on failure (we restart). Unlock and revert stores: release, publishing
//    the critical section to the next holder and to searches that read the version.
//  - Child stores under the lock: release, publishing the new node (insert) or carrying on
//    the sibling's publication, read under the lock (delete), to lock-free readers.
//  - Loads under a lock are relaxed: the lock's acquire ordered them after the last writer.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <limits>
#include <string>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/marked_ptr.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/bst/detail/external_tree.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class BstTk {
  // Searches read links with plain acquire loads, never protect() (why: see the top).
  struct Node : R::NodeBase {
    explicit Node(Key k) : key(k) {}
    const Key key;
  };
  using Child = MarkedPtr<Node, 1>;  // mark set: points to a leaf
  using Link = std::atomic<Child>;

  struct Leaf : Node {
    Leaf(Key k, Value v) : Node(k), value(v) {}
    const Value value;
  };

  // One edge's lock: version in the low 16 bits, ticket in the high 16; free when equal.
  class EdgeLock {
   public:
    // acquire: see the header (read before the child it guards).
    std::uint32_t read() const noexcept { return word_.load(std::memory_order_acquire); }
    static bool is_free(std::uint32_t w) noexcept { return (w & 0xffff) == (w >> 16); }

    // Takes the lock iff it is free and still at the version `seen` was read at.
    bool try_lock(std::uint32_t seen) noexcept {
      if (!is_free(seen)) return false;
      // acquire: the critical section follows the last holder's (its release unlock).
      return word_.compare_exchange_strong(seen, seen + (1u << 16), std::memory_order_acquire,
                                           std::memory_order_relaxed);
    }
    // After a change: version + 1 (= the ticket taken). release: publishes the change.
    void unlock(std::uint32_t seen) noexcept {
      const std::uint32_t v = (seen + 1) & 0xffff;
      word_.store(v | (v << 16), std::memory_order_release);
    }
    // Without a change: the word as it was, the version unchanged. release: as unlock.
    void revert(std::uint32_t seen) noexcept { word_.store(seen, std::memory_order_release); }

   private:
    std::atomic<std::uint32_t> word_{0};
  };
  static_assert(sizeof(EdgeLock) == 4);

  struct Internal : Node {
    Internal(Key k, Child l, Child r) : Node(k), child{l, r} {}
    Link child[2];        // left, right
    EdgeLock lock[2];     // one per child edge
  };

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Internal);
  static constexpr std::size_t leaf_bytes = sizeof(Leaf);
  // Keys max-1 and max are the sentinels'.
  static constexpr Key max_key = std::numeric_limits<Key>::max() - 2;

  explicit BstTk(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options), stats_(max_threads, {{"lock_validation_restarts", StatKind::counter}}) {
    Leaf* l1 = reclaimer_.template allocate<Leaf>(0, inf1, Value{});
    Leaf* l2 = reclaimer_.template allocate<Leaf>(0, inf2, Value{});
    root_ = reclaimer_.template allocate<Internal>(0, inf2, leaf_child(l1), leaf_child(l2));
  }

  BstTk(const BstTk&) = delete;
  BstTk& operator=(const BstTk&) = delete;

  ~BstTk() {
    detail::visit_external_tree<Shape>(Child(root_), [&](Child c) {
      if (c.marked()) reclaimer_.deallocate(0, as_leaf(c));
      else reclaimer_.deallocate(0, as_internal(c));
    });
  }

  // Linearizable (at the child store under the parent's edge lock, or when the search read
  // the edge to a leaf holding the key); blocking (a lock holder stalled between its lock and
  // unlock makes updates on that edge restart until it resumes). Reclaimers: none, ebr.
  bool insert(int tid, Key key, Value value) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Leaf* fresh = nullptr;  // the new leaf, kept across attempts
    Backoff backoff;
    for (;;) {
      const Path path = search(key);
      Leaf* l = as_leaf(path.l);
      if (l->key == key) {
        if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
        return false;
      }
      if (!fresh) fresh = reclaimer_.template allocate<Leaf>(tid, key, value);
      // Built before locking, so the critical section is two stores.
      Internal* internal = key < l->key
                               ? reclaimer_.template allocate<Internal>(tid, l->key, leaf_child(fresh), path.l)
                               : reclaimer_.template allocate<Internal>(tid, key, path.l, leaf_child(fresh));
      EdgeLock& lock = path.p->lock[path.p_dir];
      CDSB_INTERLEAVE("bsttk.insert.searched");  // versions read, nothing locked: p may be removed now
      if (lock.try_lock(path.p_seen)) {
        Link& link = path.p->child[path.p_dir];
        if (link.load(std::memory_order_relaxed) == path.l) {
          // release: publishes the new nodes to searches.
          link.store(Child(internal), std::memory_order_release);
          lock.unlock(path.p_seen);
          return true;
        }
        lock.revert(path.p_seen);  // the version wrapped around: stale view
      }
      reclaimer_.deallocate(tid, internal);  // never published
      stats_.add(tid, lock_validation_restarts);
      backoff();
    }
  }

  // Linearizable (at the grandparent's child store under the locks, or when the search
  // found no leaf with the key); blocking (as insert). Reclaimers: none, ebr.
  bool erase(int tid, Key key) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Backoff backoff;
    for (;;) {
      const Path path = search(key);
      if (as_leaf(path.l)->key != key) return false;
      // A user key's leaf always has a grandparent: Root's left subtree ends in leaf max-1.
      Internal* gp = path.gp;
      Internal* p = path.p;
      const int dir = path.p_dir;
      EdgeLock& gp_lock = gp->lock[path.gp_dir];
      EdgeLock& leaf_lock = p->lock[dir];
      EdgeLock& sibling_lock = p->lock[1 - dir];
      if (gp_lock.try_lock(path.gp_seen)) {
        if (leaf_lock.try_lock(path.p_seen)) {
          // The sibling edge may have changed since the search: any free version will do, it
          // is read under the lock.
          const std::uint32_t sibling_seen = sibling_lock.read();
          if (sibling_lock.try_lock(sibling_seen)) {
            if (gp->child[path.gp_dir].load(std::memory_order_relaxed) == Child(p) &&
                p->child[dir].load(std::memory_order_relaxed) == path.l) {
              const Child sibling = p->child[1 - dir].load(std::memory_order_relaxed);
              // release: see the header. Unlinks p and the leaf.
              gp->child[path.gp_dir].store(sibling, std::memory_order_release);
              gp_lock.unlock(path.gp_seen);
              if (CDSB_MUTANT("bsttk.erase_unlocks_removed")) {  // seeded bug: p looks unchanged again
                leaf_lock.revert(path.p_seen);
                sibling_lock.revert(sibling_seen);
              }
              // p keeps both edges locked: removed for ever.
              reclaimer_.retire(tid, as_leaf(path.l));
              reclaimer_.retire(tid, p);
              return true;
            }
            sibling_lock.revert(sibling_seen);  // the version wrapped around: stale view
          }
          leaf_lock.revert(path.p_seen);
        }
        gp_lock.revert(path.gp_seen);
      }
      stats_.add(tid, lock_validation_restarts);
      backoff();
    }
  }

  // Linearizable (when it reads the edge to a leaf that was in the tree at some point of the
  // search); takes no lock, reads no version and never restarts: one acquire load per level.
  // Lock-free (it cannot be held up by a lock holder). Reclaimers: none, ebr.
  bool contains(int tid, Key key) {
    if (key > max_key) return false;  // a sentinel's key, never a user key
    auto guard = reclaimer_.enter(tid);
    Child c = root_->child[0].load(std::memory_order_acquire);  // user keys are all below Root's key
    while (!c.marked()) {
      Internal* n = as_internal(c);
      c = n->child[key < n->key ? 0 : 1].load(std::memory_order_acquire);
    }
    return c->key == key;
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    detail::for_each_leaf<Shape>(Child(root_), [&](Child c) {
      if (c->key <= max_key) fn(c->key);
    });
  }

  // Each key with the nodes a search for it reads, the sentinel Root included (quiescent).
  template <class Fn>
  void for_each_key_depth(Fn&& fn) const {
    detail::for_each_leaf_depth<Shape>(Child(root_), [&](Child c, std::size_t depth) {
      if (c->key <= max_key) fn(c->key, depth);
    });
  }

  // External-tree shape and key order, no edge lock held by a reachable node (a removed
  // node keeps its locks; a reachable one never may), and the sentinels in place.
  std::string check_invariants() const {
    const Child r = root_->child[1].load(std::memory_order_acquire);
    if (root_->key != inf2 || !r.marked() || r->key != inf2) return "the sentinel Root or leaf max is not in place";
    // max-1 is the largest key under Root's left child (the order is checked below).
    const Child last = detail::rightmost_leaf<Shape>(root_->child[0].load(std::memory_order_acquire));
    if (!Shape::present(last) || last->key != inf1) return "the sentinel leaf max-1 is missing";
    return detail::check_external_tree<Shape>(Child(root_));
  }

  // Nodes reachable from the root, sentinels included (quiescent).
  std::size_t node_count() const {
    std::size_t n = 0;
    detail::visit_external_tree<Shape>(Child(root_), [&](Child) { ++n; });
    return n;
  }

  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat { lock_validation_restarts };
  static constexpr Key inf2 = std::numeric_limits<Key>::max(), inf1 = inf2 - 1;

  static Child leaf_child(Leaf* l) { return Child(l, 1); }
  static Leaf* as_leaf(Child c) { return static_cast<Leaf*>(c.get()); }
  static Internal* as_internal(Child c) { return static_cast<Internal*>(c.get()); }

  struct Path {
    Internal* gp;
    Internal* p;
    Child l;
    std::uint32_t gp_seen;  // gp's lock on the edge to p, read before that edge
    std::uint32_t p_seen;   // p's lock on the edge to l, read before that edge
    int gp_dir;
    int p_dir;
  };

  // An update's search: parent and grandparent, with the versions of the edges followed.
  Path search(Key key) const {
    Path path{nullptr, root_, Child(), 0, 0, 0, 0};
    path.p_dir = key < root_->key ? 0 : 1;
    path.p_seen = root_->lock[path.p_dir].read();
    path.l = root_->child[path.p_dir].load(std::memory_order_acquire);
    while (!path.l.marked()) {
      path.gp = path.p;
      path.gp_seen = path.p_seen;
      path.gp_dir = path.p_dir;
      path.p = as_internal(path.l);
      path.p_dir = key < path.p->key ? 0 : 1;
      path.p_seen = path.p->lock[path.p_dir].read();
      path.l = path.p->child[path.p_dir].load(std::memory_order_acquire);
    }
    return path;
  }

  struct Shape {
    static bool present(Child c) { return c.get() != nullptr; }
    static bool is_leaf(Child c) { return c.marked(); }
    static Key key(Child c) { return c->key; }
    static Child left(Child c) { return as_internal(c)->child[0].load(std::memory_order_acquire); }
    static Child right(Child c) { return as_internal(c)->child[1].load(std::memory_order_acquire); }
    static const char* problem(Child c) {
      if (c.marked()) return nullptr;
      const Internal* n = as_internal(c);
      if (!EdgeLock::is_free(n->lock[0].read()) || !EdgeLock::is_free(n->lock[1].read()))
        return "an edge lock is held (or the node was removed but is still reachable)";
      return nullptr;
    }
  };

  R reclaimer_;
  Internal* root_;  // key max, for ever; its right child is leaf max
  UserStats stats_;
};

static_assert(ConcurrentSet<BstTk<reclaim::Archetype<>>>);

}  // namespace cdsb
