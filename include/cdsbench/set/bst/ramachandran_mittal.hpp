// The lock-free internal binary search tree of A. Ramachandran & N. Mittal, "A Fast Lock-Free
// Internal Binary Search Tree", ICDCN 2015 (and the authors' technical report of the same
// algorithm).
//
// Every node holds a key (an internal tree: no routing nodes); a key k goes left at a node
// when k < node.key, right when greater. Like Natarajan-Mittal (the authors' external tree),
// the algorithm marks *edges*, not nodes, and uses no operation descriptors: an update is
// announced by flags on the edges it will change, and the little that a helper needs (which
// node is being deleted, which node will replace its key) is in the tree itself. Each child
// edge is one word: a pointer, or a null edge, and two flag bits (none / inject / delete /
// promote):
//   inject  (on the edge *to* a node)  a delete of that node has started;
//   delete  (on both edges *of* the node being deleted)  they may not change any more, but
//           for one case: when the successor is N's right child, N's right edge is swung
//           from it to its right child (flag kept);
//   promote (on both edges of the successor node of a two-child delete)  its key is being
//           copied up and the node removed. On the successor's (null) left edge the word
//           also names the node being deleted, so a thread that meets the flag can help.
// The key word carries two bits of its own: `replaced` (the successor's key was copied in)
// and `ready` (the successor node is gone: the node may be replaced by a clean copy).
//
//   insert(k): seek the null edge where k belongs; CAS it (clean null -> new node).
//   delete(k): seek the node N holding k (edge P -> N). Injection: CAS P->N to inject|N (one
//     delete per node wins), then flag N's left and right edges delete. Then either
//     simple  (N has a null child and no copied key): CAS P->N from inject|N to N's other
//             child (or to null): N is gone;
//     complex (two children): discovery: find the successor S (leftmost node of N's right
//             subtree) and CAS its clean null left edge to promote|null(N) (this reserves S
//             and freezes the gap (N.key, S.key): no insert can land there any more); flag S's
//             right edge promote; CAS S's key into N (with `replaced`); CAS S out of the tree
//             (S's parent edge -> S's right child, or null); set `ready`. Cleanup: replace N
//             by a fresh copy with the new key and N's children, clean edges (CAS P->N from
//             inject|N to the copy): N, whose edges stay flagged for ever, is gone.
//   Every update that finds a flag in its way helps the operation that set it, then retries.
//
// Linearization points.
//   insert, true:     its CAS.         insert/delete/contains finding k: the read of a key
//                                      word holding k (see "contains" below).
//   delete, true:     simple: the cleanup CAS that unlinks N; complex: the CAS that writes the
//                     successor's key over k (from then on no node holds k: the copy holds
//                     the new key; S held a different key all along).
//   delete, false:    as contains, false.
//   contains, false:  a moment during the operation when k was absent (see below).
//   (A key read in a node already unlinked counts too: by F1 and F2 below, that node was in
//   the tree with that key at a moment of the walk.)
// Progress: every operation is lock-free. An update helps whatever flag blocks it; a helper
// can recurse (to help the delete that blocks the one it helps), at most as deep as the
// chain of deletes in progress one below the other along one path. contains never helps and
// never writes (it may restart, see below).
//
// ---- contains: a light traversal, and why it never misses a present key ----------------
// contains walks down from the root reading key words and child edges, remembering the
// *anchor*: the last node where it went right, and the key it read there (a walk that never
// went right has the root sentinel as anchor). A right turn onto a null edge counts: the walk
// may read N's key t and then N's right edge emptied by the removal of S = N's right child,
// after the key CAS; were the anchor an ancestor of N, its check would pass and s be missed.
// If it reads k it returns true. If it reaches a null edge it validates: if the anchor still
// holds the key read there and its right edge carries neither delete nor promote, it returns
// false; if the key is the same but the edge is flagged and the *previous* walk of this
// contains ended with the same anchor and key, it returns false too (the paper's rule, needed
// for lock-freedom: without it, a contains could restart for as long as a stalled delete keeps
// the anchor flagged); otherwise it walks again.
// Facts the argument uses:
//  (F1) Nodes are never re-linked; a node's edges are frozen once it is unlinked (every
//       unlinked node had both edges flagged first, and no CAS succeeds on a flagged edge of
//       an unlinked node). Hence a walk's reads form a sequence of states of in-tree nodes at
//       non-decreasing times, all after the walk began: the edge X->Y read at time r shows
//       X's edge at min(r, unlink time of X), when X was in the tree and so was Y.
//  (F2) A key word changes at most once (t -> s, with s the smallest key of the node's right
//       subtree, s > t), before the node is unlinked; keys move only *up*, from the
//       successor S to the node N being deleted, and in the tree the only interval that
//       shrinks is that of N's right subtree, from (t, hi) to (s, hi), which held no key
//       below s: the promote flag on S's null left edge has closed the gap (t, s) to inserts.
// So a present key k can be missed only when k itself moves up past the walk: k = s, and the
// walk read N's key t (< s, went right) before the key CAS but reached S's position after S
// was unlinked. The interleaving, with N having two children and S = min of N's right subtree:
//     contains(s)                              delete(t) (and its helpers)
//     reads N.key = t, goes right (anchor N, t)
//                                              S.left := promote|null(N); S.right flagged
//                                              N.key := s|replaced (CAS)
//                                              S's parent edge := S.right (S unlinked)
//     walks left down to where S was; null      (or, S being N's right child: reads N's right
//                                                edge, null; N is the anchor all the same)
//     validation reads N.key = s != t  -> walks again, and finds s in N (or in N's copy).
// Key s was present throughout (in S, then in N as well, then in N only); the first walk
// missed it, and the validation is what catches it: N is the walk's anchor, because below N
// the walk only went left, if anywhere (every node of N's right subtree that it can meet after
// the key CAS holds a key above s, by F1 and F2: the gap (t, s) is closed; a node B with a key
// in (t, s) where it turned right was unlinked before S was reserved, and then B, unlinked,
// with its right edge flagged, is the anchor and fails the check, and no later walk can end at
// B, by F1). Were N already replaced by its copy N' (N unlinked, key final) before the walk
// read N, N' is what the key moves into later: then the walk's anchor is the unlinked N with
// its right edge flagged delete for ever, which is why the flag is checked too.
// And the fallback: the second walk also ended at anchor A with the same key, so A was still
// in the tree at some time after the second walk began (F1), so during the whole first walk A
// was in the tree, never copied, and kept its key (F2: the key is the same at the end): none
// of the two ways above of missing a key can have happened in the first walk, whose "absent"
// is therefore a true observation made during this contains. (A walk can also end in the
// wrong subtree because a key changed from t to s with t < k < s between its read and the
// edge read; then k was absent when the key CAS happened, so "false" is still linearizable.)
// The update seek is the same walk with records, validation and fallback (the paper's seek).
//
// Our changes to the paper, each the safe reading of a detail:
//  - Null edges carry a stamp, not a node address. The paper keeps the address of the
//    unlinked node in the null edge left behind, so that a later insert's CAS from the null it
//    read fails once the edge has been filled and emptied again (ABA): emptied by a successor
//    removal, the slot may now cover a smaller interval, and the insert would break the order.
//    With memory reuse an address is no stamp: the node named by the null an insert read may
//    have been freed before the insert began, reused for a node inserted and promoted there,
//    and the edge would read the same again. So every removal that empties an edge writes a
//    fresh stamp, unique per thread and operation (a per-thread counter and the thread id);
//    fresh nodes start with stamp 0, which no removal writes. Only the promote-flagged null
//    left edge of a successor names a node (the node being deleted), as in the paper.
//  - The key CAS (paper: a plain write by every helper) and `ready` as a bit of the key word
//    (paper: a separate boolean): a late helper's plain write must not undo `ready`, and one
//    word keeps the node at 32 bytes.
//  - Finding the successor stops when N's right edge is already null (the successor was N's
//    right child and is gone); the paper follows the address left in the null edge instead.
//  - A helper meeting a promote flag checks that it names the node it works for; an inject
//    flag met on a failed injection is helped only if it is on the same node.
//  - delete returns as soon as its cleanup ran (won or lost): once injected, the parent edge
//    keeps inject|N until N is unlinked, so a failed cleanup CAS means a helper did it.
// Interleaving points (platform/interleave.hpp; tests/scripted/test_ramachandran_mittal_scripted.cpp):
//   rm.walk.key_read     a walk (contains, or an update's seek) read a node's key, not yet the
//                        edge it chose (the window of the "contains" interleaving above)
//   rm.erase.injected    a delete owns its node (inject and delete flags set), nothing else done
//   rm.erase.key_copied  a complex delete's key CAS done, the successor not yet unlinked
//
// Reclamation: each unlinked node is retired exactly once, by the thread whose CAS unlinked
// it: N by the winner of the cleanup CAS (simple or complex; a losing copy was never
// published and is freed at once), S by the winner of the CAS on S's parent edge. One CAS can
// succeed per node: it expects the edge to point to the node, nodes are never re-linked, and
// their memory is not reused while the CAS's thread is inside its guard. Why epochs suffice
// although walks run through unlinked nodes: every frozen pointer in an unlinked node points
// to a node unlinked no earlier than itself (N's children move up or to its copy; S's right
// child moves up; S's left names N, unlinked after S: N's cleanup waits for `ready`), so every
// node a thread reaches (or finds named) was in the tree at some time after its guard began
// (F1 above), hence retired after that. (Unlinking order, not retire order: the thread that
// unlinked S may call retire(S) after N's cleanup winner has retired N.)
// Reclaimers: none, ebr. Not hp and not ibr: walks (and helpers) follow frozen edges of
// unlinked nodes, where re-reading the link proves nothing; epochs need no such proof.
//
// Node layout, 32 bytes + the reclaimer's NodeBase: key word (key, `replaced`, `ready`), left,
// right (what a search reads, the flag bits in the edges' three low bits), then the value.
// No descriptors: the delete state lives on the stack of whichever thread runs or helps it.
// Sentinel: one node with key `inf` (2^(bits-2) - 1: the two top bits of the key word are the
// marks), never deleted; user keys are below it (max_key = inf - 1) and live in its left
// subtree.
//
// Memory orders. Every write to the tree is a CAS (or the `ready` fetch_or); every read an
// acquire load.
//  - Edge and key loads are acquire: they pair with the release of the CAS that wrote the
//    value, so a node reached through an edge is seen as initialised, and a flag or key seen
//    set brings the writes its writer made before (the key CAS before the unlinking CAS: a
//    thread that sees S gone, or N's right edge emptied, also sees N's new key).
//  - The insert CAS is release (publishes the node); relaxed on failure (the edge is re-read).
//  - Flag CASes, the key CAS and the unlinking CASes are acq_rel: release to publish (the
//    copy's fields; and to pass on what this thread saw: a helper's unlinking CAS carries the
//    key CAS it saw made by another helper), acquire because what they replace is followed
//    (a flag's target is helped). Failures are acquire where the value read is acted on.
//  - `ready` is a release fetch_or after the unlinking; readers see it with acquire loads.
//  On x86 every CAS is a locked instruction and every load a plain move whatever the order.
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
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/bst/detail/tree_depth.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class RamachandranMittalBst {
  // Searches read links with plain acquire loads, never protect() (why: see the top).
  static_assert(std::is_unsigned_v<Key> && std::atomic<Key>::is_always_lock_free,
                "the key word keeps two mark bits above the key");
  static_assert(std::is_trivially_copyable_v<Value> && std::atomic<Value>::is_always_lock_free,
                "the value moves up with its key, by an atomic store");
  struct Node;

  // A child edge: a node pointer, or a null edge holding a stamp (or, on a successor's
  // promote-flagged left edge, the node being deleted); bit 0 says null, bits 1-2 the flag.
  class Edge {
   public:
    static constexpr std::uintptr_t null_bit = 1, flag_mask = 6, payload_mask = ~std::uintptr_t{7};
    static constexpr std::uintptr_t none = 0, inject = 2, remove = 4, promote = 6;  // the flags

    constexpr Edge() noexcept = default;
    static Edge to(Node* n, std::uintptr_t flag = none) noexcept {
      return Edge(reinterpret_cast<std::uintptr_t>(n) | flag);
    }
    static Edge null_stamp(std::uint64_t stamp) noexcept { return Edge(static_cast<std::uintptr_t>(stamp) << 3 | null_bit); }
    static Edge null_naming(Node* n, std::uintptr_t flag) noexcept { return Edge(to(n).bits_ | null_bit | flag); }
    bool is_null() const noexcept { return (bits_ & null_bit) != 0; }
    std::uintptr_t flag() const noexcept { return bits_ & flag_mask; }
    bool frozen() const noexcept { return flag() == remove || flag() == promote; }
    Node* node() const noexcept { return reinterpret_cast<Node*>(bits_ & payload_mask); }
    Edge with(std::uintptr_t flag) const noexcept { return Edge((bits_ & ~flag_mask) | flag); }
    friend bool operator==(Edge a, Edge b) noexcept { return a.bits_ == b.bits_; }

   private:
    explicit constexpr Edge(std::uintptr_t bits) noexcept : bits_(bits) {}
    std::uintptr_t bits_ = null_bit;  // a null edge, stamp 0
  };
  using Link = std::atomic<Edge>;
  static constexpr int left = 0, right = 1;

  struct Node : R::NodeBase {
    Node(Key k, Value v) : key(k), value(v) {}
    Node(Key k, Value v, Edge l, Edge r) : key(k), child{l, r}, value(v) {}
    std::atomic<Key> key;  // | replaced_bit once the successor's key is copied in, | ready_bit
    Link child[2];         // once the successor is unlinked
    std::atomic<Value> value;
  };
  static_assert(alignof(Node) >= 8, "an edge keeps three bits in the pointer");

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Node);

 private:
  static constexpr Key replaced_bit = Key{1} << (std::numeric_limits<Key>::digits - 1);
  static constexpr Key ready_bit = replaced_bit >> 1;
  static constexpr Key key_mask = ready_bit - 1;
  static constexpr Key inf = key_mask;  // the sentinel's key

 public:
  static constexpr Key max_key = inf - 1;

  explicit RamachandranMittalBst(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options),
        max_threads_(max_threads),
        stamps_(static_cast<std::size_t>(max_threads)),
        stats_(max_threads, {{"seek_restarts", StatKind::counter},
                             {"update_restarts", StatKind::counter},
                             {"helps", StatKind::counter},
                             {"promotions", StatKind::counter}}) {
    root_ = reclaimer_.template allocate<Node>(0, inf, Value{});
  }

  RamachandranMittalBst(const RamachandranMittalBst&) = delete;
  RamachandranMittalBst& operator=(const RamachandranMittalBst&) = delete;

  // Quiescent: every unlinked node was retired (the reclaimer frees those); the tree's own
  // nodes are freed here.
  ~RamachandranMittalBst() {
    visit([&](Node* n) { reclaimer_.deallocate(0, n); });
  }

  // Linearizable (at its CAS, or when the seek read k in a key word); lock-free.
  // Reclaimers: none, ebr.
  bool insert(int tid, Key key, Value value) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    Node* fresh = nullptr;  // kept across attempts
    for (;;) {
      SeekRecord rec;
      seek(tid, key, rec);
      if (rec.found) {
        if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
        return false;
      }
      Node* node = rec.last.child;
      if (rec.slot.flag() == Edge::none) {
        if (!fresh) fresh = reclaimer_.template allocate<Node>(tid, key, value);
        Edge expected = rec.slot;  // the clean null (its stamp) the seek read
        // release: publishes the node. The stamp makes the CAS fail if the edge was filled and
        // emptied since (see the top).
        if (node->child[rec.slot_dir].compare_exchange_strong(expected, Edge::to(fresh), std::memory_order_release,
                                                              std::memory_order_relaxed))
          return true;
      }
      stats_.add(tid, update_restarts);
      // The node is being deleted (its edges flagged delete) or promoted: help, then retry.
      const Edge now = node->child[rec.slot_dir].load(std::memory_order_acquire);
      if (CDSB_MUTANT("rm.insert_skips_help")) continue;  // seeded bug: retries until the flag goes
      if (now.flag() == Edge::remove) help_target(tid, rec.last);
      else if (now.flag() == Edge::promote) help_successor(tid, rec.last);
    }
  }

  // Linearizable (simple: the cleanup CAS that unlinks the node; complex: the CAS that copies
  // the successor's key over the key; false: as contains); lock-free. Reclaimers: none, ebr.
  bool erase(int tid, Key key) {
    assert(key <= max_key);
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      SeekRecord rec;
      seek(tid, key, rec);
      if (!rec.found) return false;
      DeleteState st;
      st.target = rec.last;
      st.ptarget = rec.prev;
      if (inject(tid, st)) {
        // Ours: the parent edge holds inject|N until N is unlinked, by us or a helper.
        CDSB_INTERLEAVE("rm.erase.injected");
        finish(tid, st);
        return true;
      }
      stats_.add(tid, update_restarts);
    }
  }

  // Linearizable (true: when it read k in a key word; false: see the top, "contains");
  // lock-free; never writes, never helps (it may walk again). Reclaimers: none, ebr.
  bool contains(int tid, Key key) {
    if (key > max_key) return false;  // the sentinel's key or above, never a user key
    auto guard = reclaimer_.enter(tid);
    Node* last_anchor = nullptr;  // the previous walk's anchor and the key it read there
    Key last_anchor_key{};
    for (;;) {
      Node* curr = root_;
      Node* anchor = root_;
      Key anchor_key = inf;
      for (;;) {
        const Key k = curr->key.load(std::memory_order_acquire) & key_mask;
        if (k == key) return true;
        const int dir = key < k ? left : right;
        CDSB_INTERLEAVE("rm.walk.key_read");
        const Edge e = curr->child[dir].load(std::memory_order_acquire);
        // seeded bug: only right turns onto a node count
        if (dir == right && !(e.is_null() && CDSB_MUTANT("rm.null_right_turn_not_anchor"))) {
          // Before the null test: a right turn onto a null edge is the anchor too (see the top:
          // N's right edge emptied by its successor's removal).
          anchor = curr;
          anchor_key = k;
        }
        if (e.is_null()) break;
        curr = e.node();
      }
      if ((anchor->key.load(std::memory_order_acquire) & key_mask) == anchor_key) {
        if (!anchor->child[right].load(std::memory_order_acquire).frozen()) return false;
        if (anchor == last_anchor && anchor_key == last_anchor_key) return false;  // the fallback
      }
      stats_.add(tid, seek_restarts);
      last_anchor = anchor;
      last_anchor_key = anchor_key;
    }
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  // The keys in increasing order.
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    std::vector<Node*> stack;
    Node* n = child_of(root_, left);
    while (n || !stack.empty()) {
      for (; n; n = child_of(n, left)) stack.push_back(n);
      n = stack.back();
      stack.pop_back();
      fn(n->key.load(std::memory_order_acquire) & key_mask);
      n = child_of(n, right);
    }
  }

  // Each key with the nodes a search for it reads, the sentinel included (quiescent).
  template <class Fn>
  void for_each_key_depth(Fn&& fn) const {
    detail::visit_with_depth(root_, [](Node* n) { return std::array<Node*, 2>{child_of(n, left), child_of(n, right)}; },
                             [&](Node* n, std::size_t depth) {
                               if (n != root_) fn(n->key.load(std::memory_order_acquire) & key_mask, depth);
                             });
  }

  // Internal-tree order (every key strictly inside the interval its position allows: no key
  // twice), no flag on any edge (pointer or null) and no replaced/ready bit on any key at
  // quiescence (every delete finished, every copy clean), and the sentinel intact (its key,
  // an empty right edge).
  std::string check_invariants() const {
    if (root_->key.load(std::memory_order_acquire) != inf) return "the sentinel's key changed";
    if (!root_->child[right].load(std::memory_order_acquire).is_null()) return "the sentinel has a right child";
    struct Item {
      Node* node;
      bool has_lo;
      Key lo, hi;  // the subtree's keys lie in (lo, hi)
    };
    std::vector<Item> stack;
    for (int d : {left, right}) {
      const Edge e = root_->child[d].load(std::memory_order_acquire);
      if (e.flag() != Edge::none) return "a flag remains on the sentinel's edges";
    }
    if (Node* top = child_of(root_, left)) stack.push_back({top, false, Key{}, inf});
    while (!stack.empty()) {
      const Item it = stack.back();
      stack.pop_back();
      const Key word = it.node->key.load(std::memory_order_acquire);
      const Key k = word & key_mask;
      if (word != k) return "key " + std::to_string(k) + ": a replaced or ready mark remains";
      if ((it.has_lo && !(it.lo < k)) || !(k < it.hi))
        return "key " + std::to_string(k) + " lies outside its subtree's interval (" +
               (it.has_lo ? std::to_string(it.lo) : std::string("-inf")) + ", " + std::to_string(it.hi) + ")";
      for (int d : {left, right}) {
        const Edge e = it.node->child[d].load(std::memory_order_acquire);
        if (e.flag() != Edge::none) return "key " + std::to_string(k) + ": a flag remains on an edge";
        if (e.is_null()) continue;
        if (d == left) stack.push_back({e.node(), it.has_lo, it.lo, k});
        else stack.push_back({e.node(), true, k, it.hi});
      }
    }
    return {};
  }

  // Nodes reachable from the root, the sentinel included (quiescent).
  std::size_t node_count() const {
    std::size_t n = 0;
    visit([&](Node*) { ++n; });
    return n;
  }

  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat { seek_restarts, update_restarts, helps, promotions };

  // An edge a walk crossed: parent -> child, in direction dir.
  struct EdgeRef {
    Node* parent = nullptr;
    Node* child = nullptr;
    int dir = left;
  };
  struct SeekRecord {
    EdgeRef last;       // the edge into the node where the walk stopped (holding the key, or
    EdgeRef prev;       // with the null edge `slot`); prev: the edge into last.parent
    Edge slot;          // not found: the null edge read, in direction slot_dir
    int slot_dir = left;
    bool found = false;
  };
  enum class Mode { injection, discovery, cleanup };
  // What one thread knows of one delete (its own or one it helps): on its stack, never shared.
  struct DeleteState {
    EdgeRef target;   // P -> N, the node being deleted
    EdgeRef ptarget;  // the edge into P (injection only: to help P's own delete)
    EdgeRef succ;     // the successor S (the leftmost node of N's right subtree) and the edge
    EdgeRef psucc;    // into it; psucc: the edge into S's parent
    Mode mode = Mode::injection;
    bool simple = false;
  };

  static Key key_of(const Node* n) { return n->key.load(std::memory_order_acquire) & key_mask; }
  static Node* child_of(const Node* n, int d) {
    const Edge e = n->child[d].load(std::memory_order_acquire);
    return e.is_null() ? nullptr : e.node();
  }

  // A null edge with a stamp no other removal ever writes (see the top).
  Edge fresh_null(int tid) {
    const std::uint64_t n = ++*stamps_[static_cast<std::size_t>(tid)];
    return Edge::null_stamp(n * static_cast<std::uint64_t>(max_threads_) + static_cast<std::uint64_t>(tid));
  }

  // The paper's seek: the walk of contains, with records (see the top for the validation).
  void seek(int tid, Key key, SeekRecord& rec) {
    SeekRecord last_rec;
    Node* last_anchor = nullptr;
    Key last_anchor_key{};
    for (;;) {
      EdgeRef prev{nullptr, root_, left}, last{nullptr, root_, left};
      Node* curr = root_;
      Node* anchor = root_;
      Key anchor_key = inf;
      for (;;) {
        const Key k = curr->key.load(std::memory_order_acquire) & key_mask;
        if (k == key) {
          rec = {last, prev, Edge(), left, true};
          return;
        }
        const int dir = key < k ? left : right;
        CDSB_INTERLEAVE("rm.walk.key_read");
        const Edge e = curr->child[dir].load(std::memory_order_acquire);
        if (dir == right) {  // a right turn onto a null edge included, as in contains
          anchor = curr;
          anchor_key = k;
        }
        if (e.is_null()) {
          rec = {last, prev, e, dir, false};
          break;
        }
        prev = last;
        last = {curr, e.node(), dir};
        curr = e.node();
      }
      if ((anchor->key.load(std::memory_order_acquire) & key_mask) == anchor_key) {
        if (!anchor->child[right].load(std::memory_order_acquire).frozen()) return;
        if (anchor == last_anchor && anchor_key == last_anchor_key) {
          rec = last_rec;  // the fallback
          return;
        }
      }
      stats_.add(tid, seek_restarts);
      last_rec = rec;
      last_anchor = anchor;
      last_anchor_key = anchor_key;
    }
  }

  // Injection of a delete: inject|N on the parent edge, then N's edges flagged delete. True
  // iff this delete now owns N (and st's mode is set); false: retry from a new seek (having
  // helped whatever was in the way).
  bool inject(int tid, DeleteState& st) {
    Node* p = st.target.parent;
    Node* n = st.target.child;
    Edge expected = Edge::to(n);
    // acq_rel / acquire: see the header; failing, we act on the flag we read.
    if (!p->child[st.target.dir].compare_exchange_strong(expected, Edge::to(n, Edge::inject), std::memory_order_acq_rel,
                                                          std::memory_order_acquire)) {
      if (expected.flag() == Edge::inject && !expected.is_null() && expected.node() == n) {
        help_target(tid, st.target);  // another delete of N got there first
      } else if (expected.flag() == Edge::remove) {
        help_target(tid, st.ptarget);  // P itself is being deleted
      } else if (expected.flag() == Edge::promote) {
        help_successor(tid, st.ptarget);  // P is a successor being promoted
      }
      return false;
    }
    // Flag the left edge first: a successor is reserved by its left edge, so N is either ours
    // (delete) or a successor (promote), never both.
    if (!mark_child_edge(tid, st, left, Edge::remove)) return false;  // N is being promoted:
    mark_child_edge(tid, st, right, Edge::remove);  // our inject flag will go with it; retry
    init_mode(st);
    return true;
  }

  // Flags the edge of N (flag remove) or of S (flag promote) in direction dir; helps the
  // delete of the child first if the edge carries inject. False if the node turned out to be
  // taken by the other kind of operation (which this thread then helped).
  bool mark_child_edge(int tid, DeleteState& st, int dir, std::uintptr_t flag) {
    const EdgeRef& into = flag == Edge::remove ? st.target : st.succ;
    Node* node = into.child;
    Edge e = node->child[dir].load(std::memory_order_acquire);
    for (;;) {
      switch (e.flag()) {
        case Edge::inject:
          help_target(tid, {node, e.node(), dir});
          e = node->child[dir].load(std::memory_order_acquire);
          continue;
        case Edge::remove:
          if (flag == Edge::remove) return true;
          help_target(tid, into);
          return false;
        case Edge::promote:
          if (flag == Edge::promote) return true;
          help_successor(tid, into);
          return false;
        default:
          // acq_rel: see the header. Failing, e is reloaded (acquire: its flag is acted on).
          if (node->child[dir].compare_exchange_weak(e, e.with(flag), std::memory_order_acq_rel,
                                                     std::memory_order_acquire))
            return true;
      }
    }
  }

  // Both edges of N are flagged: simple (a null child, no copied key) or complex. Edges before
  // the key: an edge seen emptied by the successor's removal implies the key CAS is visible.
  void init_mode(DeleteState& st) {
    Node* n = st.target.child;
    const bool has_null = n->child[left].load(std::memory_order_acquire).is_null() ||
                          n->child[right].load(std::memory_order_acquire).is_null();
    st.simple = has_null && !(n->key.load(std::memory_order_acquire) & replaced_bit);
    update_mode(st);
  }

  static void update_mode(DeleteState& st) {
    if (st.simple || (st.target.child->key.load(std::memory_order_acquire) & ready_bit)) st.mode = Mode::cleanup;
    else st.mode = Mode::discovery;
  }

  // Runs a delete whose node's edges are both flagged to its end. True iff our CAS unlinked N.
  bool finish(int tid, DeleteState& st) {
    while (st.mode == Mode::discovery) {
      find_and_mark_successor(tid, st);
      if (st.mode == Mode::discovery) remove_successor(tid, st);
    }
    return cleanup(tid, st);
  }

  // A delete whose inject flag is on `edge` (the edge into the node): flag, promote, clean up.
  void help_target(int tid, const EdgeRef& edge) {
    assert(edge.parent);  // the sentinel is never deleted
    stats_.add(tid, helps);
    DeleteState st;
    st.target = edge;
    if (!mark_child_edge(tid, st, left, Edge::remove)) return;
    mark_child_edge(tid, st, right, Edge::remove);
    init_mode(st);
    finish(tid, st);
  }

  // A successor (promote on its edges): finish its promotion for the node its left edge names.
  void help_successor(int tid, const EdgeRef& edge) {
    if (CDSB_MUTANT("rm.help_skips_promotion")) return;  // seeded bug: waits for the promoter
    const Edge l = edge.child->child[left].load(std::memory_order_acquire);
    if (!l.is_null() || l.flag() != Edge::promote) return;  // not (yet) reserved: nothing to help
    stats_.add(tid, helps);
    DeleteState st;
    st.target = {nullptr, l.node(), left};  // the parent is only needed by cleanup, not run here
    st.mode = Mode::discovery;
    remove_successor(tid, st);
  }

  // The leftmost node of N's right subtree, into st.succ and st.psucc. False if N's right edge
  // is null: then the successor was N's right child and is already unlinked.
  static bool find_smallest(DeleteState& st) {
    Node* n = st.target.child;
    const Edge r = n->child[right].load(std::memory_order_acquire);
    if (r.is_null()) return false;
    st.succ = {n, r.node(), right};
    st.psucc = st.succ;
    for (;;) {
      const Edge l = st.succ.child->child[left].load(std::memory_order_acquire);
      if (l.is_null()) return true;
      st.psucc = st.succ;
      st.succ = {st.succ.child, l.node(), left};
    }
  }

  // Discovery: reserve the successor S (its clean null left edge -> promote|null(N)).
  void find_and_mark_successor(int tid, DeleteState& st) {
    Node* n = st.target.child;
    for (;;) {
      const bool replaced = n->key.load(std::memory_order_acquire) & replaced_bit;
      if (!find_smallest(st) || replaced) break;  // reserved (and promoted) already
      Node* s = st.succ.child;
      Edge l = s->child[left].load(std::memory_order_acquire);
      if (!l.is_null()) continue;  // S gained a left child: look again
      if (l.flag() == Edge::promote) {
        if (l.node() == n) break;  // reserved for N by another helper
        continue;                  // a stale view (S was reserved and unlinked): look again
      }
      // Re-read after S's edge: if the key was copied meanwhile, S may be a later leftmost node.
      if (n->key.load(std::memory_order_acquire) & replaced_bit) continue;
      if (l.flag() == Edge::remove) {  // S is being deleted: help it out of the way
        help_target(tid, st.succ);
        continue;
      }
      // acq_rel: see the header. Failing: look again (the loop re-reads everything).
      if (s->child[left].compare_exchange_strong(l, Edge::null_naming(n, Edge::promote), std::memory_order_acq_rel,
                                                 std::memory_order_acquire))
        break;
    }
    update_mode(st);
  }

  // Discovery: promote the reserved successor S: freeze its right edge, copy its key (and
  // value) into N, unlink it, set `ready`. Idempotent: any number of helpers may run it.
  void remove_successor(int tid, DeleteState& st) {
    Node* n = st.target.child;
    if (!find_smallest(st)) return set_ready(st);
    Node* s = st.succ.child;
    const Edge l = s->child[left].load(std::memory_order_acquire);
    // The reserved successor stays the leftmost node until it is unlinked (its left edge is
    // closed): if the leftmost node is not reserved for N, S is gone already.
    if (!l.is_null() || l.flag() != Edge::promote || l.node() != n) return set_ready(st);
    if (!mark_child_edge(tid, st, right, Edge::promote)) return;  // cannot happen: S's left
                                                                   // edge is ours
    Key old = n->key.load(std::memory_order_acquire);
    if (!(old & replaced_bit)) {
      // Every helper stores the same value (S's, never changed: S is no complex delete's node).
      n->value.store(s->value.load(std::memory_order_relaxed), std::memory_order_relaxed);
      // The complex delete's linearization point. acq_rel; failing (acquire), another helper
      // did it, and our unlinking CAS below carries its write on.
      if (n->key.compare_exchange_strong(old, key_of(s) | replaced_bit, std::memory_order_acq_rel,
                                         std::memory_order_acquire))
        stats_.add(tid, promotions);
    }
    CDSB_INTERLEAVE("rm.erase.key_copied");
    for (;;) {
      Node* sp = st.succ.parent;
      const bool dflag = sp == n;  // S is N's right child: N's (delete-flagged) right edge
      const int which = dflag ? right : left;
      Edge cur = sp->child[which].load(std::memory_order_acquire);
      const auto points_to_s = [&] { return !cur.is_null() && cur.node() == s; };
      if (points_to_s() &&
          (dflag ? cur.flag() == Edge::remove : cur.flag() == Edge::none || cur.flag() == Edge::inject)) {
        const Edge r = s->child[right].load(std::memory_order_acquire);  // flagged: frozen
        Edge repl = r.is_null() ? fresh_null(tid) : Edge::to(r.node());
        if (dflag) repl = repl.with(Edge::remove);
        // acq_rel: see the header. An inject flag on the edge (a delete of S's key that found
        // S before the promotion) goes with S: that delete will find the key in N and retry.
        if (sp->child[which].compare_exchange_strong(cur, repl, std::memory_order_acq_rel, std::memory_order_acquire)) {
          reclaimer_.retire(tid, s);  // our CAS unlinked S
          break;
        }
      }
      if (dflag) break;  // N's right edge no longer points to S: a helper unlinked it
      // S's parent is being deleted: help it (S then hangs from its grandparent or a copy).
      if (points_to_s() && cur.flag() == Edge::remove) help_target(tid, st.psucc);
      if (!find_smallest(st) || st.succ.child != s) break;  // S is gone
    }
    set_ready(st);
  }

  // The successor is unlinked: N may be replaced by its copy.
  void set_ready(DeleteState& st) {
    // release: with the key CAS before it; relaxed would do for the bit alone.
    st.target.child->key.fetch_or(ready_bit, std::memory_order_release);
    update_mode(st);
  }

  // Unlinks N: simple, its parent edge goes to N's child (or a fresh null); complex, to a
  // clean copy of N with the new key. True iff our CAS did it (and we retired N).
  bool cleanup(int tid, DeleteState& st) {
    Node* p = st.target.parent;
    Node* n = st.target.child;
    assert(p && st.mode == Mode::cleanup);
    assert(st.simple || (n->key.load(std::memory_order_acquire) & replaced_bit));
    const Edge l = n->child[left].load(std::memory_order_acquire);
    const Edge r = n->child[right].load(std::memory_order_acquire);
    Edge expected = Edge::to(n, Edge::inject);
    if (st.simple) {
      const Edge c = l.is_null() ? r : l;
      const Edge repl = c.is_null() ? fresh_null(tid) : Edge::to(c.node());
      // acq_rel: see the header. The simple delete's linearization point.
      if (!p->child[st.target.dir].compare_exchange_strong(expected, repl, std::memory_order_acq_rel,
                                                           std::memory_order_relaxed))
        return false;
    } else {
      Node* copy = reclaimer_.template allocate<Node>(
          tid, key_of(n), n->value.load(std::memory_order_relaxed), l.is_null() ? Edge() : Edge::to(l.node()),
          r.is_null() ? Edge() : Edge::to(r.node()));
      // acq_rel: publishes the copy (release); see the header.
      if (!p->child[st.target.dir].compare_exchange_strong(expected, Edge::to(copy), std::memory_order_acq_rel,
                                                           std::memory_order_relaxed)) {
        reclaimer_.deallocate(tid, copy);  // never published
        return false;
      }
    }
    reclaimer_.retire(tid, n);
    return true;
  }

  // Every node reachable from the root (quiescent); a node's children are read before fn.
  template <class Fn>
  void visit(Fn&& fn) const {
    std::vector<Node*> stack{root_};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (int d : {left, right})
        if (Node* c = child_of(n, d)) stack.push_back(c);
      fn(n);
    }
  }

  R reclaimer_;
  const int max_threads_;
  std::vector<Padded<std::uint64_t>> stamps_;  // per thread: the last stamp's counter
  Node* root_;  // the sentinel, key inf; user keys in its left subtree
  UserStats stats_;
};

static_assert(ConcurrentSet<RamachandranMittalBst<reclaim::Archetype<>>>);

}  // namespace cdsb
