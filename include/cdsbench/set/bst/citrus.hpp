// Citrus, the internal binary search tree with RCU and fine-grained locks of M. Arbel &
// H. Attiya, "Concurrent Updates with RCU: Search Tree as an Example", PODC 2014.
//
// Every node holds a key (internal tree: no routing nodes); a key k goes left at a node when
// k < node.key and right when k > node.key. Searches run inside RCU read-side sections and
// take no lock, write nothing, never restart. Updates search the same way, leave the
// read-side section, then lock the nodes they change, validate what the search saw, and
// start over if it changed:
//   - insert: lock the parent; if it is not marked (removed) and its child slot still holds
//     the "no child" value the search read, store the new node there.
//   - delete of a node with at most one child: lock parent and node; validate (neither
//     marked, the parent still points to the node); mark the node and swing the parent's
//     slot to the node's only child (or to "no child").
//   - delete of a node with two children: also find the successor (the leftmost node of the
//     right subtree) and lock it and its parent; validate (neither marked, the link between
//     them unchanged, the successor still without left child); then link, in the node's
//     place, a new node that carries the successor's key and value and the node's children;
//     wait for a grace period (synchronize); then mark the old successor and unlink it.
// The grace period is the paper's idea: a search for the successor's key that passed the
// node's place before the copy was linked may be on its way down to the old successor, which
// must stay until every such search is over; a search that starts later meets the copy first.
//
// RCU: our own, reclaim/rcu.hpp (per-thread read-side counters, no new dependency, the
// project's thread ids), not liburcu and not the EBR guard: a delete waits for a grace period
// while holding node locks, and an EBR guard covers whole operations, lock waits included, so
// waiting for guards could wait for a thread that waits for our lock. Read-side sections
// cover only the lock-free searches (as in the paper, locks are taken outside them), so a
// grace period always ends.
//
// The paper's tags, in the child word. Citrus keeps a counter per child slot ("tag"), bumped
// whenever a delete stores "no child" there: an insert that saw an empty slot validates slot
// and tag, so it does not insert into a slot that was filled and emptied again meanwhile (the
// keys that slot may hold can have shrunk: a successor moved up past it). Here an empty child
// slot holds an odd word, (version << 1) | 1, and every delete that empties a slot writes a
// fresh version (a per-thread counter and the thread id: never repeated, so there is no
// wrap-around ABA). The insert validates the whole word: pointer and tag in one compare, and
// 8 bytes less per node. A new node's slots start at version 0, which no delete writes.
//
// Reclamation: the thread that unlinks a node retires it, in its operation's guard: the
// deleted node right after the store that unlinks it; in the two-child case also the old
// successor, after the grace period, right after its own unlink. Exactly once: a node is
// unlinked only by the thread that marked it, under its lock, after validating it unmarked;
// a marked node fails every later validation, so no one unlinks it again.
//
// Node layout (40 bytes + the reclaimer's NodeBase): key and the two child words (what a
// search reads: 24 bytes from the node's start), the value, then the 4-byte spin lock
// (platform/spin_lock.hpp) and the marked flag, which only lock holders read or write. No
// pthread mutex (the original used one per node), no padding. Sentinel: a root with key max
// (its right slot stays empty); user keys must be below max (max_key), so every user node
// has a parent.
//
// Reclaimers: none, ebr. Not hp and not ibr: searches walk through nodes that are being
// removed or were just unlinked (they must: that is what the grace period waits for), and a
// removed node's child words are frozen, so re-reading a link after publishing a hazard or
// raising a reservation proves nothing (see natarajan_mittal.hpp). Epochs need no proof.
//
// Memory orders.
//  - Child loads in searches are acquire: they pair with the release stores below, so a
//    node's key, value and children are visible before we read them.
//  - Child stores are release: an insert publishes its new node; a delete publishes the copy
//    (two-child case) or carries on the publication of the child it moves up, which it read
//    under the locks (a reader that acquires the new word must see that child's fields).
//  - Under the locks, loads are relaxed: the lock's acquire (platform/spin_lock.hpp) ordered
//    them after the last writer of those slots, which wrote them under the same lock. The
//    successor walk, done before the successor's locks are held, uses acquire loads; the
//    validation under the locks then re-reads what matters.
//  - The store that links the copy and the grace period's first step are ordered by the
//    seq_cst fence that starts the grace period, against the fence that ends a reader's
//    entry (rcu.hpp): a reader not waited for sees the copy.
//  On x86 every one of these loads and stores is a plain move.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/spin_lock.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/rcu.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/bst/detail/tree_depth.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class CitrusBst {
  // Searches read links with plain acquire loads, never protect() (why: see the top).
  struct Node;

  // A child slot's word: a node, or (odd) "no child" with its version (the paper's tag).
  class Child {
   public:
    constexpr Child() noexcept = default;
    explicit Child(Node* n) noexcept : bits_(reinterpret_cast<std::uintptr_t>(n)) {}
    static constexpr Child none(std::uintptr_t version) noexcept { return Child((version << 1) | 1); }
    bool empty() const noexcept { return bits_ & 1; }
    Node* node() const noexcept { return empty() ? nullptr : reinterpret_cast<Node*>(bits_); }
    friend bool operator==(Child a, Child b) noexcept { return a.bits_ == b.bits_; }

   private:
    constexpr explicit Child(std::uintptr_t bits) noexcept : bits_(bits) {}
    std::uintptr_t bits_ = 1;  // no child, version 0
  };
  using Link = std::atomic<Child>;
  static_assert(Link::is_always_lock_free);

  struct Node : R::NodeBase {
    Node(Key k, Value v) : key(k), value(v) {}
    Node(Key k, Value v, Child l, Child r) : key(k), child{l, r}, value(v) {}
    const Key key;
    Link child[2];     // left, right
    const Value value;
    SpinLock lock;
    bool marked = false;  // removed (or being removed); read and written under `lock` only
  };
  static_assert(!std::is_empty_v<typename R::NodeBase> || sizeof(Node) == 40);

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Node);
  // Key max is the root sentinel's.
  static constexpr Key max_key = std::numeric_limits<Key>::max() - 1;

  explicit CitrusBst(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options),
        rcu_(max_threads),
        tid_bits_(std::bit_width(static_cast<unsigned>(max_threads))),
        versions_(max_threads),
        stats_(max_threads, {{"update_restarts", StatKind::counter}, {"grace_periods", StatKind::counter}}) {
    root_ = reclaimer_.template allocate<Node>(0, inf, Value{});
  }

  CitrusBst(const CitrusBst&) = delete;
  CitrusBst& operator=(const CitrusBst&) = delete;

  ~CitrusBst() {
    visit(root_, [&](Node* n) { reclaimer_.deallocate(0, n); });
  }

  // Linearizable (at the store that links the new node, or, when the key is present, at a
  // point of the search where the node holding it was in the tree); blocking (the parent's
  // lock; a failed validation starts over). Reclaimers: none, ebr.
  bool insert(int tid, Key key, Value value) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Node* fresh = nullptr;  // kept across attempts
    for (;;) {
      const Position pos = locate(tid, key);
      if (pos.curr) {
        if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
        return false;
      }
      if (!fresh) fresh = reclaimer_.template allocate<Node>(tid, key, value);
      Node* prev = pos.prev;
      prev->lock.lock();
      // The paper's validate for an empty slot: prev not removed, slot and tag unchanged.
      if (!prev->marked && prev->child[pos.dir].load(std::memory_order_relaxed) == pos.seen) {
        prev->child[pos.dir].store(Child(fresh), std::memory_order_release);  // publishes fresh
        prev->lock.unlock();
        return true;
      }
      prev->lock.unlock();
      stats_.add(tid, update_restarts);
    }
  }

  // Linearizable (at the store that unlinks the node: its parent's slot swung to its child, or
  // to the successor's copy; or, when the key is absent, at a point of the search where it
  // was absent); blocking (locks, and a grace period in the two-child case, which waits for
  // every search in progress). Reclaimers: none, ebr.
  bool erase(int tid, Key key) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      const Position pos = locate(tid, key);
      Node* curr = pos.curr;
      if (!curr) return false;
      Node* prev = pos.prev;
      Link& slot = prev->child[pos.dir];
      // Top-down, as every update locks (parent before child, the successor's nodes after
      // the node, the copy last). A node never becomes an ancestor of a node that was once
      // its ancestor (inserts add leaves; a copy is new), so waits cannot form a cycle.
      prev->lock.lock();
      curr->lock.lock();
      if (prev->marked || curr->marked || slot.load(std::memory_order_relaxed) != pos.seen) {
        curr->lock.unlock();
        prev->lock.unlock();
        stats_.add(tid, update_restarts);
        continue;
      }
      const Child left = curr->child[0].load(std::memory_order_relaxed);
      const Child right = curr->child[1].load(std::memory_order_relaxed);
      if (left.empty() || right.empty()) {
        curr->marked = true;
        // release: carries on the publication of the child moved up (read under the locks).
        slot.store(left.empty() ? moved_up(tid, right) : left, std::memory_order_release);
        curr->lock.unlock();
        prev->lock.unlock();
        reclaimer_.retire(tid, curr);
        return true;
      }
      if (remove_with_successor(tid, prev, slot, curr, left, right)) return true;
      curr->lock.unlock();
      prev->lock.unlock();
      stats_.add(tid, update_restarts);
    }
  }

  // Linearizable (when it reads the slot to the node holding the key, which was in the tree
  // at some point of the search, or the empty slot where the key would be; the grace period
  // of two-child deletes makes the latter sound). The search is wait-free: no lock, no
  // waiting, no restart, one acquire load per level along one root-to-empty-slot path; the
  // number of levels is bounded by the height of the tree it walks (concurrent inserts can
  // extend the path below it by the nodes they add, each with a key strictly between the
  // bounds of the path so far, so never beyond the key universe). The whole operation is
  // wait-free with `none` and lock-free with `ebr` (EBR's enter retries its announcement when
  // the epoch moves). Reclaimers: none, ebr.
  bool contains(int tid, Key key) {
    if (key > max_key) return false;  // the sentinel's key, never a user key
    auto guard = reclaimer_.enter(tid);
    auto section = rcu_.read_section(tid);
    Node* n = root_->child[0].load(std::memory_order_acquire).node();  // user keys are all below the root's
    while (n) {
      CDSB_INTERLEAVE("citrus.contains.visiting");  // at n, inside the read-side section
      if (n->key == key) return true;
      n = n->child[key < n->key ? 0 : 1].load(std::memory_order_acquire).node();
    }
    return false;
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    // In order, with an explicit stack: a tree of keys inserted in order is a path.
    std::vector<Node*> stack;
    Node* n = root_->child[0].load(std::memory_order_acquire).node();
    while (n || !stack.empty()) {
      while (n) {
        stack.push_back(n);
        n = n->child[0].load(std::memory_order_acquire).node();
      }
      n = stack.back();
      stack.pop_back();
      fn(n->key);
      n = n->child[1].load(std::memory_order_acquire).node();
    }
  }

  // Each key with the nodes a search for it reads, the root sentinel included (quiescent).
  template <class Fn>
  void for_each_key_depth(Fn&& fn) const {
    detail::visit_with_depth(root_, [](Node* n) {
      return std::array<Node*, 2>{n->child[0].load(std::memory_order_acquire).node(), n->child[1].load(std::memory_order_acquire).node()};
    }, [&](Node* n, std::size_t depth) {
      if (n != root_) fn(n->key, depth);
    });
  }

  // Internal-tree order (every key inside the bounds its ancestors set, so in-order keys
  // strictly increase: no key twice, no node reachable twice), no reachable node marked or
  // locked (every delete unlinked what it marked and released its locks), the root sentinel
  // in place with an empty right slot, and no thread left inside an RCU read-side section.
  std::string check_invariants() const {
    if (root_->key != inf || root_->marked) return "the root sentinel is not in place";
    if (!root_->child[1].load(std::memory_order_acquire).empty()) return "the root sentinel has a right child";
    if (const std::string p = node_problem(root_); !p.empty()) return "root: " + p;
    struct Item {
      Node* node;
      bool has_lo;
      Key lo, hi;  // keys in (lo, hi); hi is always set (the root's key at most)
    };
    std::vector<Item> stack;
    if (Node* top = root_->child[0].load(std::memory_order_acquire).node()) stack.push_back({top, false, Key{}, inf});
    while (!stack.empty()) {
      const Item it = stack.back();
      stack.pop_back();
      Node* n = it.node;
      if (n->key >= it.hi || (it.has_lo && n->key <= it.lo))
        return "key " + std::to_string(n->key) + " is out of the order its ancestors set";
      if (const std::string p = node_problem(n); !p.empty()) return "key " + std::to_string(n->key) + ": " + p;
      if (Node* r = n->child[1].load(std::memory_order_acquire).node()) stack.push_back({r, true, n->key, it.hi});
      if (Node* l = n->child[0].load(std::memory_order_acquire).node()) stack.push_back({l, it.has_lo, it.lo, n->key});
    }
    for (int t = 0; t < static_cast<int>(versions_.size()); ++t)
      if (rcu_.in_read_section(t)) return "thread " + std::to_string(t) + " is inside an RCU read-side section";
    return {};
  }

  // Nodes reachable from the root, the sentinel included (quiescent).
  std::size_t node_count() const {
    std::size_t n = 0;
    visit(root_, [&](Node*) { ++n; });
    return n;
  }

  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat { update_restarts, grace_periods };
  static constexpr Key inf = std::numeric_limits<Key>::max();

  // Where a search for a key ended: curr holds the key (or is null), prev is its parent, and
  // `seen` is the word read from prev's slot `dir` (curr, or "no child" with its version).
  struct Position {
    Node* prev;
    Node* curr;
    Child seen;
    int dir;
  };

  // An update's search (the paper's get): inside a read-side section, left before locking.
  Position locate(int tid, Key key) {
    auto section = rcu_.read_section(tid);
    Position pos{root_, nullptr, root_->child[0].load(std::memory_order_acquire), 0};
    while (Node* n = pos.seen.node()) {
      if (n->key == key) {
        pos.curr = n;
        break;
      }
      pos.prev = n;
      pos.dir = key < n->key ? 0 : 1;
      pos.seen = n->child[pos.dir].load(std::memory_order_acquire);
    }
    return pos;
  }

  // The word for a slot that receives `c`: c itself when it is a node; a fresh "no child"
  // version when it is empty (the slot is emptied again: inserts that saw it empty before
  // must fail their validation, see the top).
  Child moved_up(int tid, Child c) {
    if (!c.empty()) return c;
    const std::uintptr_t n = ++*versions_[tid];  // thread-private
    return Child::none((n << tid_bits_) | static_cast<std::uintptr_t>(tid));
  }

  // The two-child delete, with prev and curr locked and validated; left and right are curr's
  // children. True iff it removed curr; on false the caller unlocks prev and curr and retries.
  bool remove_with_successor(int tid, Node* prev, Link& slot, Node* curr, Child left, Child right) {
    // The successor: leftmost node of the right subtree. acquire: we read its fields; the
    // walk races with updates below curr until the locks below are held.
    Node* prev_succ = curr;
    Node* succ = right.node();
    int succ_dir = 1;
    for (Node* next; (next = succ->child[0].load(std::memory_order_acquire).node());) {
      prev_succ = succ;
      succ = next;
      succ_dir = 0;
    }
    if (prev_succ != curr) prev_succ->lock.lock();
    succ->lock.lock();
    const bool valid = !prev_succ->marked && !succ->marked &&
                       prev_succ->child[succ_dir].load(std::memory_order_relaxed) == Child(succ) &&
                       succ->child[0].load(std::memory_order_relaxed).empty();
    if (!valid) {
      succ->lock.unlock();
      if (prev_succ != curr) prev_succ->lock.unlock();
      return false;
    }
    // The copy takes curr's place with curr's children; locked before it is published, so no
    // update acts on it before we have finished (we still change its right slot when the
    // successor is curr's right child).
    Node* copy = reclaimer_.template allocate<Node>(tid, succ->key, succ->value, left, right);
    copy->lock.lock();
    curr->marked = true;
    slot.store(Child(copy), std::memory_order_release);  // unlinks curr, publishes the copy
    reclaimer_.retire(tid, curr);
    CDSB_INTERLEAVE("citrus.erase.copied");  // the copy linked, the old successor still linked
    // Searches that passed curr's place before the copy was there may be heading for the
    // successor: let them finish before it goes (the paper's synchronize_rcu).
    if (!CDSB_MUTANT("citrus.skip_grace_period")) rcu_.synchronize(tid);
    stats_.add(tid, grace_periods);
    succ->marked = true;
    const Child up = moved_up(tid, succ->child[1].load(std::memory_order_relaxed));
    // release: carries on the publication of the successor's right child.
    if (prev_succ == curr) copy->child[1].store(up, std::memory_order_release);
    else prev_succ->child[0].store(up, std::memory_order_release);
    reclaimer_.retire(tid, succ);
    copy->lock.unlock();
    succ->lock.unlock();
    if (prev_succ != curr) prev_succ->lock.unlock();
    curr->lock.unlock();
    prev->lock.unlock();
    return true;
  }

  // What a reachable node must not show at quiescence (SpinLock has no query: a try_lock
  // that fails means held; only ever called while no operation runs).
  static std::string node_problem(Node* n) {
    if (n->marked) return "marked (removed) but reachable";
    if (!n->lock.try_lock()) return "its lock is held";
    n->lock.unlock();
    return {};
  }

  // Every node reachable from n, parents before children (fn may free the node).
  template <class Fn>
  static void visit(Node* n, Fn&& fn) {
    std::vector<Node*> stack{n};
    while (!stack.empty()) {
      Node* x = stack.back();
      stack.pop_back();
      if (Node* r = x->child[1].load(std::memory_order_acquire).node()) stack.push_back(r);
      if (Node* l = x->child[0].load(std::memory_order_acquire).node()) stack.push_back(l);
      fn(x);
    }
  }

  R reclaimer_;
  reclaim::Rcu rcu_;
  const int tid_bits_;                              // bits of a "no child" version that name the thread
  std::vector<Padded<std::uintptr_t>> versions_;   // per thread: "no child" versions written so far
  Node* root_;  // key max, for ever; user nodes all live in its left subtree
  UserStats stats_;
};

static_assert(ConcurrentSet<CitrusBst<reclaim::Archetype<>>>);

}  // namespace cdsb
