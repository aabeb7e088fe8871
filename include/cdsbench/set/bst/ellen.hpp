// The non-blocking external binary search tree of F. Ellen, P. Fatourou, E. Ruppert &
// F. van Breugel, "Non-blocking Binary Search Trees", PODC 2010.
//
// Keys live in the leaves; internal (routing) nodes send a key k left when k < node.key and
// right otherwise. Every internal node has an `update` word: a state (CLEAN, IFLAG, DFLAG,
// MARK) and, while not CLEAN, a pointer to an Info record (descriptor) that says what the
// pending update will do, so that any thread that finds it in its way can finish it (help).
//   insert: flag the parent (IFLAG, from the CLEAN value its search read), swing the parent's
//     child from the leaf to a new internal node whose children are the new leaf and a *copy*
//     of the old leaf (a fresh node, so no late helper's CAS can succeed twice), unflag.
//   delete: flag the grandparent (DFLAG), mark the parent (MARK, permanent: the parent is
//     being removed), swing the grandparent's child from the parent to the leaf's sibling,
//     unflag the grandparent. If the mark fails (the parent changed since the search), the
//     delete helps whatever is there, backtracks (unflags the grandparent) and retries.
// Child pointers change only while their node is flagged, by the operation that flagged it,
// and a CAS on an update word succeeds only if the word is unchanged since it was read: that
// makes every child CAS act on the state its operation's search saw.
//
// Our one change to the paper's encoding: a CLEAN update word carries a per-node version
// instead of a pointer to the node's last Info record. The paper never dereferences a CLEAN
// record; it keeps the pointer only as a stamp that makes a CLEAN value unique, so that a CAS
// expecting the value its search read fails once anything happened to the node. Under
// reclamation a pointer stamp is unsafe: the record it names may be freed and its memory
// reused for a new record installed on the same node, and a helper that still holds the old
// value (e.g. a delete's `pupdate` for its mark CAS) would then succeed (ABA). The version (62
// bits, +1 at every unflag and backtrack, so it never repeats) gives the same uniqueness
// without naming memory, and the mark CAS, the flag CASes and the unflag CASes keep their
// meaning.
//
// Reclamation, nodes and descriptors (the paper assumes a garbage collector). An Info record
// is reachable from an update word only while its flag or mark is there; a thread that
// reads it may keep acting on it (and on the nodes it names: p, l, the new internal node,
// gp) after the record has left the word. So the record, and the nodes its operation
// removed, are retired together by the thread whose CAS takes the record out of the
// grandparent's or parent's update word for the last time:
//   - insert: the unflag winner retires the Info and the replaced leaf (the child CAS, by
//     whichever helper, happened before any unflag could succeed);
//   - delete, completed: the unflag winner of the grandparent retires the Info, the removed
//     parent (whose update word keeps MARK and the Info for ever) and the removed leaf (the
//     child CAS happened before any unflag);
//   - delete, backtracked: the backtrack winner retires the Info (it never marked anything).
// Every thread that can still act on the record (or read the removed parent's update word)
// got it before that CAS, inside its current operation, so the epoch scheme keeps the record
// alive until it finishes. The nodes a record dereferences, p and gp, are alive too: its flag
// CAS succeeded, so they were unchanged since the search, and a flagged or marked node cannot
// be removed. Not so a delete record's leaf l: an insert beside it may replace l (and retire
// it) before the delete flags gp, so l is only ever compared, never dereferenced (Info::l).
// Unpublished records and nodes (a flag CAS that failed) are freed at once.
//
// Node layout (+ the reclaimer's NodeBase): internal 32 bytes: key, left, right (what a
// search reads), then update. Leaf 16 bytes: key, value. A child pointer's low bit says
// whether it points to a leaf, so a search knows a node's type without reading it first.
// Info record 40 bytes: p, l, third (the new internal node of an insert, the grandparent of
// a delete), p's CLEAN version (expected by the mark CAS; +1 by an insert's unflag) and gp's
// (+1 by a delete's unflag or backtrack). One type for both kinds (as in libcds), so both
// share a size class. Sentinels: keys max-1 and max; user keys must be below max-1
// (max_key). The tree starts as Root(max){ leaf max-1, leaf max }.
//
// Reclaimers: none, ebr. Not hp and not ibr: searches walk through removed nodes without
// validating anything (the paper's search does not even read update words on the way), and
// helpers act on the nodes named in an Info record long after reading them; neither can
// re-validate a pointer the way HP and IBR require (libcds's HP variant changes the search to
// restart at flagged or marked nodes; that is a different algorithm). Epochs need no
// per-pointer proof.
//
// Memory orders.
//  - Child and update loads are acquire: they pair with the release of the CAS that stored
//    the node or the Info record, so its fields are visible before we read them.
//  - Every CAS on an update word and every child CAS is acq_rel on success. Release publishes
//    the new Info record or nodes, and passes on (through this thread) what it read: an
//    unflag released after the child CAS (or after the failed child CAS that read another
//    helper's result) lets a search that reads the CLEAN value see the new child, which is
//    what makes a later flag CAS from that CLEAN value act on the current child. On failure:
//    acquire for the flag, mark and child CASes (the value read is helped, or, for a child
//    CAS, carried on by the unflag that follows), relaxed for the unflag and backtrack CASes
//    (failing means another helper did it; the value is not used).
//  On x86 a CAS is a locked instruction whatever the order, a load a plain move.
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
class EllenBst {
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

  struct Info;
  enum State : std::uintptr_t { clean = 0, iflag = 1, dflag = 2, mark = 3 };

  // An update word: CLEAN with a version, or a state with its Info record.
  class Update {
   public:
    constexpr Update() noexcept = default;
    static Update clean_at(std::uint64_t version) noexcept { return Update(static_cast<std::uintptr_t>(version) << 2); }
    static Update with(State s, Info* info) noexcept { return Update(reinterpret_cast<std::uintptr_t>(info) | s); }
    State state() const noexcept { return static_cast<State>(bits_ & 3); }
    Info* info() const noexcept { return reinterpret_cast<Info*>(bits_ & ~std::uintptr_t{3}); }
    std::uint64_t version() const noexcept { return bits_ >> 2; }  // CLEAN only
    friend bool operator==(Update a, Update b) noexcept { return a.bits_ == b.bits_; }

   private:
    explicit constexpr Update(std::uintptr_t bits) noexcept : bits_(bits) {}
    std::uintptr_t bits_ = 0;
  };

  struct Internal : Node {
    Internal(Key k, Child l, Child r) : Node(k), left(l), right(r) {}
    Link left;
    Link right;
    std::atomic<Update> update{Update()};  // CLEAN, version 0
  };

  struct Info : R::NodeBase {
    Info(Internal* p_, Child l_, Internal* third_, std::uint64_t pv, std::uint64_t gpv)
        : p(p_), l(l_), third(third_), p_version(pv), gp_version(gpv) {}
    Internal* const p;
    const Child l;                   // the leaf (tagged as in p's child word); compare only:
                                     // a delete's l may already be retired (see the top)
    Internal* const third;           // insert: the new internal node; delete: the grandparent
    const std::uint64_t p_version;   // p's CLEAN version when the search read it
    const std::uint64_t gp_version;  // delete: gp's CLEAN version when the search read it
  };
  static_assert(alignof(Info) >= 4, "the state lives in an Info pointer's two low bits");

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Internal);
  static constexpr std::size_t leaf_bytes = sizeof(Leaf);
  static constexpr std::size_t descriptor_bytes = sizeof(Info);
  // Keys max-1 and max are the sentinels'.
  static constexpr Key max_key = std::numeric_limits<Key>::max() - 2;

  explicit EllenBst(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options),
        stats_(max_threads, {{"update_restarts", StatKind::counter},
                             {"helps", StatKind::counter},
                             {"delete_backtracks", StatKind::counter}}) {
    Leaf* l1 = reclaimer_.template allocate<Leaf>(0, inf1, Value{});
    Leaf* l2 = reclaimer_.template allocate<Leaf>(0, inf2, Value{});
    root_ = reclaimer_.template allocate<Internal>(0, inf2, leaf_child(l1), leaf_child(l2));
  }

  EllenBst(const EllenBst&) = delete;
  EllenBst& operator=(const EllenBst&) = delete;

  // Quiescent: every update word is CLEAN (each operation unflagged before returning), so the
  // tree holds no Info record; retired ones are the reclaimer's.
  ~EllenBst() {
    detail::visit_external_tree<Shape>(Child(root_), [&](Child c) { free_node(0, c); });
  }

  // Linearizable (at the child CAS that links the new internal node, by whichever helper, or
  // when the search read the edge to a leaf holding the key); lock-free. Reclaimers: none, ebr.
  bool insert(int tid, Key key, Value value) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Leaf* fresh = nullptr;  // the new leaf, kept across attempts
    for (;;) {
      const Found f = search(key);
      const Leaf* l = as_leaf(f.l);
      if (l->key == key) {
        if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
        return false;
      }
      if (f.pupdate.state() != clean) {
        help(tid, f.pupdate);
        continue;
      }
      if (!fresh) fresh = reclaimer_.template allocate<Leaf>(tid, key, value);
      Leaf* copy = reclaimer_.template allocate<Leaf>(tid, l->key, l->value);
      Internal* internal =
          key < l->key ? reclaimer_.template allocate<Internal>(tid, l->key, leaf_child(fresh), leaf_child(copy))
                       : reclaimer_.template allocate<Internal>(tid, key, leaf_child(copy), leaf_child(fresh));
      Info* op = reclaimer_.template allocate<Info>(tid, f.p, f.l, internal, f.pupdate.version(), 0);
      Update expected = f.pupdate;
      // iflag. acq_rel: publishes op (and through it the new nodes) to helpers; acquire on
      // failure: we help the record we find.
      if (f.p->update.compare_exchange_strong(expected, Update::with(iflag, op), std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
        CDSB_INTERLEAVE("ellen.insert.flagged");  // p IFLAGged, child CAS not done: others must help
        help_insert(tid, op);
        return true;
      }
      reclaimer_.deallocate(tid, op);  // never published
      reclaimer_.deallocate(tid, internal);
      reclaimer_.deallocate(tid, copy);
      stats_.add(tid, update_restarts);
      help(tid, expected);
    }
  }

  // Linearizable (at the child CAS that unlinks the marked parent and the leaf, by whichever
  // helper, or when the search found no leaf with the key); lock-free. Reclaimers: none, ebr.
  bool erase(int tid, Key key) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      const Found f = search(key);
      if (as_leaf(f.l)->key != key) return false;
      // A user key's leaf always has a grandparent: Root's left subtree ends in leaf max-1.
      if (f.gpupdate.state() != clean) {
        help(tid, f.gpupdate);
        continue;
      }
      if (f.pupdate.state() != clean) {
        help(tid, f.pupdate);
        continue;
      }
      Info* op = reclaimer_.template allocate<Info>(tid, f.p, f.l, f.gp, f.pupdate.version(), f.gpupdate.version());
      Update expected = f.gpupdate;
      // dflag. acq_rel / acquire: as iflag.
      if (f.gp->update.compare_exchange_strong(expected, Update::with(dflag, op), std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
        CDSB_INTERLEAVE("ellen.erase.flagged");  // gp DFLAGged, p not yet marked: others must help
        if (help_delete(tid, op)) return true;
      } else {
        reclaimer_.deallocate(tid, op);  // never published
        help(tid, expected);
      }
      stats_.add(tid, update_restarts);
    }
  }

  // Linearizable (when it reads the edge to a leaf that was in the tree at some point of the
  // search); lock-free, and it never restarts: no update word read, no helping, one acquire
  // load per level. Reclaimers: none, ebr.
  bool contains(int tid, Key key) {
    if (key > max_key) return false;  // a sentinel's key, never a user key
    auto guard = reclaimer_.enter(tid);
    Child c = root_->left.load(std::memory_order_acquire);  // user keys are all below Root's key
    while (!c.marked()) c = child_link(as_internal(c), key).load(std::memory_order_acquire);
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

  // External-tree shape and key order, every update word CLEAN (no flag or mark left: every
  // operation finished its update), and the sentinels in place.
  std::string check_invariants() const {
    const Child r = root_->right.load(std::memory_order_acquire);
    if (root_->key != inf2 || !r.marked() || r->key != inf2) return "the sentinel Root or leaf max is not in place";
    // max-1 is the largest key under Root's left child (the order is checked below).
    const Child last = detail::rightmost_leaf<Shape>(root_->left.load(std::memory_order_acquire));
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
  enum Stat { update_restarts, helps, delete_backtracks };
  static constexpr Key inf2 = std::numeric_limits<Key>::max(), inf1 = inf2 - 1;

  static Child leaf_child(Leaf* l) { return Child(l, 1); }
  static Leaf* as_leaf(Child c) { return static_cast<Leaf*>(c.get()); }
  static Internal* as_internal(Child c) { return static_cast<Internal*>(c.get()); }
  static Link& child_link(Internal* n, Key key) { return key < n->key ? n->left : n->right; }

  struct Found {
    Internal* gp;
    Internal* p;
    Child l;
    Update gpupdate;  // gp's update word, read before gp's child (p)
    Update pupdate;   // p's update word, read before p's child (l)
  };

  // The paper's Search: down to a leaf, keeping parent and grandparent with the update words
  // read before following their children.
  Found search(Key key) const {
    Found f{nullptr, nullptr, Child(root_), Update(), Update()};
    while (!f.l.marked()) {
      f.gp = f.p;
      f.p = as_internal(f.l);
      f.gpupdate = f.pupdate;
      f.pupdate = f.p->update.load(std::memory_order_acquire);
      f.l = child_link(f.p, key).load(std::memory_order_acquire);
    }
    return f;
  }

  void help(int tid, Update u) {
    switch (u.state()) {
      case iflag:
        if (CDSB_MUTANT("ellen.help_skips_insert")) break;
        stats_.add(tid, helps);
        help_insert(tid, u.info());
        break;
      case mark:
        stats_.add(tid, helps);
        help_marked(tid, u.info());
        break;
      case dflag:
        if (CDSB_MUTANT("ellen.help_skips_delete")) break;
        stats_.add(tid, helps);
        help_delete(tid, u.info());
        break;
      case clean:
        break;
    }
  }

  // CAS-Child: the side is the one the new child's key routes to.
  static bool cas_child(Internal* parent, Child old, Child replacement) {
    Link& link = replacement->key < parent->key ? parent->left : parent->right;
    // ichild / dchild. acq_rel / acquire: see the header (the failure read matters too: an
    // unflag by this thread must carry the winning helper's child write).
    return link.compare_exchange_strong(old, replacement, std::memory_order_acq_rel, std::memory_order_acquire);
  }

  void help_insert(int tid, Info* op) {
    cas_child(op->p, op->l, Child(op->third));
    Update flagged = Update::with(iflag, op);
    // iunflag. acq_rel: see the header; relaxed on failure: another helper unflagged.
    if (op->p->update.compare_exchange_strong(flagged, Update::clean_at(op->p_version + 1), std::memory_order_acq_rel,
                                              std::memory_order_relaxed)) {
      // op has left the only update word that held it, and the child CAS replaced l.
      reclaimer_.retire(tid, as_leaf(op->l));
      reclaimer_.retire(tid, op);
    }
  }

  // True iff the delete of op will complete (p is marked with op).
  bool help_delete(int tid, Info* op) {
    Update expected = Update::clean_at(op->p_version);
    const Update marked = Update::with(mark, op);
    // mark. acq_rel / acquire: see the header. p's children are frozen from here on.
    if (op->p->update.compare_exchange_strong(expected, marked, std::memory_order_acq_rel, std::memory_order_acquire) ||
        expected == marked) {
      help_marked(tid, op);
      return true;
    }
    // p changed since the delete's search (and versions never repeat, so it never will be
    // marked with op): help what is there, then backtrack.
    help(tid, expected);
    Update flagged = Update::with(dflag, op);
    // backtrack. acq_rel: see the header; relaxed on failure: another helper backtracked.
    if (op->third->update.compare_exchange_strong(flagged, Update::clean_at(op->gp_version + 1),
                                                  std::memory_order_acq_rel, std::memory_order_relaxed)) {
      stats_.add(tid, delete_backtracks);
      reclaimer_.retire(tid, op);  // it was in gp's update word only
    }
    return false;
  }

  void help_marked(int tid, Info* op) {
    Internal* p = op->p;
    Internal* gp = op->third;
    // acquire: p is marked, so these are p's final children.
    const Child right = p->right.load(std::memory_order_acquire);
    const Child other = right == op->l ? p->left.load(std::memory_order_acquire) : right;
    cas_child(gp, Child(p), other);
    Update flagged = Update::with(dflag, op);
    // dunflag. acq_rel: see the header; relaxed on failure: another helper unflagged.
    if (gp->update.compare_exchange_strong(flagged, Update::clean_at(op->gp_version + 1), std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
      // op has left gp's word; p (whose word keeps MARK and op) and l are out of the tree.
      reclaimer_.retire(tid, as_leaf(op->l));
      reclaimer_.retire(tid, p);
      reclaimer_.retire(tid, op);
    }
  }

  void free_node(int tid, Child c) {
    if (c.marked()) reclaimer_.deallocate(tid, as_leaf(c));
    else reclaimer_.deallocate(tid, as_internal(c));
  }

  struct Shape {
    static bool present(Child c) { return c.get() != nullptr; }
    static bool is_leaf(Child c) { return c.marked(); }
    static Key key(Child c) { return c->key; }
    static Child left(Child c) { return as_internal(c)->left.load(std::memory_order_acquire); }
    static Child right(Child c) { return as_internal(c)->right.load(std::memory_order_acquire); }
    static const char* problem(Child c) {
      if (c.marked()) return nullptr;
      const Update u = as_internal(c)->update.load(std::memory_order_acquire);
      switch (u.state()) {
        case iflag: return "an insert's flag remains (IFLAG)";
        case dflag: return "a delete's flag remains (DFLAG)";
        case mark: return "the node is marked for removal but still in the tree";
        case clean: break;
      }
      return nullptr;
    }
  };

  R reclaimer_;
  Internal* root_;  // key max, for ever; its right child is leaf max
  UserStats stats_;
};

static_assert(ConcurrentSet<EllenBst<reclaim::Archetype<>>>);

}  // namespace cdsb
