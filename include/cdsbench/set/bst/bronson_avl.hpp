// The concurrent relaxed-balance AVL tree of N. G. Bronson, J. Casper, H. Chafi & K. Olukotun,
// "A Practical Concurrent Binary Search Tree", PPoPP 2010.
//
// An internal tree (every node holds a key) kept nearly AVL-balanced by rotations that run
// after the update that unbalanced it, each under a few per-node locks. Readers take no lock:
// they validate what they read with per-node version words (optimistic concurrency control).
//   - Partially external deletes: a node with two children is not unlinked but becomes a
//     *routing node* (present = 0: its key is not in the set, it still routes searches); a node
//     with at most one child is unlinked at once. Routing nodes that drop to at most one child
//     are unlinked later, by the repair pass of whichever update caused it. An insert of a key
//     whose routing node is still in the tree revives it (present = 1) in place.
//   - Versions: a rotation moves node n down, which *shrinks* n's key range (the keys whose
//     search passes through n). It sets n's `shrinking` bit before its first pointer store and
//     bumps n's change counter after its last. Growing never invalidates a search, so the node
//     that moves up keeps its version. Unlinking a node sets its `unlinked` bit for ever. The
//     word is 32 bits (2 flags, a 30-bit counter; the paper's Java uses a long): a search (or
//     an insert between its search and its lock) stalled between its two reads of one node's
//     version while that node is rotated down a nonzero multiple of 2^30 times (each rotation
//     under three locks: a stall of a minute or more) would validate a stale view. We accept
//     that (it keeps the node at 56 bytes).
//   - Repair: after an update, rotations restore |h(left) - h(right)| <= 1 and heights, and
//     routing nodes with fewer than two children are unlinked, bottom-up, each step under the
//     locks of parent, node and (rotations) child(ren), locked top-down.
//
// How a search validates (contains, and the search phase of insert and erase). It keeps the
// invariant "the key's range contains k at n, and n has not shrunk or been unlinked since we
// read n's version v". One level, from n (version v) in direction d:
//   1. c = n.child[d] (acquire). If null: re-read n.version; equal to v means n's range still
//      held k when the null was read, so k is absent. Otherwise restart.
//   2. If c.key == k: the answer is c.present (no version read: a node with key k that we
//      reached was in the tree during the operation, and present is final once unlinked, see
//      contains()).
//   3. cv = c.version (acquire): shrinking means a rotation is moving c down now: wait for it
//      (bounded spin) and restart; unlinked means c is gone: restart.
//   4. Re-read n.child[d] == c, then n.version == v: c was n's child while n's range held k,
//      after cv was read, so c's range held k then and still does while c.version == cv.
//      Otherwise restart. Continue at c with version cv.
// Each node's version is thus read once on the way in (3) and once on the way out (1 or 4);
// the node holding the key is never version-read and the root holder never changes. Every
// failed validation restarts the operation from the root, as the BST study recommends (it
// found the paper's recursive revalidation, which backs up one level and retries there, no
// faster and much more complex); the paper's per-level RETRY bookkeeping is gone.
//
// Interleaving point (platform/interleave.hpp; tests/scripted/test_bronson_scripted.cpp):
//   bronson.search.child_read   a search read c = n.child[d] (not the key), not yet c's version
//
// Reclamation: a node leaves the tree only by being unlinked (a delete of a node with at most
// one child, or a repair unlinking a routing node), under the locks of its parent and itself,
// after checking its unlinked bit is clear and then setting it. The thread that sets the bit
// retires the node, after unlocking, inside its guard: exactly once.
//
// Progress: blocking, every operation. Updates and repairs take per-node spin locks, top-down
// (each lock after the first is on a child of a node we hold, validated under that hold, so
// no cycle of waits exists). contains takes no lock and writes nothing, but a search that
// meets a node being rotated down waits for the rotation and restarts: a rotator stalled
// inside its critical section holds up every search through that node (the paper: reads are
// not even obstruction-free), and continuous rotations can make a search restart repeatedly.
//
// Node layout (56 bytes + the reclaimer's NodeBase): key, left, right, version (4), present
// (4): what a search reads, in the first 32 bytes; then the 4-byte lock (SpinLock), height (4),
// parent and value (updates and repairs only). No padding. The root holder is a node with no
// key of its own: its right child is the root, its version never changes.
//
// Balance at quiescence. The paper defers rebalancing to a repair pass after each update
// (fixHeightAndRebalance) and SnapTree, its authors' code, documents that the tree "is always
// properly balanced when quiescent" (a 2012 SnapTree fix, "extra routing nodes from race near
// a leaf", shows how subtle the hand-off of that damage is). Its repair pass, though, filters
// with nodeCondition (unlocked reads of the node and its children's heights: stop if nothing
// looks wrong), and that filter
// can lose damage: a rotation reads a grandchild's height without that grandchild's lock, and
// the thread that changes that height concurrently may evaluate the old, pre-rotation parent
// unlocked, see nothing wrong and stop; the rotation then stores a height computed from the
// stale value (and, likewise, a rotation that leaves its moved-down node damaged returns
// before re-evaluating the parent above it). We close both holes: every evaluation of a node
// runs under that node's lock (every change of a node's children, height or present is made
// under it; a child's height is stored before the writer locks the parent to evaluate it, so
// either the evaluation sees it or the writer's own later evaluation does), the writer
// re-validates that it evaluates the child's *current* parent, and a rotation evaluates every
// node it touched, bottom-up, keeping the damaged ones pending. Hence at quiescence: every
// stored height is exact, |h(left) - h(right)| <= 1 at every node (strict AVL), and no routing
// node has fewer than two children. check_invariants() checks all three. Cost: the last
// level of a repair walk takes a lock where the paper's unlocked filter took none.
//
// Reclaimers: none, ebr. Not hp and not ibr: searches traverse nodes optimistically. A search
// dereferences a node (its key, its version) as soon as it has read the pointer to it, and
// learns only afterwards, from its parent's child pointer and version, whether the node was
// still in the tree; it may thus read a node that was unlinked and retired just before. An
// unlinked node's child pointers are frozen, so re-reading "the link it came from" after
// publishing a hazard proves nothing by itself (see lazy.hpp); a sound HP version would publish
// and validate (parent's child pointer and parent's version) before each first touch, a
// store-load fence per level the paper's search does not have, and would need a hazard for
// every node a repair keeps pending (unbounded). IBR's reservations have the same first-touch
// gap. Epochs protect everything reachable during a guard, which is what this traversal needs.
//
// Memory orders (a seqlock per node, on every pointer rather than a copied block):
//  - Child pointer stores are release, loads acquire: they publish a new node (its const key)
//    and, with the version protocol, order each change against the versions around it.
//  - Begin-shrink stores the version with `shrinking` set (relaxed): every pointer store of
//    the rotation that follows it is release, so a search whose acquire load sees one of them
//    sees the shrink bit (or later) on its next version re-read, and restarts. End-shrink
//    stores the bumped version with release: a search that reads it sees the whole rotation.
//  - The unlinked bit is stored with release after the splice, for the same reason.
//  - Version loads on the search path are acquire (they order the re-reads after them).
//  - Locks: SpinLock (acquire on lock, release on unlock). Everything an update or a repair
//    decides is re-read under the locks, so fields read only under the node's lock (height,
//    present in repairs) are relaxed there. Parent pointers are stored with release and read
//    with acquire before locking the node they name (lock_parent): that node may be one
//    another thread just allocated and linked, and we touch it (its lock) before any lock
//    orders us after its creator.
//  - present: release store (after value) by the update that linearizes, acquire load by
//    readers.
//  - Heights: relaxed. Repair correctness rests on the locks (see "Balance at quiescence"),
//    not on the order of height accesses.
// On x86 every acquire load is a plain move and every release store a plain store.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/spin_lock.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/bst/detail/tree_depth.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class BronsonAvl {
  // Searches walk nodes optimistically, validating later (why hp/ibr cannot: see the top).

  static constexpr std::uint32_t shrinking_bit = 1, unlinked_bit = 2, counter_step = 4;

  struct Node : R::NodeBase {
    Node(Key k, Value v, Node* p) : key(k), present(1), parent(p), value(v) {}
    Node() : key(), present(0), height(0) {}  // the root holder
    const Key key;
    std::atomic<Node*> child[2]{nullptr, nullptr};  // left, right
    std::atomic<std::uint32_t> version{0};          // shrinking, unlinked, change counter
    std::atomic<std::uint32_t> present;             // 0: a routing node (its key is not in the set)
    SpinLock lock;
    std::atomic<std::int32_t> height{1};
    std::atomic<Node*> parent{nullptr};
    std::atomic<Value> value{};
  };
  static_assert(!std::is_empty_v<typename R::NodeBase> || sizeof(Node) == 56, "the layout the header states");

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Node);
  // No sentinel keys: the root holder is found by identity, never compared.
  static constexpr Key max_key = std::numeric_limits<Key>::max();

  explicit BronsonAvl(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options),
        stats_(max_threads, {{"search_restarts", StatKind::counter},
                             {"lock_validation_restarts", StatKind::counter},
                             {"rotations", StatKind::counter},
                             {"double_rotations", StatKind::counter},
                             {"routing_nodes_unlinked", StatKind::counter},
                             {"routing_nodes_revived", StatKind::counter}}) {
    holder_ = reclaimer_.template allocate<Node>(0);
  }

  BronsonAvl(const BronsonAvl&) = delete;
  BronsonAvl& operator=(const BronsonAvl&) = delete;

  ~BronsonAvl() {
    std::vector<Node*> stack{holder_};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (auto& c : n->child)
        if (Node* x = c.load(std::memory_order_relaxed)) stack.push_back(x);
      reclaimer_.deallocate(0, n);
    }
  }

  // Linearizable (at the child store under the parent's lock, or the present store reviving a
  // routing node, or, when the key is present, at the read of present == 1); blocking (locks;
  // and a search waits for a rotation it meets). Reclaimers: none, ebr.
  bool insert(int tid, Key key, Value value) {
    auto guard = reclaimer_.enter(tid);
    Node* fresh = nullptr;  // kept across attempts; never published unless linked
    for (;;) {
      const Found f = search(tid, key);
      if (f.node) {
        Node* c = f.node;
        // acquire: pairs with the release store that made it present.
        if (c->present.load(std::memory_order_acquire)) {
          if (fresh) reclaimer_.deallocate(tid, fresh);
          return false;
        }
        c->lock.lock();
        if (c->version.load(std::memory_order_relaxed) & unlinked_bit) {  // gone: k may be elsewhere now
          c->lock.unlock();
          stats_.add(tid, lock_validation_restarts);
          continue;
        }
        const bool revive = !c->present.load(std::memory_order_relaxed);
        if (revive) {
          c->value.store(value, std::memory_order_relaxed);
          c->present.store(1, std::memory_order_release);  // linearization point
          stats_.add(tid, routing_nodes_revived);
        }
        c->lock.unlock();
        if (fresh) reclaimer_.deallocate(tid, fresh);
        return revive;
      }
      Node* n = f.parent;
      if (!fresh) fresh = reclaimer_.template allocate<Node>(tid, key, value, n);
      n->lock.lock();
      // Version unchanged: n has not shrunk (k still routes here) nor been unlinked.
      if (n->version.load(std::memory_order_relaxed) != f.parent_version ||
          n->child[f.dir].load(std::memory_order_relaxed) != nullptr) {
        n->lock.unlock();
        stats_.add(tid, lock_validation_restarts);
        continue;
      }
      fresh->parent.store(n, std::memory_order_relaxed);  // published by the release below
      n->child[f.dir].store(fresh, std::memory_order_release);  // linearization point
      repair_locked(tid, n);  // n's height may have grown; unlocks n
      return true;
    }
  }

  // Linearizable (at the present = 0 store under the node's lock, or, when absent, at the
  // validated read of a null child or of present == 0); blocking. Reclaimers: none, ebr.
  bool erase(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      const Found f = search(tid, key);
      Node* c = f.node;
      if (!c || !c->present.load(std::memory_order_acquire)) return false;
      if (c->child[0].load(std::memory_order_acquire) && c->child[1].load(std::memory_order_acquire)) {
        // Two children: make it a routing node; only c's lock is needed.
        c->lock.lock();
        const std::uint32_t v = c->version.load(std::memory_order_relaxed);
        if (!(v & unlinked_bit) && c->child[0].load(std::memory_order_relaxed) &&
            c->child[1].load(std::memory_order_relaxed)) {
          const bool was = c->present.load(std::memory_order_relaxed);
          if (was) c->present.store(0, std::memory_order_release);  // linearization point
          c->lock.unlock();
          return was;
        }
        c->lock.unlock();
        if (v & unlinked_bit) {
          stats_.add(tid, lock_validation_restarts);
          continue;
        }
        // It lost a child meanwhile: unlink it (below) instead.
      }
      // At most one child: unlink it, under its parent's lock and its own.
      Node* p = lock_parent(c);
      if (!p) {  // unlinked meanwhile
        stats_.add(tid, lock_validation_restarts);
        continue;
      }
      c->lock.lock();
      if (!c->present.load(std::memory_order_relaxed)) {
        c->lock.unlock();
        p->lock.unlock();
        return false;  // another erase got there first; absent now
      }
      c->present.store(0, std::memory_order_release);  // linearization point
      const bool unlinked = try_unlink(tid, p, c);       // false: it has two children again
      c->lock.unlock();
      if (unlinked) reclaimer_.retire(tid, c);
      repair_locked(tid, p);  // p lost a child (or c is a routing node now); unlocks p
      return true;
    }
  }

  // Linearizable: a true answer at the read of present == 1 (the node was in the tree then:
  // present is 0 before a node is unlinked and never set again after); a false one at that
  // read of present == 0 (or, if the node was unlinked before it, just before the unlink,
  // which lies in this operation: the node was reached from a validated parent), or at the
  // validated read of a null child. Blocking: a search that meets a node being rotated down
  // waits for the rotation (a stalled rotator holds it up). Reclaimers: none, ebr.
  bool contains(int tid, Key key) {
    auto guard = reclaimer_.enter(tid);
    const Found f = search(tid, key);
    return f.node && f.node->present.load(std::memory_order_acquire);
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    // In order, iteratively (explicit stack).
    std::vector<Node*> stack;
    Node* n = root();
    while (n || !stack.empty()) {
      while (n) {
        stack.push_back(n);
        n = n->child[0].load(std::memory_order_acquire);
      }
      n = stack.back();
      stack.pop_back();
      if (n->present.load(std::memory_order_acquire)) fn(n->key);
      n = n->child[1].load(std::memory_order_acquire);
    }
  }

  // Each key with the nodes a search for it reads, the root holder and routing nodes on the
  // way included (quiescent).
  template <class Fn>
  void for_each_key_depth(Fn&& fn) const {
    detail::visit_with_depth(holder_, [](Node* n) {
      return std::array<Node*, 2>{n->child[0].load(std::memory_order_acquire), n->child[1].load(std::memory_order_acquire)};
    }, [&](Node* n, std::size_t depth) {
      if (n != holder_ && n->present.load(std::memory_order_acquire)) fn(n->key, depth);
    });
  }

  // Order (strict: keys unique), parent pointers, exact stored heights, strict AVL balance at
  // every node, no lock held, no version with the shrinking or unlinked bit reachable, no
  // routing node with fewer than two children, and the root holder intact.
  std::string check_invariants() const {
    if (holder_->child[0].load(std::memory_order_acquire) || holder_->version.load(std::memory_order_acquire) != 0)
      return "the root holder has a left child or a changed version";
    struct Item {
      Node* node;
      bool has_lo, has_hi;  // keys in (lo, hi)
      Key lo, hi;
    };
    std::vector<Item> stack;
    if (Node* r = root()) {
      if (r->parent.load(std::memory_order_acquire) != holder_) return "the root's parent is not the root holder";
      stack.push_back({r, false, false, Key{}, Key{}});
    }
    if (!holder_->lock.try_lock()) return "the root holder's lock is held";
    holder_->lock.unlock();
    while (!stack.empty()) {
      const Item it = stack.back();
      stack.pop_back();
      Node* n = it.node;
      const std::string at = "node " + std::to_string(n->key) + ": ";
      if ((it.has_lo && !(it.lo < n->key)) || (it.has_hi && !(n->key < it.hi)))
        return at + "outside its subtree's key range (order violated or key twice)";
      if (!n->lock.try_lock()) return at + "its lock is held";
      n->lock.unlock();
      const std::uint32_t v = n->version.load(std::memory_order_acquire);
      if (v & shrinking_bit) return at + "shrinking (a rotation did not finish)";
      if (v & unlinked_bit) return at + "unlinked but reachable";
      Node* l = n->child[0].load(std::memory_order_acquire);
      Node* r = n->child[1].load(std::memory_order_acquire);
      for (Node* c : {l, r})
        if (c && c->parent.load(std::memory_order_acquire) != n)
          return at + "child " + std::to_string(c->key) + " has another parent";
      const std::int32_t hl = height_of(l), hr = height_of(r);
      if (n->height.load(std::memory_order_acquire) != 1 + std::max(hl, hr))
        return at + "stored height " + std::to_string(n->height.load(std::memory_order_acquire)) + ", children's " +
               std::to_string(hl) + " and " + std::to_string(hr);
      if (hl - hr > 1 || hr - hl > 1)
        return at + "unbalanced: heights " + std::to_string(hl) + " (left) and " + std::to_string(hr) + " (right)";
      if (!n->present.load(std::memory_order_acquire) && (!l || !r)) return at + "a routing node with fewer than two children";
      if (r) stack.push_back({r, true, it.has_hi, n->key, it.hi});
      if (l) stack.push_back({l, it.has_lo, true, it.lo, n->key});
    }
    return {};
  }

  // Nodes reachable from the root holder, the holder and routing nodes included (quiescent).
  std::size_t node_count() const {
    std::size_t count = 0;
    std::vector<Node*> stack{holder_};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      ++count;
      for (auto& c : n->child)
        if (Node* x = c.load(std::memory_order_acquire)) stack.push_back(x);
    }
    return count;
  }

  // The tree's height (the root's stored height; 0 when empty). Quiescent.
  int height() const { return height_of(root()); }

  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat {
    search_restarts,
    lock_validation_restarts,
    rotations,
    double_rotations,
    routing_nodes_unlinked,
    routing_nodes_revived
  };
  // A node's repair condition (see condition()): one of these, or the height to store (>= 1).
  static constexpr int nothing = -1, unlink_needed = -2, rebalance_needed = -3;

  Node* root() const { return holder_->child[1].load(std::memory_order_acquire); }
  static std::int32_t height_of(const Node* n) { return n ? n->height.load(std::memory_order_relaxed) : 0; }
  static int side_of(const Node* parent, const Node* child) {
    return parent->child[0].load(std::memory_order_relaxed) == child ? 0 : 1;
  }

  // Where a search ended: the node holding the key (node), or the last node (parent, with its
  // version when read, not shrinking) whose child in direction dir was null.
  struct Found {
    Node* node;
    Node* parent;
    std::uint32_t parent_version;
    int dir;
  };

  // The validated descent of the header ("How a search validates"); restarts from the root.
  Found search(int tid, Key key) {
    for (;;) {
      Node* n = holder_;
      std::uint32_t nv = 0;  // the holder's version never changes
      int dir = 1;           // the root is the holder's right child
      for (;;) {
        Node* c = n->child[dir].load(std::memory_order_acquire);
        if (!c) {
          if (n->version.load(std::memory_order_acquire) == nv) return {nullptr, n, nv, dir};
          break;
        }
        if (c->key == key) return {c, n, nv, dir};
        CDSB_INTERLEAVE("bronson.search.child_read");  // c read from n, c's version not yet
        const std::uint32_t cv = c->version.load(std::memory_order_acquire);
        if (cv & (shrinking_bit | unlinked_bit)) {
          if (cv & shrinking_bit) wait_while_version(c, cv);
          break;
        }
        if ((n->child[dir].load(std::memory_order_acquire) != c || n->version.load(std::memory_order_acquire) != nv) &&
            !CDSB_MUTANT("bronson.search_skips_revalidation"))  // seeded bug: step 4 of the top skipped
          break;
        n = c;
        nv = cv;
        dir = key < c->key ? 0 : 1;
      }
      stats_.add(tid, search_restarts);
    }
  }

  // A rotation is moving n down: spin (bounded, backing off) until it has finished.
  static void wait_while_version(Node* n, std::uint32_t v) {
    Backoff backoff;
    for (int i = 0; i < 16 && n->version.load(std::memory_order_acquire) == v; ++i) backoff();
  }

  // Locks x's current parent and returns it, or returns null (nothing locked) if x has been
  // unlinked. x's parent pointer changes only under the lock of its old parent, so it is
  // stable once we hold the node it names.
  Node* lock_parent(Node* x) {
    for (;;) {
      // acquire: the parent we lock was published by the store that linked it above x.
      Node* p = x->parent.load(std::memory_order_acquire);
      p->lock.lock();
      if (x->parent.load(std::memory_order_relaxed) == p) {
        // Unlinking x needs p's lock, so this is stable now; an unlinked x keeps its parent.
        if (x->version.load(std::memory_order_relaxed) & unlinked_bit) {
          p->lock.unlock();
          return nullptr;
        }
        return p;
      }
      p->lock.unlock();
    }
  }

  // Under n's lock (its children, height and present are stable; its children's heights are
  // stored before their writers lock n to evaluate it).
  static int condition(Node* n) {
    Node* l = n->child[0].load(std::memory_order_relaxed);
    Node* r = n->child[1].load(std::memory_order_relaxed);
    if ((!l || !r) && !n->present.load(std::memory_order_relaxed)) return unlink_needed;
    const std::int32_t hl = height_of(l), hr = height_of(r);
    if (hl - hr > 1 || hr - hl > 1) return rebalance_needed;
    const std::int32_t h = 1 + std::max(hl, hr);
    return h == n->height.load(std::memory_order_relaxed) ? nothing : h;
  }

  // Under the locks of p and x (x p's child, linked): if x is a routing node with at most one
  // child, splices it out and returns true (the caller retires x after unlocking it).
  bool try_unlink(int tid, Node* p, Node* x) {
    Node* l = x->child[0].load(std::memory_order_relaxed);
    Node* r = x->child[1].load(std::memory_order_relaxed);
    if (l && r) return false;
    Node* y = l ? l : r;
    if (y) y->parent.store(p, std::memory_order_release);
    p->child[side_of(p, x)].store(y, std::memory_order_release);
    // release: a search that sees the bit also sees the splice (see the top).
    x->version.store(x->version.load(std::memory_order_relaxed) | unlinked_bit, std::memory_order_release);
    stats_.add(tid, routing_nodes_unlinked);
    return true;
  }

  // Nodes whose repair is pending (a rotation can leave the nodes it moved damaged while it
  // goes on with the parent). Rarely more than one or two; spills to the heap past 32.
  class Pending {
   public:
    void push(Node* n) {
      if (size_ < buf_.size()) buf_[size_++] = n;
      else spill_.push_back(n);
    }
    Node* pop() {
      if (!spill_.empty()) {
        Node* n = spill_.back();
        spill_.pop_back();
        return n;
      }
      return size_ ? buf_[--size_] : nullptr;
    }

   private:
    std::array<Node*, 32> buf_;
    std::size_t size_ = 0;
    std::vector<Node*> spill_;
  };

  // Repairs x (locked by the caller, in the tree) and everything its repair damages, then
  // returns with no lock held. Each evaluation runs under the evaluated node's lock; see
  // "Balance at quiescence" at the top for why that leaves nothing unrepaired.
  void repair_locked(int tid, Node* x) {
    Pending pending;
    for (;;) {
      x = repair_step(tid, x, pending);  // returns with nothing locked, or x locked to go on
      while (!x) {
        Node* y = pending.pop();
        if (!y) return;
        y->lock.lock();
        if (y->version.load(std::memory_order_relaxed) & unlinked_bit) {  // its unlinker repairs above it
          y->lock.unlock();
          continue;
        }
        x = y;
      }
    }
  }

  // One step for x (locked, linked). Returns the next node to evaluate, locked, or null with
  // nothing locked.
  Node* repair_step(int tid, Node* x, Pending& pending) {
    for (;;) {
      if (x == holder_) {
        x->lock.unlock();
        return nullptr;
      }
      const int c = condition(x);
      if (c == nothing) {
        x->lock.unlock();
        return nullptr;
      }
      if (c >= 0) {
        x->height.store(c, std::memory_order_relaxed);
        x->lock.unlock();
        return lock_parent(x);  // null: x was unlinked meanwhile, and its unlinker repairs above
      }
      // Rebalance or unlink: lock x's parent first (top-down), then x again, and re-evaluate.
      x->lock.unlock();
      Node* p = lock_parent(x);
      if (!p) return nullptr;
      x->lock.lock();
      const int again = condition(x);
      if (again == nothing) {
        x->lock.unlock();
        p->lock.unlock();
        return nullptr;
      }
      if (again >= 0) {
        x->height.store(again, std::memory_order_relaxed);
        x->lock.unlock();
        return p;  // x's current parent, locked: evaluate it
      }
      if (again == unlink_needed) {
        const bool unlinked = try_unlink(tid, p, x);
        assert(unlinked);
        x->lock.unlock();
        if (unlinked) reclaimer_.retire(tid, x);
        return p;
      }
      rebalance(tid, p, x, pending);  // unlocks x and the nodes below it
      return p;
    }
  }

  // Under the locks of p and n (p n's parent), with n unbalanced: one single or double
  // rotation; evaluates every node it moved, bottom-up, storing heights and leaving the
  // damaged ones pending. Unlocks everything but p.
  void rebalance(int tid, Node* p, Node* n, Pending& pending) {
    const int s = height_of(n->child[0].load(std::memory_order_relaxed)) >
                          height_of(n->child[1].load(std::memory_order_relaxed))
                      ? 0
                      : 1;  // the tall side
    Node* c = n->child[s].load(std::memory_order_relaxed);
    c->lock.lock();
    Node* outer = c->child[s].load(std::memory_order_relaxed);
    Node* inner = c->child[1 - s].load(std::memory_order_relaxed);
    if (height_of(inner) > height_of(outer)) {  // inner grandchild tall: double rotation
      inner->lock.lock();
      rotate_double(p, n, c, inner, s);
      stats_.add(tid, double_rotations);
      settle(n, pending);
      settle(c, pending);
      settle(inner, pending);
      n->lock.unlock();
      c->lock.unlock();
      inner->lock.unlock();
    } else {
      rotate_single(p, n, c, s);
      settle(n, pending);
      settle(c, pending);
      n->lock.unlock();
      c->lock.unlock();
    }
    stats_.add(tid, rotations);
  }

  // Under n's lock, after a rotation: store n's height if that is all it needs, else leave it
  // pending (its own evaluation will run under its lock, after we release it).
  static void settle(Node* n, Pending& pending) {
    const int c = condition(n);
    if (c >= 0) n->height.store(c, std::memory_order_relaxed);
    else if (c != nothing) pending.push(n);
  }

  static void begin_shrink(Node* n, std::uint32_t v) {
    // relaxed: the release pointer stores that follow order it for readers (see the top).
    n->version.store(v | shrinking_bit, std::memory_order_relaxed);
  }
  static void end_shrink(Node* n, std::uint32_t v) {
    n->version.store(v + counter_step, std::memory_order_release);
  }

  // n's child c on side s moves up into n's place under p; n moves down to c's side 1-s,
  // taking c's inner child. n shrinks, c grows. Heights are left to settle().
  static void rotate_single(Node* p, Node* n, Node* c, int s) {
    const std::uint32_t nv = n->version.load(std::memory_order_relaxed);
    begin_shrink(n, nv);
    Node* inner = c->child[1 - s].load(std::memory_order_relaxed);
    n->child[s].store(inner, std::memory_order_release);
    if (inner) inner->parent.store(n, std::memory_order_release);
    c->child[1 - s].store(n, std::memory_order_release);
    n->parent.store(c, std::memory_order_release);
    p->child[side_of(p, n)].store(c, std::memory_order_release);
    c->parent.store(p, std::memory_order_release);
    end_shrink(n, nv);
  }

  // n's child c on side s has a taller inner child g: g moves up into n's place, with c on its
  // side s and n on its side 1-s; g's children go to c (side 1-s) and n (side s). n and c
  // shrink, g grows.
  static void rotate_double(Node* p, Node* n, Node* c, Node* g, int s) {
    const std::uint32_t nv = n->version.load(std::memory_order_relaxed);
    const std::uint32_t cv = c->version.load(std::memory_order_relaxed);
    begin_shrink(n, nv);
    begin_shrink(c, cv);
    Node* gs = g->child[s].load(std::memory_order_relaxed);
    Node* go = g->child[1 - s].load(std::memory_order_relaxed);
    n->child[s].store(go, std::memory_order_release);
    if (go) go->parent.store(n, std::memory_order_release);
    c->child[1 - s].store(gs, std::memory_order_release);
    if (gs) gs->parent.store(c, std::memory_order_release);
    g->child[s].store(c, std::memory_order_release);
    c->parent.store(g, std::memory_order_release);
    g->child[1 - s].store(n, std::memory_order_release);
    n->parent.store(g, std::memory_order_release);
    p->child[side_of(p, n)].store(g, std::memory_order_release);
    g->parent.store(p, std::memory_order_release);
    end_shrink(c, cv);
    end_shrink(n, nv);
  }

  R reclaimer_;
  Node* holder_;  // the root holder: no key, its right child is the root
  UserStats stats_;
};

static_assert(ConcurrentSet<BronsonAvl<reclaim::Archetype<>>>);

}  // namespace cdsb
