// The lock-free external binary search tree of A. Natarajan & N. Mittal, "Fast Concurrent
// Lock-Free Binary Search Trees", PPoPP 2014.
//
// Keys live in the leaves; internal (routing) nodes send a key k left when k < node.key and
// right otherwise. The algorithm marks *edges*, not nodes, with two bits in the child
// pointer:
//   flag  the leaf this edge points to is being deleted;
//   tag   the node holding this edge is being removed (its other edge is flagged); the edge
//         may no longer change, and its target will be moved up to replace that node.
// A delete flags the edge to its leaf (injection: the leaf can no longer be replaced by an
// insert), then tags the sibling edge and swings the edge of the nearest ancestor that is not
// being removed ("ancestor", reached by an untagged edge) from its child ("successor") to the
// sibling, removing in one CAS the parent, the flagged leaf and every node between successor
// and parent (a chain of nodes whose own deletes tagged them and got stuck). An insert
// replaces a leaf by a new internal node with the new leaf and the old leaf as children; any
// update that finds a flagged or tagged edge in its way helps that delete first. A search
// (seek) never writes and never restarts: it walks down, remembering the last untagged edge.
//
// Reclamation (the original code leaked removed nodes, as the BST anomalies study notes): a
// successful ancestor CAS unlinks exactly the nodes on the path successor .. parent and, for
// each of them, the child not on the path (a flagged leaf; at the parent, the child that was
// not moved up). Every edge among them is flagged or tagged, hence frozen, so the thread whose
// CAS succeeded walks that path and retires each of those nodes, each exactly once (no other
// CAS can unlink a node that is already out of the tree: each of its edges is frozen). The
// sibling's subtree stays.
//
// Node layout (32 bytes + the reclaimer's NodeBase): key, left, right (the three fields a
// search reads; the flag and tag bits ride in the child pointers' low bits), then the value.
// Internal nodes and leaves share the type (a leaf's children are null), as in the paper.
// Sentinels: keys max-2, max-1 and max (three "infinities"); user keys must be below max-2
// (max_key). The tree starts as R(max){ S(max-1){ leaf max-2, leaf max-1 }, leaf max }.
//
// Reclaimers: none, ebr. Not hp and not ibr: a seek walks through nodes that were removed
// while it ran (it must: it follows the frozen edges of a removed chain to reach the flagged
// leaf it may help delete), and a removed node's link is frozen, so re-reading it after
// publishing a hazard or raising a reservation proves nothing (see lazy.hpp); its target may
// already be retired and freed. Epochs need no per-pointer proof.
//
// Memory orders. Every write to the tree is a CAS on an edge; every read is an acquire load.
//  - Edge loads (seek, contains, cleanup) are acquire: they pair with the release of the CAS
//    that stored the pointer, so the node's key and children are visible before we read them.
//  - The insert CAS is release: it publishes the new internal node and leaf. It is relaxed on
//    failure: the value read is only compared, never dereferenced.
//  - The flag (injection) CAS, the tag CAS and the ancestor CAS are acq_rel: acquire, because
//    the pointer they read is followed (the tag CAS reads the sibling that the ancestor CAS
//    moves up; the retire walk reads the removed nodes), and release, so that a reader of the
//    edge they write synchronises with a writer whose publication it carries on (the moved-up
//    sibling was published by another thread; our release passes that on). Failures are
//    acquire where the value read is followed (the tag loop), relaxed where it is only compared.
//  On x86 every CAS is a locked instruction and every load a plain move whatever the order.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <limits>
#include <string>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/marked_ptr.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/bst/detail/external_tree.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class NatarajanMittalBst {
  // Searches read links with plain acquire loads, never protect() (why: see the top).
  struct Node;
  using Edge = MarkedPtr<Node, 2>;  // bit 0: flag, bit 1: tag
  using Link = std::atomic<Edge>;
  static constexpr std::uintptr_t flag_bit = 1, tag_bit = 2;

  struct Node : R::NodeBase {
    Node(Key k, Value v) : key(k), value(v) {}                        // a leaf
    Node(Key k, Node* l, Node* r) : key(k), left(Edge(l)), right(Edge(r)) {}  // an internal node
    const Key key;
    Link left{Edge()};
    Link right{Edge()};
    const Value value{};  // leaves only
  };

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Node);
  // Keys max-2, max-1 and max are the sentinels' ("infinity 0, 1, 2").
  static constexpr Key max_key = std::numeric_limits<Key>::max() - 3;

  explicit NatarajanMittalBst(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options),
        stats_(max_threads, {{"update_restarts", StatKind::counter}, {"cleanups_for_others", StatKind::counter}}) {
    Node* leaf_inf0 = reclaimer_.template allocate<Node>(0, inf0, Value{});
    Node* leaf_inf1 = reclaimer_.template allocate<Node>(0, inf1, Value{});
    Node* leaf_inf2 = reclaimer_.template allocate<Node>(0, inf2, Value{});
    s_ = reclaimer_.template allocate<Node>(0, inf1, leaf_inf0, leaf_inf1);
    root_ = reclaimer_.template allocate<Node>(0, inf2, s_, leaf_inf2);
  }

  NatarajanMittalBst(const NatarajanMittalBst&) = delete;
  NatarajanMittalBst& operator=(const NatarajanMittalBst&) = delete;

  ~NatarajanMittalBst() {
    detail::visit_external_tree<Shape>(root_, [&](Node* n) { reclaimer_.deallocate(0, n); });
  }

  // Linearizable (at the CAS that links the new internal node, or when the seek read the edge
  // to a leaf holding the key); lock-free. Reclaimers: none, ebr.
  bool insert(int tid, Key key, Value value) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Node* fresh = nullptr;  // the new leaf, kept across attempts
    for (;;) {
      SeekRecord s;
      seek(key, s);
      Node* leaf = s.leaf;
      if (leaf->key == key) {
        if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
        return false;
      }
      if (!fresh) fresh = reclaimer_.template allocate<Node>(tid, key, value);
      Node* internal = key < leaf->key ? reclaimer_.template allocate<Node>(tid, leaf->key, fresh, leaf)
                                       : reclaimer_.template allocate<Node>(tid, key, leaf, fresh);
      Link& child = child_link(s.parent, key);
      Edge expected(leaf);  // clean: neither flagged nor tagged
      // release: publishes the new nodes to every reader of this edge (see the header).
      if (child.compare_exchange_strong(expected, Edge(internal), std::memory_order_release,
                                        std::memory_order_relaxed))
        return true;
      reclaimer_.deallocate(tid, internal);  // never published
      stats_.add(tid, update_restarts);
      // The leaf is being deleted (flagged) or its parent removed (tagged): help, then retry.
      if (expected.get() == leaf && expected.marked() && !CDSB_MUTANT("nm.insert_skips_help")) {
        stats_.add(tid, cleanups_for_others);
        cleanup(tid, key, s);
      }
    }
  }

  // Linearizable (at the ancestor CAS, by whichever thread, that unlinks the flagged leaf, or
  // when the seek found no leaf with the key); lock-free. Reclaimers: none, ebr.
  bool erase(int tid, Key key) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Node* leaf = nullptr;  // set once this delete has flagged its leaf (cleanup mode)
    for (;;) {
      SeekRecord s;
      seek(key, s);
      if (!leaf) {  // injection mode
        if (s.leaf->key != key) return false;
        Link& child = child_link(s.parent, key);
        Edge expected(s.leaf);
        // acq_rel (see the header). Flagging decides which delete of the key succeeds; the
        // leaf is then gone from the set's point of view once cleanup unlinks it.
        if (child.compare_exchange_strong(expected, Edge(s.leaf, flag_bit), std::memory_order_acq_rel,
                                          std::memory_order_relaxed)) {
          leaf = s.leaf;
          CDSB_INTERLEAVE("nm.erase.flagged");  // leaf edge flagged, sibling not tagged, nothing unlinked
          if (cleanup(tid, key, s)) return true;
        } else {
          stats_.add(tid, update_restarts);
          if (expected.get() == s.leaf && expected.marked()) {
            stats_.add(tid, cleanups_for_others);
            cleanup(tid, key, s);
          }
        }
      } else {
        // Cleanup mode: the flagged leaf is ours. A pointer compare only: while we are inside
        // the operation the leaf, even if unlinked and retired, cannot be freed and reused.
        if (s.leaf != leaf) return true;  // another thread unlinked it for us
        stats_.add(tid, update_restarts);
        if (cleanup(tid, key, s)) return true;
      }
    }
  }

  // Linearizable (when it reads the null child of a leaf that was still in the tree at some
  // point of the search); lock-free, and it never restarts (no bookkeeping, no helping: one
  // acquire load per level). Reclaimers: none, ebr.
  bool contains(int tid, Key key) {
    if (key > max_key) return false;  // a sentinel's key, never a user key
    auto guard = reclaimer_.enter(tid);
    Node* n = s_->left.load(std::memory_order_acquire).get();  // user keys are all below S's key
    for (;;) {
      Node* next = child_link(n, key).load(std::memory_order_acquire).get();
      if (!next) return n->key == key;
      n = next;
    }
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    detail::for_each_leaf<Shape>(root_, [&](Node* n) {
      if (n->key <= max_key) fn(n->key);
    });
  }

  // Each key with the nodes a search for it reads, the sentinels R and S included (quiescent).
  template <class Fn>
  void for_each_key_depth(Fn&& fn) const {
    detail::for_each_leaf_depth<Shape>(root_, [&](Node* n, std::size_t depth) {
      if (n->key <= max_key) fn(n->key, depth);
    });
  }

  // External-tree shape and key order, no flagged or tagged edge left at quiescence (every
  // delete completed its cleanup), and the sentinels in place.
  std::string check_invariants() const {
    if (root_->key != inf2 || root_->left.load(std::memory_order_acquire).get() != s_ || s_->key != inf1)
      return "the sentinel nodes R and S are not in place";
    Node* r = root_->right.load(std::memory_order_acquire).get();
    Node* sr = s_->right.load(std::memory_order_acquire).get();
    if (!r || r->key != inf2 || !Shape::is_leaf(r) || !sr || sr->key != inf1 || !Shape::is_leaf(sr))
      return "the sentinel leaves max-1 and max are not in place";
    // max-2 is the largest key under S's left child (the order is checked below).
    Node* last = detail::rightmost_leaf<Shape>(s_->left.load(std::memory_order_acquire).get());
    if (!Shape::present(last) || last->key != inf0) return "the sentinel leaf max-2 is missing";
    return detail::check_external_tree<Shape>(root_);
  }

  // Nodes reachable from the root, sentinels included (quiescent).
  std::size_t node_count() const {
    std::size_t n = 0;
    detail::visit_external_tree<Shape>(root_, [&](Node*) { ++n; });
    return n;
  }

  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat { update_restarts, cleanups_for_others };
  static constexpr Key inf2 = std::numeric_limits<Key>::max(), inf1 = inf2 - 1, inf0 = inf2 - 2;

  // ancestor -> successor: the last untagged edge above parent; successor .. parent: a chain
  // of tagged edges (nodes being removed); parent -> leaf: where the seek ended.
  struct SeekRecord {
    Node* ancestor;
    Node* successor;
    Node* parent;
    Node* leaf;
  };

  static Link& child_link(Node* n, Key key) { return key < n->key ? n->left : n->right; }

  void seek(Key key, SeekRecord& s) const {
    s.ancestor = root_;
    s.successor = s_;
    s.parent = s_;
    Edge parent_field = s_->left.load(std::memory_order_acquire);  // the edge parent -> leaf
    s.leaf = parent_field.get();
    Edge current_field = child_link(s.leaf, key).load(std::memory_order_acquire);
    while (Node* current = current_field.get()) {
      if (!(parent_field.mark() & tag_bit)) {  // untagged: parent is not being removed
        s.ancestor = s.parent;
        s.successor = s.leaf;
      }
      s.parent = s.leaf;
      s.leaf = current;
      parent_field = current_field;
      current_field = child_link(current, key).load(std::memory_order_acquire);
    }
  }

  // Removes the flagged leaf below s.parent (ours or one in our way) with its parent, by
  // moving the parent's other child up to s.ancestor. True iff this thread's CAS did it.
  bool cleanup(int tid, Key key, const SeekRecord& s) {
    Node* parent = s.parent;
    Link& successor_link = child_link(s.ancestor, key);
    Link* child = key < parent->key ? &parent->left : &parent->right;
    Link* sibling = key < parent->key ? &parent->right : &parent->left;
    // acquire: the flag we test was set by the delete's injection CAS (acq_rel).
    if (!(child->load(std::memory_order_acquire).mark() & flag_bit))
      sibling = child;  // our side is not the flagged one: the sibling is, so keep our side
    // Tag the edge to keep (a bit-test-and-set, as a CAS loop): it can no longer change, so
    // what it points to is what the ancestor CAS moves up. acq_rel / acquire: see the header.
    Edge kept = sibling->load(std::memory_order_acquire);
    while (!(kept.mark() & tag_bit) &&
           !sibling->compare_exchange_weak(kept, kept.with_mark(kept.mark() | tag_bit), std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
    }
    CDSB_INTERLEAVE("nm.cleanup.tagged");  // leaf flagged, the kept edge tagged, nothing unlinked
    Edge expected(s.successor);  // clean: the ancestor is not being removed itself
    // acq_rel: see the header. Unlinks successor .. parent and the flagged leaf (the delete's
    // linearization point); the moved-up edge keeps its flag (a leaf being deleted stays so).
    if (!successor_link.compare_exchange_strong(expected, Edge(kept.get(), kept.mark() & flag_bit),
                                                std::memory_order_acq_rel, std::memory_order_relaxed))
      return false;
    retire_unlinked(tid, key, s.successor, parent, sibling);
    return true;
  }

  // The nodes our ancestor CAS unlinked: the path successor .. parent (which the seek followed
  // by `key`, through tagged edges) and each one's other child (a flagged leaf); at the parent,
  // the child that was not moved up. All their edges are frozen, so the walk reads what the
  // CAS removed. acquire loads: we read the nodes' fields (keys) on the way.
  void retire_unlinked(int tid, Key key, Node* successor, Node* parent, Link* kept) {
    // Why exactly these nodes, once each: every removed internal node has both edges marked
    // (a tagged path edge, a flagged leaf beside it), so (1) no CAS inside the removed part
    // can succeed and nothing is ever linked into it again, and (2) our successful ancestor
    // CAS proves the ancestor was still in the tree, so after it no clean edge points into
    // the part, and only one ancestor CAS can remove any node. The asserts check the marks.
    Node* n = successor;
    while (n != parent) {
      const bool left = key < n->key;
      const Edge path = (left ? n->left : n->right).load(std::memory_order_acquire);
      const Edge beside = (left ? n->right : n->left).load(std::memory_order_acquire);
      assert((path.mark() & tag_bit) && (beside.mark() & flag_bit) && Shape::is_leaf(beside.get()));
      reclaimer_.retire(tid, beside.get());
      reclaimer_.retire(tid, n);
      n = path.get();
    }
    Link& removed = kept == &parent->left ? parent->right : parent->left;
    const Edge removed_edge = removed.load(std::memory_order_acquire);
    Node* leaf = removed_edge.get();
    assert((removed_edge.mark() & flag_bit) && Shape::is_leaf(leaf));
    reclaimer_.retire(tid, leaf);
    reclaimer_.retire(tid, parent);
  }

  struct Shape {
    static bool present(Node* n) { return n != nullptr; }
    static bool is_leaf(Node* n) { return n->left.load(std::memory_order_acquire).get() == nullptr; }
    static Key key(Node* n) { return n->key; }
    static Node* left(Node* n) { return n->left.load(std::memory_order_acquire).get(); }
    static Node* right(Node* n) { return n->right.load(std::memory_order_acquire).get(); }
    static const char* problem(Node* n) {
      const Edge l = n->left.load(std::memory_order_acquire), r = n->right.load(std::memory_order_acquire);
      if (!l.get() != !r.get()) return "exactly one child (an internal node needs two)";
      if (l.marked() || r.marked()) return "a flagged or tagged edge remains";
      return nullptr;
    }
  };

  R reclaimer_;
  Node* root_;  // R, key max
  Node* s_;     // S, key max-1: R's left child for ever; user keys all live below S's left edge
  UserStats stats_;
};

static_assert(ConcurrentSet<NatarajanMittalBst<reclaim::Archetype<>>>);

}  // namespace cdsb
