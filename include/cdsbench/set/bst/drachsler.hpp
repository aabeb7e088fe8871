// The logical-ordering tree of D. Drachsler, M. Vechev & E. Yahav, "Practical Concurrent
// Binary Search Trees via Logical Ordering", PPoPP 2014: the paper's unbalanced internal tree
// (its AVL variant, which rebalances under the same tree locks, is not implemented here).
//
// Every key lives in one node, and every node is in two layouts at once:
//   - the ordering list: pred/succ links through all nodes in key order, from the sentinel
//     Head (key min) to the sentinel Root (key max). It is the truth: a key is in the set iff
//     an unmarked node holding it is in the list. Each node's succ_lock guards its succ link
//     and the pred link of its successor, so one lock guards one gap between adjacent keys.
//   - the tree layout: an internal BST (left/right/parent), Root's left subtree holding every
//     user key, Head the parent of Root. It is only a fast path to the right place in the
//     list. Each node's tree_lock guards its child links and the parent links of its
//     children.
// A lookup walks down the tree without locks, then settles along pred/succ: whatever a
// concurrent removal or relocation did to the walk, the list's frozen links of removed nodes
// lead back to the right gap.
//   - insert(k): walk, take p = the node that must precede k; lock p.succ_lock; validate (p
//     unmarked, p.key < k <= p.succ.key: p and s = p.succ are then adjacent, both live, and
//     stay so while we hold the lock). Choose the tree parent: p if p.right is null, else s
//     if s.left is null (in a BST one of them is; a concurrent relocation may change which,
//     so the choice alternates under each candidate's tree_lock until one fits). Link the
//     new node into the list (p.succ, then s.pred), release p.succ_lock, then link it as
//     the parent's child and release the parent's tree_lock.
//   - erase(k): walk and validate as insert, the node s = p.succ holding k; lock s.succ_lock;
//     lock the tree locks its removal touches (s, its parent, and its one child; or, with two
//     children, s's successor S' -- the leftmost node of its right subtree -- with S'.parent
//     and S'.right), mark s (in the low bit of s.succ), unlink it from the list, remove it
//     from the tree (a node with two children is replaced by S', moved up from its place),
//     release everything, retire s.
//   - contains(k): walk; while node.key > k step to node.pred; while node.key < k step to
//     node.succ; return node.key == k and node unmarked.
//
// Linearization points. A successful insert: its store p.succ = new. A successful erase: its
// store of s.succ's mark. An unsuccessful insert or erase: its read of p.succ under
// p.succ_lock (the gap (p.key, s.key] cannot change while the lock is held). contains: when
// it returns true, its read of the final node's succ (unmarked); when false, a moment during
// its run at which k was absent, which exists by the argument below.
//
// Why contains is linearizable although its tree walk may be disrupted (the walk may miss
// a node being relocated, or end on a removed node, or be sent back up by a relocation).
// Call a node reachable when it is in the tree (from Head by child links) or in the list
// (from Head by succ links). Two invariants, kept by the locking protocol:
//   (I1) a reachable node's links (left, right, pred, succ, parent) point to reachable nodes
//        (or are null). Every write stores a node that the writer holds locked or has just
//        validated under a lock, and the write that unreaches a node comes after every
//        link to it from a reachable node was redirected (see remove_from_tree).
//   (I2) an unreachable node's links never change again, and a marked node is reachable
//        only while its remover still holds the succ locks of its predecessor p and of
//        itself (DEVIATION 1 below): no node can enter the gap (p.key, s.succ.key) then.
// Lemma: every node an operation visits was reachable at some moment since the operation
// began. (Induction: a node read from a reachable node is reachable then, by I1; one read
// from a node that became unreachable in between is what that node pointed to just before,
// by I2, when it was reachable.) Now let contains end at node n.
//   - true: n holds k and was unmarked at the read. It was linked into the list before
//     anyone could reach it (DEVIATION 2 below), and a node leaves the list only after its
//     mark, so it was in the set at that read.
//   - false, n holds k and is marked: n was reachable at some moment t since the start. If
//     it was unmarked at t, its mark came later, and k was absent just after it. If it was
//     marked at t, its remover still held p.succ_lock at t (I2), so no other node with k
//     could be in the list: k was absent at t.
//   - false, n.key > k: n was read from m.succ with m.key < k, and m was reachable at some
//     moment since the start. If m was still reachable at that read, m and n were adjacent
//     in the list or m was a marked node in a gap locked by its remover (I2): no key in
//     between was present. If m had become unreachable, the same held just before that.
// Both loops move monotonically in key (pred keys fall, succ keys rise), so they end.
//
// DEVIATIONS from the paper, each needed for the argument above or for reclamation:
//   1. erase holds both succ locks until s is out of the tree layout too (the paper releases
//      them before its tree removal). Otherwise a removed node may stay in the tree after a
//      new node with its key was inserted (contains then finds the marked node and answers
//      false while k is present: not linearizable; the test ARemovedNodeStillInTheTree...
//      shows it), and its frozen pred may point to a neighbour removed and retired
//      meanwhile: a retired node still reachable, against I1 and the reclaimer's contract
//      (our EBR survives it only because the stale node's remover is still inside its
//      guard). The cost: inserts into the two gaps around s also wait for its tree removal
//      (a few stores).
//   2. insert links p.succ = new before s.pred = new (the paper's code does the reverse),
//      so that a node reached through a pred link is already in the set; otherwise a lookup
//      stepping back from s could return true before the insert's linearization point while
//      a later lookup, going forward from p, returns false.
//   3. The mark is the low bit of the succ link (set with the succ it freezes), which keeps
//      the node at 64 bytes; it is read wherever the paper reads `mark`.
// The paper's checks that a just-locked tree parent is unmarked cannot fail here (a marked
// node's tree_lock is held by its remover until no node names it as parent); they are
// debug assertions.
//
// Progress. insert and erase are blocking (fine-grained locks) and deadlock-free:
//   - No thread waits for a succ_lock while holding a tree_lock (succ locks are all taken
//     first), and a thread waits for a succ_lock while holding one only in erase, holding
//     p's and waiting for s's, p.key < s.key: waits for succ locks cannot close a cycle.
//   - A thread waits for a tree_lock while holding tree locks only in lock_parent: holding s
//     and nodes below s (its child, or S', S'.parent, S'.right, all in s's right subtree),
//     it waits for s's parent. Every other tree-lock acquisition under a held tree lock is a
//     try_lock that, on failure, releases everything and retries (and choose_parent and the
//     first lock of a removal hold no tree lock). In a cycle of such waits, thread i waits
//     for s_i's parent, which thread i+1 holds as s_{i+1} or a node below it; links among
//     held nodes cannot change while they are held (a child link changes only under its
//     node's lock, a parent link under the old parent's), so at one instant s_i is a proper
//     descendant of s_{i+1} around the cycle: impossible. (Descendance, not depth: other
//     threads may remove nodes between s_{i+1} and S'.parent, which changes depths but
//     keeps ancestors. And the X that thread i waits for may have stopped being s_i's
//     parent after it was read, though s_i is held: only by X's own two-child removal,
//     which re-parents X's children under X's lock alone; X is then unreachable, and
//     nobody holds it again for longer than a failed validation (lock_parent's, or a
//     removal's of S'.parent).)
// Retries after a failed try_lock or validation back off; they are not starvation-free.
// contains takes no lock and never waits: lock-free. Its settle loops are bounded by the
// key distance they cover (keys strictly monotone), so it is wait-free given a bounded tree
// walk; the walk itself can be sent back up by relocations (each one a completed erase), so
// in general it is lock-free.
//
// Reclamation. The remover of s retires it once, after its last store (the tree unlink) and
// the release of its locks: then no reachable node links to s (I1) and s never becomes
// reachable again, and only the erase that marked s (the one whose validation under both
// succ locks found it unmarked) retires it. By the lemma, an operation only visits nodes
// reachable after it began, hence not retired before it began: an epoch guard around each
// operation keeps all of them alive. Reclaimers: none, ebr. Not hp: a hazard is validated by
// re-reading the link it came from, and the walks follow the frozen links of removed nodes,
// whose re-read proves nothing (the target may already have been retired and freed). Not
// ibr: the lemma is exactly what IBR's interval needs, but using it would take a protect()
// (an epoch load and compare) on every link load of the lock-free walks and 8 bytes of birth
// epoch per node (72 bytes, straddling lines); the house IBR is documented for validated
// traversals only (reclaim::WholeOperationReclaimer).
//
// Node layout (64 bytes + the reclaimer's NodeBase, empty for none and ebr): key, left,
// right (what the tree walk reads), succ (with the mark) and pred (what the settle reads),
// then parent and value (updates only) and the two 4-byte spin locks (platform/spin_lock.hpp,
// not pthread mutexes). No padding. Sentinels: Head has key min and Root key max; user keys
// lie in [min_key, max_key] = [min + 1, max - 1].
//
// Memory orders.
//  - Link loads outside a lock (the walks; an update's walk and its read of n.pred; parent
//    loads before locking) are acquire: they pair with the release store that linked the
//    node (its key, value and links are visible), and a walk that has read a later store of
//    a critical section sees the earlier ones (so no walk sees a half-done relocation as a
//    cycle: S' is detached before it gets its new children).
//  - Every link store is release: it publishes a new node (insert), or passes on the
//    publication of a node that the writer read under a lock (erase, relocation): a reader
//    of the new value synchronises with the writer, which synchronised with the node's
//    publisher through the lock. The mark store too: a reader follows the marked succ.
//  - Loads under the lock that guards the field are relaxed: the lock's acquire ordered
//    them after the previous holder's stores. Stores to a new node before it is published
//    are relaxed: the release store that publishes it orders them.
//  - The locks: acquire on lock, release on unlock (SpinLock).
//  On x86 every one of these is a plain move.
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
#include <utility>
#include <vector>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/marked_ptr.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/spin_lock.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/bst/detail/tree_depth.hpp"

namespace cdsb {

// Interleaving points (platform/interleave.hpp; tests/scripted/test_drachsler_scripted.cpp):
//   drachsler.erase.list_unlinked   s marked and out of the list, still in the tree, all locks held
//   drachsler.erase.heir_detached   two children: S' out of its place, not yet in s's
//   drachsler.insert.half_listed    between the two list stores (p.succ = new, then s.pred = new)
//   drachsler.contains.walked       the tree walk done, the settle along pred/succ not begun
template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class DrachslerBst {
  // The walks read links with plain acquire loads, never protect() (why: see the top).
  struct Node;
  using Succ = MarkedPtr<Node, 1>;  // mark set: the node is removed (logically deleted)
  static constexpr int left = 0, right = 1;

  struct Node : R::NodeBase {
    Node(Key k, Value v) : key(k), value(v) {}
    const Key key;
    std::atomic<Node*> child[2]{};      // left, right: guarded by tree_lock
    std::atomic<Succ> succ{Succ()};     // guarded by succ_lock
    std::atomic<Node*> pred{nullptr};   // guarded by pred's succ_lock
    std::atomic<Node*> parent{nullptr};  // guarded by parent's tree_lock
    const Value value;
    SpinLock succ_lock;
    SpinLock tree_lock;
  };
  static_assert(!(std::is_same_v<Key, std::uint64_t> && std::is_same_v<Value, std::uint64_t> &&
                  std::is_empty_v<typename R::NodeBase>) ||
                    sizeof(Node) == 64,
                "the node layout of the header: 64 bytes");

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Node);
  // Keys min and max are the sentinels'.
  static constexpr Key min_key = std::numeric_limits<Key>::min() + 1;
  static constexpr Key max_key = std::numeric_limits<Key>::max() - 1;

  explicit DrachslerBst(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options),
        stats_(max_threads, {{"validation_restarts", StatKind::counter},
                             {"choose_parent_retries", StatKind::counter},
                             {"tree_lock_retries", StatKind::counter},
                             {"lock_parent_retries", StatKind::counter}}) {
    head_ = reclaimer_.template allocate<Node>(0, head_key, Value{});
    root_ = reclaimer_.template allocate<Node>(0, root_key, Value{});
    // relaxed: the threads that use the tree are started (or synchronised with) afterwards.
    head_->succ.store(Succ(root_), std::memory_order_relaxed);
    head_->child[right].store(root_, std::memory_order_relaxed);
    root_->pred.store(head_, std::memory_order_relaxed);
    root_->parent.store(head_, std::memory_order_relaxed);
  }

  DrachslerBst(const DrachslerBst&) = delete;
  DrachslerBst& operator=(const DrachslerBst&) = delete;

  // Quiescent: at rest the list holds every node not retired, sentinels included.
  ~DrachslerBst() {
    Node* n = head_;
    while (n) {
      Node* next = n->succ.load(std::memory_order_acquire).get();
      reclaimer_.deallocate(0, n);
      n = next;
    }
  }

  // Linearizable (at the store p.succ = new, or, if k is present, at the read of p.succ
  // under p.succ_lock); blocking (fine-grained locks, deadlock-free). Reclaimers: none, ebr.
  bool insert(int tid, Key key, Value value) {
    assert(min_key <= key && key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Node* fresh = nullptr;  // the new node, allocated outside the locks, kept across attempts
    for (;;) {
      const Located at = lock_predecessor(tid, key, [&](Node* walk_end) {
        // Allocated before locking unless the walk found key (then most likely present).
        if (!fresh && walk_end->key != key) fresh = reclaimer_.template allocate<Node>(tid, key, value);
      });
      Node* p = at.p;
      Node* s = p->succ.load(std::memory_order_relaxed).get();  // relaxed: p.succ_lock is held
      if (s->key == key) {
        p->succ_lock.unlock();
        if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
        return false;
      }
      if (!fresh) {  // the walk had found key, now gone: allocate without holding the lock
        p->succ_lock.unlock();
        fresh = reclaimer_.template allocate<Node>(tid, key, value);
        continue;
      }
      Node* parent = choose_parent(tid, p, s, at.walk_end);  // its tree_lock is held
      // relaxed: fresh is published by the release store to p.succ below.
      fresh->pred.store(p, std::memory_order_relaxed);
      fresh->succ.store(Succ(s), std::memory_order_relaxed);
      fresh->parent.store(parent, std::memory_order_relaxed);
      // release (all three): publish fresh. p.succ first, then s.pred (DEVIATION 2): a node
      // reached through any link is already in the set. The linearization point.
      if (CDSB_MUTANT("drachsler.insert_links_pred_first")) {  // seeded bug: the paper's order
        s->pred.store(fresh, std::memory_order_release);
        CDSB_INTERLEAVE("drachsler.insert.half_listed");
        p->succ.store(Succ(fresh), std::memory_order_release);
      } else {
        p->succ.store(Succ(fresh), std::memory_order_release);
        CDSB_INTERLEAVE("drachsler.insert.half_listed");
        s->pred.store(fresh, std::memory_order_release);
      }
      p->succ_lock.unlock();
      parent->child[parent == p ? right : left].store(fresh, std::memory_order_release);
      parent->tree_lock.unlock();
      return true;
    }
  }

  // Linearizable (at the store that marks the node, or, if k is absent, at the read of
  // p.succ under p.succ_lock); blocking (fine-grained locks, deadlock-free). Reclaimers:
  // none, ebr.
  bool erase(int tid, Key key) {
    assert(min_key <= key && key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Node* p = lock_predecessor(tid, key, [](Node*) {}).p;
    Node* s = p->succ.load(std::memory_order_relaxed).get();  // relaxed: p.succ_lock is held
    if (s->key != key) {
      p->succ_lock.unlock();
      return false;
    }
    // s is live (unmarked, in the list) and stays so while we hold p.succ_lock. Its
    // succ_lock freezes its successor, which the removal may move in the tree.
    s->succ_lock.lock();
    const Removal r = lock_tree_for_removal(tid, s);
    const Succ next = s->succ.load(std::memory_order_relaxed);  // relaxed: s.succ_lock is held
    // release (all three): pass on next's publication to readers of these links.
    // The mark: the linearization point. s.succ is frozen from here on.
    s->succ.store(next.with_mark(1), std::memory_order_release);
    p->succ.store(next, std::memory_order_release);
    next->pred.store(p, std::memory_order_release);
    const bool early = CDSB_MUTANT("drachsler.erase_unlocks_before_tree_removal");  // seeded bug: the paper's order
    if (early) {
      s->succ_lock.unlock();
      p->succ_lock.unlock();
    }
    CDSB_INTERLEAVE("drachsler.erase.list_unlinked");
    remove_from_tree(s, r);  // releases the tree locks
    // Only now (DEVIATION 1): the gaps around s open to others once s is out of both layouts.
    if (!early) {
      s->succ_lock.unlock();
      p->succ_lock.unlock();
    }
    // Unreachable now, and for good (I1, I2): retired here, once, by the erase that marked
    // it (only one validation under both succ locks can find s unmarked).
    reclaimer_.retire(tid, s);
    return true;
  }

  // Linearizable (see the header: the read of the final node's mark when true, a moment
  // of the walk at which k was absent when false); lock-free, takes no lock and never
  // restarts. Reclaimers: none, ebr.
  bool contains(int tid, Key key) {
    if (key < min_key || key > max_key) return false;  // a sentinel's key, never a user key
    auto guard = reclaimer_.enter(tid);
    Node* n = walk(key);
    CDSB_INTERLEAVE("drachsler.contains.walked");
    if (CDSB_MUTANT("drachsler.contains_trusts_the_walk"))  // seeded bug: no settle along the list
      return n->key == key && !n->succ.load(std::memory_order_acquire).marked();
    // acquire (both loops and the mark): pairs with the release store of the link, so the
    // node's key and links are visible.
    while (n->key > key) n = n->pred.load(std::memory_order_acquire);
    while (n->key < key) n = n->succ.load(std::memory_order_acquire).get();
    return n->key == key && !n->succ.load(std::memory_order_acquire).marked();
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  // The keys in order (the ordering list).
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for (Node* n = first(); n != root_; n = n->succ.load(std::memory_order_acquire).get()) fn(n->key);
  }

  // Each key with the nodes the tree walk of a search for it reads, from the sentinel root (the
  // ordering list's last step, usually none, not counted); quiescent.
  template <class Fn>
  void for_each_key_depth(Fn&& fn) const {
    detail::visit_with_depth(root_, [](Node* n) {
      return std::array<Node*, 2>{n->child[left].load(std::memory_order_acquire), n->child[right].load(std::memory_order_acquire)};
    }, [&](Node* n, std::size_t depth) {
      if (n != root_) fn(n->key, depth);
    });
  }

  std::size_t size() const {
    std::size_t count = 0;
    for_each_key([&](Key) { ++count; });
    return count;
  }

  // Nodes in the tree layout, sentinels included.
  std::size_t node_count() const {
    std::size_t count = 0;
    std::vector<Node*> stack{head_};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      ++count;
      for (int side : {left, right})
        if (Node* c = n->child[side].load(std::memory_order_acquire)) stack.push_back(c);
    }
    return count;
  }

  // Height of the tree layout below Root (0 when empty): 1 + the longest path of user nodes.
  std::size_t height() const {
    std::size_t best = 0;
    std::vector<std::pair<Node*, std::size_t>> stack;
    if (Node* top = root_->child[left].load(std::memory_order_acquire)) stack.push_back({top, 1});
    while (!stack.empty()) {
      const auto [n, depth] = stack.back();
      stack.pop_back();
      best = std::max(best, depth);
      for (int side : {left, right})
        if (Node* c = n->child[side].load(std::memory_order_acquire)) stack.push_back({c, depth + 1});
    }
    return best;
  }

  // The tree layout below Root as text, "(left key right)" per node, "." for an empty
  // subtree: e.g. "((. 1 .) 2 .)". For tests that check where a removal moved a node.
  std::string shape() const {
    std::string out;
    // Explicit stack (an unbalanced tree is as deep as it is large): nodes to expand, or
    // text to emit.
    struct Item {
      Node* node;
      bool expand;
      std::string text;
    };
    std::vector<Item> stack{{root_->child[left].load(std::memory_order_acquire), true, {}}};
    while (!stack.empty()) {
      Item it = std::move(stack.back());
      stack.pop_back();
      if (!it.expand) {
        out += it.text;
      } else if (!it.node) {
        out += ".";
      } else {
        // Pushed in reverse: "(" left " key " right ")".
        stack.push_back({nullptr, false, ")"});
        stack.push_back({it.node->child[right].load(std::memory_order_acquire), true, {}});
        stack.push_back({nullptr, false, " " + std::to_string(it.node->key) + " "});
        stack.push_back({it.node->child[left].load(std::memory_order_acquire), true, {}});
        stack.push_back({nullptr, false, "("});
      }
    }
    return out;
  }

  // The sentinels in place; the tree layout a BST with consistent parent links; the
  // ordering list, forwards and backwards, exactly the in-order sequence of the tree (every
  // node in both layouts, pred and succ consistent); no node marked, no lock held (tried:
  // quiescent only). "" when sound, else the first violation.
  std::string check_invariants() const {
    if (head_->key != head_key || root_->key != root_key) return "a sentinel's key changed";
    if (head_->child[left].load(std::memory_order_acquire) || head_->child[right].load(std::memory_order_acquire) != root_ ||
        root_->child[right].load(std::memory_order_acquire) || root_->parent.load(std::memory_order_acquire) != head_)
      return "the sentinels' tree links are not Head{right: Root}, Root{left: the user keys}";
    if (head_->pred.load(std::memory_order_acquire) || root_->succ.load(std::memory_order_acquire) != Succ())
      return "Head has a pred or Root a succ";
    // No more nodes can be in the tree than are allocated and not freed (a bound that stops
    // the walk if the links form a cycle).
    const StatsReport rs = reclaimer_.stats();
    std::uint64_t allocated = 0, freed = 0;
    for (const auto& [name, v] : rs.values) {
      if (name == "nodes_allocated") allocated = v;
      if (name == "nodes_freed") freed = v;
    }
    const std::size_t bound = static_cast<std::size_t>(allocated - freed);
    // In-order walk of the tree layout (Head, Root's left subtree, Root), checking each
    // node's parent link on the way.
    std::vector<Node*> in_order{head_};
    {
      std::vector<Node*> stack;
      Node* n = root_->child[left].load(std::memory_order_acquire);
      if (n && n->parent.load(std::memory_order_acquire) != root_) return "Root's left child does not name Root as parent";
      while (n || !stack.empty()) {
        while (n) {
          stack.push_back(n);
          if (stack.size() + in_order.size() > bound) return "the tree layout has more nodes than are allocated (a cycle?)";
          Node* l = n->child[left].load(std::memory_order_acquire);
          if (l && l->parent.load(std::memory_order_acquire) != n)
            return "node " + std::to_string(l->key) + " does not name its tree parent " + std::to_string(n->key);
          n = l;
        }
        n = stack.back();
        stack.pop_back();
        in_order.push_back(n);
        Node* r = n->child[right].load(std::memory_order_acquire);
        if (r && r->parent.load(std::memory_order_acquire) != n)
          return "node " + std::to_string(r->key) + " does not name its tree parent " + std::to_string(n->key);
        n = r;
      }
    }
    in_order.push_back(root_);
    for (std::size_t i = 0; i < in_order.size(); ++i) {
      Node* n = in_order[i];
      const std::string name = "node " + std::to_string(n->key);
      if (i > 0 && !(in_order[i - 1]->key < n->key))
        return name + " follows " + std::to_string(in_order[i - 1]->key) + " in the tree's in-order sequence";
      if (i > 0 && i + 1 < in_order.size() && (n->key < min_key || n->key > max_key))
        return name + " holds a sentinel's key";
      const Succ succ = n->succ.load(std::memory_order_acquire);
      if (succ.marked()) return name + " is marked but still in the tree";
      // Forwards and backwards: the list is the in-order sequence.
      if (i + 1 < in_order.size() && succ.get() != in_order[i + 1])
        return name + ": its succ is not the next node in the tree's in-order sequence";
      if (i > 0 && n->pred.load(std::memory_order_acquire) != in_order[i - 1])
        return name + ": its pred is not the previous node in the tree's in-order sequence";
      if (!n->succ_lock.try_lock()) return name + ": its succ_lock is held";
      n->succ_lock.unlock();
      if (!n->tree_lock.try_lock()) return name + ": its tree_lock is held";
      n->tree_lock.unlock();
    }
    return {};
  }

  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat { validation_restarts, choose_parent_retries, tree_lock_retries, lock_parent_retries };
  static constexpr Key head_key = std::numeric_limits<Key>::min(), root_key = std::numeric_limits<Key>::max();

  Node* first() const { return head_->succ.load(std::memory_order_acquire).get(); }

  // The lock-free walk down the tree layout (all operations): from Root, until a node holding
  // key or a null child. A hint: the node it returns may be removed, or not next to key's
  // gap in the list. acquire: see the header.
  Node* walk(Key key) const {
    Node* n = root_;
    for (;;) {
      const Key k = n->key;
      if (k == key) return n;
      Node* c = n->child[k < key ? right : left].load(std::memory_order_acquire);
      if (!c) return n;
      n = c;
    }
  }

  struct Located {
    Node* walk_end;  // where the tree walk ended (the first parent candidate of an insert)
    Node* p;         // key's predecessor in the list, its succ_lock held
  };

  // Walks, then locks the node p that must precede key in the list and validates it: p
  // unmarked, p.key < key <= p.succ.key. While the lock is held p and p.succ stay adjacent
  // and live. Retries (from the root) when a concurrent update moved the gap.
  // before_lock(walk_end) runs between the walk and the lock (insert allocates there).
  template <class BeforeLock>
  Located lock_predecessor(int tid, Key key, BeforeLock&& before_lock) {
    Backoff backoff;
    for (;;) {
      Node* n = walk(key);
      before_lock(n);
      // acquire: pairs with the release store of the pred link (the node's key is read).
      Node* p = n->key >= key ? n->pred.load(std::memory_order_acquire) : n;
      p->succ_lock.lock();
      const Succ s = p->succ.load(std::memory_order_relaxed);  // relaxed: the lock is held
      // p is never Root (Root's key is above every user key, and no node's pred), so an
      // unmarked p has a successor.
      if (!s.marked() && p->key < key && key <= s->key) return {n, p};
      p->succ_lock.unlock();
      stats_.add(tid, validation_restarts);
      backoff();
    }
  }

  // The tree parent of a node going between p and s (adjacent in the list, p.succ_lock
  // held): p if p has no right child, else s if it has no left child. Returns it with its
  // tree_lock held. Holds one tree lock at a time (and no other): no deadlock.
  Node* choose_parent(int tid, Node* p, Node* s, Node* walk_end) {
    Node* candidate = walk_end == s ? s : p;  // the walk usually ended at the right one
    Backoff backoff;
    for (;;) {
      candidate->tree_lock.lock();
      // relaxed: the child links are guarded by the tree_lock we hold.
      if (candidate == p ? !p->child[right].load(std::memory_order_relaxed) : !s->child[left].load(std::memory_order_relaxed))
        return candidate;
      // A relocation (a removal moving p or s) is under way or just changed which fits.
      candidate->tree_lock.unlock();
      candidate = candidate == p ? s : p;
      stats_.add(tid, choose_parent_retries);
      backoff();
    }
  }

  // The tree locks a removal of s holds (besides s's own).
  struct Removal {
    Node* parent;       // s's tree parent
    Node* child;        // s has at most one child: it (or null)
    Node* heir;         // s has two children: its successor S', which takes s's place; else null
    Node* heir_parent;  // S'.parent (locked unless it is s)
    Node* heir_right;   // S'.right (or null); S' has no left child
  };

  // With both succ locks around s held: locks s (blocking: no tree lock is held yet), then
  // what its removal changes, by try_lock (the order there is not the deadlock-free one:
  // on failure everything is released and the attempt restarts), then s's parent
  // (lock_parent, blocking, the one wait under held tree locks).
  Removal lock_tree_for_removal(int tid, Node* s) {
    Backoff backoff;
    for (;;) {
      s->tree_lock.lock();
      // relaxed: s's child links are guarded by s.tree_lock.
      Node* l = s->child[left].load(std::memory_order_relaxed);
      Node* r = s->child[right].load(std::memory_order_relaxed);
      if (!l || !r) {
        Node* c = l ? l : r;
        if (!c || c->tree_lock.try_lock()) return {lock_parent(tid, s), c, nullptr, nullptr, nullptr};
      } else {
        // s's list successor is the leftmost node of its right subtree: we hold s.succ_lock
        // (no node can enter the gap after s) and s.tree_lock, and a successor still being
        // inserted has its chosen parent locked until it is in the tree (the try_lock fails).
        // (Rarely S' hangs, as left child, below a node N still being inserted as the left
        // child of that leftmost node: moving S' up and N's left to S'.right stays in order.)
        Node* heir = s->succ.load(std::memory_order_relaxed).get();  // relaxed: s.succ_lock is held
        assert(heir != root_);
        // acquire: pairs with the release store of the parent link (we lock the node).
        Node* hp = heir->parent.load(std::memory_order_acquire);
        bool parent_locked = hp == s;
        if (!parent_locked && hp->tree_lock.try_lock()) {
          // Still heir's parent? A parent link changes only under the old parent's lock.
          parent_locked = heir->parent.load(std::memory_order_relaxed) == hp;
          if (!parent_locked) hp->tree_lock.unlock();
        }
        if (parent_locked) {
          if (heir->tree_lock.try_lock()) {
            assert(hp->child[hp == s ? right : left].load(std::memory_order_relaxed) == heir);
            assert(!heir->child[left].load(std::memory_order_relaxed));
            Node* hr = heir->child[right].load(std::memory_order_relaxed);
            if (!hr || hr->tree_lock.try_lock()) return {lock_parent(tid, s), nullptr, heir, hp, hr};
            heir->tree_lock.unlock();
          }
          if (hp != s) hp->tree_lock.unlock();
        }
      }
      s->tree_lock.unlock();
      stats_.add(tid, tree_lock_retries);
      backoff();
    }
  }

  // Locks x's tree parent (x's tree_lock held). A parent link changes only under the old
  // parent's lock, so once the parent we locked is still named, it stays so.
  Node* lock_parent(int tid, Node* x) {
    for (;;) {
      // acquire: pairs with the release store of the parent link (we lock the node).
      Node* parent = x->parent.load(std::memory_order_acquire);
      parent->tree_lock.lock();
      if (x->parent.load(std::memory_order_relaxed) == parent) {  // relaxed: its lock is held
        assert(!parent->succ.load(std::memory_order_relaxed).marked());  // the paper's check
        return parent;
      }
      parent->tree_lock.unlock();
      stats_.add(tid, lock_parent_retries);
    }
  }

  // Takes s out of the tree layout and releases the tree locks. Every link to s from a
  // reachable node (the children's parent links, then the parent's child link) is
  // redirected before the store that unreaches s (I1); S' is detached from its place
  // before it gets s's children (no cycle, even for a walk in the middle). release stores:
  // see the header. The relaxed loads read links guarded by locks we hold.
  void remove_from_tree(Node* s, const Removal& r) {
    Node* parent = r.parent;
    const int side = parent->child[left].load(std::memory_order_relaxed) == s ? left : right;
    assert(parent->child[side].load(std::memory_order_relaxed) == s);
    if (!r.heir) {
      Node* c = r.child;
      if (c) c->parent.store(parent, std::memory_order_release);
      parent->child[side].store(c, std::memory_order_release);  // s unreachable
      if (c) c->tree_lock.unlock();
    } else {
      Node* heir = r.heir;
      Node* hp = r.heir_parent;
      Node* hr = r.heir_right;
      if (hp != s) {
        // S' leaves its place (hp's left child) to its right subtree, then takes s's right
        // subtree (which holds hp).
        if (hr) hr->parent.store(hp, std::memory_order_release);
        hp->child[left].store(hr, std::memory_order_release);
        CDSB_INTERLEAVE("drachsler.erase.heir_detached");
        Node* sr = s->child[right].load(std::memory_order_relaxed);
        heir->child[right].store(sr, std::memory_order_release);
        sr->parent.store(heir, std::memory_order_release);
      }  // else S' is s's right child and keeps its right subtree
      Node* sl = s->child[left].load(std::memory_order_relaxed);
      heir->child[left].store(sl, std::memory_order_release);
      sl->parent.store(heir, std::memory_order_release);
      heir->parent.store(parent, std::memory_order_release);
      parent->child[side].store(heir, std::memory_order_release);  // s unreachable
      if (hr) hr->tree_lock.unlock();
      heir->tree_lock.unlock();
      if (hp != s) hp->tree_lock.unlock();
    }
    s->tree_lock.unlock();
    parent->tree_lock.unlock();
  }

  R reclaimer_;
  Node* head_;  // key min: the list's first node; in the tree, Root's parent
  Node* root_;  // key max: the list's last node; the tree walk's start
  UserStats stats_;
};

static_assert(ConcurrentSet<DrachslerBst<reclaim::Archetype<>>>);

}  // namespace cdsb
