// The lock-free internal binary search tree of S. V. Howley & J. Jones, "A non-blocking
// internal binary search tree", SPAA 2012.
//
// Every node holds a key (internal tree: no leaves, no routing nodes). A sentinel root with
// the smallest key keeps the whole set in its right subtree. Each node has an `op` word: a
// 2-bit state and a payload.
//   NONE      no update in progress (payload: a version, see below)
//   MARK      the node is logically deleted and about to be excised (permanent)
//   CHILDCAS  a ChildCASOp is changing one of the node's child links (payload: the op)
//   RELOCATE  the node takes part in a relocation (payload: the RelocateOp)
// A child link changes only while its node is flagged CHILDCAS, by that ChildCASOp, and every
// CAS on an op word expects the value its operation's search read, so an update acts on the
// state its search saw; a thread that finds a flag in its way helps that update to its end.
//   insert(k): search; flag the parent of the null link where k belongs with a ChildCASOp
//     (null -> new node); do the child CAS; unflag (NONE).
//   erase(k), node with < 2 children: MARK it (the linearization point), then excise it: flag
//     its parent with a ChildCASOp (node -> its only child, or a null), child CAS, unflag.
//   erase(k), node `dest` with 2 children: find its successor `replace` (leftmost of the right
//     subtree, no left child), flag it RELOCATE with a RelocateOp (dest, dest's op as read,
//     k, replace's key s), then install the same op on dest (the paper's VCAS, from the
//     value read). state ONGOING -> SUCCESSFUL if that worked, FAILED if dest's op had moved
//     on (then replace is unflagged and the erase starts over). SUCCESSFUL: CAS dest's key
//     k -> s (the linearization point: k leaves the set, s is now held twice), unflag dest,
//     MARK replace, excise replace as above.
//
// Our changes to the paper, all for memory reclamation (the paper assumes a garbage collector):
//  1. Versions instead of pointer stamps. The paper leaves a finished op's pointer in a NONE
//     (or MARK) word, so that a CAS expecting a value its search read fails once anything
//     happened to the node, and it writes `curr | 1` as the null that replaces an excised
//     leaf, so that a late helper's child CAS cannot reinsert a node (ABA on null). Under
//     reclamation both stamps name memory that may be freed and reused at the same address,
//     which brings the ABA back. Here a NONE word carries a version and a null link a stamp,
//     both drawn from per-thread counters ((counter << thread bits) | tid): unique for the
//     life of the tree, so a NONE value or a null never comes back to any word. A RelocateOp
//     carries the NONE version dest gets when it is unflagged (the paper's "predOp =
//     FLAG(op, NONE)" needs it predicted); every other NONE value is drawn by the thread whose
//     CAS writes it. A MARK word carries only a bit saying whether a relocation set it.
//  2. A fourth relocation state, DONE: SUCCESSFUL -> DONE after the key CAS, before dest is
//     unflagged. A thread that found the op in *replace's* op word may touch dest only while
//     dest cannot have been freed: it reads SUCCESSFUL (then dest's unflag, hence its
//     excision, comes later), or it found dest itself by a traversal inside its guard (below).
//     A thread that reads DONE there leaves dest alone (dest may already be excised and
//     freed: its unflag is done or under way by a thread that may touch it).
//  3. The paper's replace-side helpers VCAS dest's op in state ONGOING, but dest may be long
//     gone then (its op moved on and it was excised before the helper started: the
//     relocation will fail, but nobody has said so yet). Such a helper first walks from the
//     root towards the key being removed (`reaches`): if it meets dest's address, that node
//     is alive for its whole guard, and since dest's op value is unique to that node's
//     incarnation, the VCAS cannot succeed on a reused address. If it does not meet dest,
//     dest was not in the tree unmarked, with its key and that op value, at some point after
//     the op was published, so the op can never be installed on dest, and FAILED is right
//     (if it was installed and the key moved, the state is SUCCESSFUL and the CAS to FAILED
//     fails). This keeps the paper's rule: FAILED only when installing on dest is impossible,
//     so the op is in dest's op word iff the state reaches SUCCESSFUL.
//  4. An erase returns only once its node is excised (the paper may leave a marked node for a
//     later search to excise when the excising CAS fails): if its own attempt fails it walks
//     from the root helping until the node is gone (`excise`). No marked node is reachable at
//     quiescence, and check_invariants says so.
//
// contains is a light traversal, not the paper's find: no helping, no restart on flags, no
// writes. It loads each node's op word (acquire) before its key, remembers the last node where
// it turned right (lastRight) with that op word, and:
//   - finds k at node X: re-reads X's op. NONE or CHILDCAS, or RELOCATE with X the op's dest
//     -> true: X held k, unmarked and in the tree, when its key was read (an excised node was
//     marked first and MARK is permanent), and X was not a relocation's replace whose key had
//     already been copied up (such a node only leaves RELOCATE for MARK). MARK set by an erase
//     -> false: if X's key moved on from k after our read, k left the set at that key CAS,
//     during our run; otherwise X held k when marked and k left the set at the MARK: during our
//     run, or before it, and then k was still absent when we began, as X was in the tree at
//     some point of our run (we reached it) and k cannot return while X is on k's path (an
//     insert's search helps excise X first). RELOCATE with X the op's replace, or MARK set by
//     a relocation: X's key may be a stale copy (the key moved up to dest, and may since have
//     been erased there), undecidable here: the paper's find decides.
//   - reaches a null: the only way a key leaves the subtree a search is in is a relocation
//     into an ancestor where the search turned right (keys move up from replace to dest; an
//     excision only moves a subtree up whole), and such an ancestor is the last right turn
//     (every other node between dest and replace has a key above s, or is a stale replace
//     whose MARK or RELOCATE word sends us to the fallback). That relocation changes
//     dest's op word before the key moves, so: lastRight's op unchanged and NONE or CHILDCAS
//     (neither MARK, nor RELOCATE: a RELOCATE word stays the same while the key CAS happens)
//     -> false, linearized at the null read, as the paper's find; otherwise the paper's find
//     (with helping) decides. The fallback is rare (counted as contains_slow_paths).
//
// Reclamation (ebr, none), each object retired exactly once, by the thread whose CAS took it
// out of the last op word that could hold it:
//  - ChildCASOp: in exactly one op word (its node's) from its flag CAS to its unflag CAS;
//    the unflag winner retires it (one winner; the child CAS, by someone, came first).
//  - The excised node: unlinked by exactly one ChildCASOp's child CAS (one op per excision can
//    be installed: its parent's op value changes with it); that op's unflag winner retires it.
//  - RelocateOp: in replace's op word from the flag CAS to replace's exit CAS (MARK or NONE),
//    and, iff the state became SUCCESSFUL, in dest's from the VCAS to dest's unflag. FAILED:
//    the replace-exit winner retires it. DONE: both exit winners decrement `exits_left`; the
//    one that reaches 0 retires it (the two exits race: DONE precedes dest's unflag).
//  - Never-published objects (a flag CAS that failed, an insert that found its key) are
//    deallocated at once.
// Why that is safe with epochs: every thread that dereferences a descriptor read it from an op
// word before it left that word (or created it), so inside a guard that began before the
// retirement. Nodes named in a descriptor: a ChildCASOp's node is the one whose op word held
// it (reached by traversal); its expected/update nodes are only compared and stored; a
// RelocateOp's dest is touched only by the erase that created the op (it found dest inside
// its guard), by threads that read the op in dest's own op word, and under changes 2 and 3. A node is
// retired after it is unlinked; a traversal inside a guard reaches only nodes that were in the
// tree at some point of that guard (an excised node's links are frozen by its MARK), so never
// one retired before the guard began. Descriptor pointers inside op values that a thread keeps
// (pred_op, lastRight's op) were read inside its guard: the descriptor, and so the value,
// cannot be reused while it runs.
//
// Node layout, 32 bytes (+ the reclaimer's NodeBase, empty for ebr and none): key, op, left,
// right: all four are what a search reads (op, key, then a child), in one 32-byte block. No
// value field: this is a set, as in the paper (a value would have to move with the key in a
// relocation); insert's value argument is accepted and dropped. A null child is a stamp with
// the low bit set. Sentinel: the root, key numeric_limits<Key>::min(); user keys must be above
// it (1 .. max for uint64_t).
// Descriptors: ChildCASOp 16 bytes (the expected link with the side in bit 1, the new link),
// RelocateOp 48 bytes (state, exits_left, dest, dest's op as read, dest's NONE version after
// the unflag, the two keys). The BST study traced a 40% loss to descriptors sharing a size
// class (and so pages and cache lines) with nodes. Both remedies hold here:
//  - the segregated allocator (and segregated_pool) gives every type allocated through the
//    reclaimer's allocate<T> its own arena, and nodes and both descriptors are allocated so;
//  - with the system allocator the sizes themselves land in different bins: glibc malloc
//    chunks (request + 8, rounded up to 16, at least 32): node 48, ChildCASOp 32, RelocateOp
//    64; jemalloc's size classes (8, then 16-byte steps up to 128): node 32, ChildCASOp 16,
//    RelocateOp 48. Static asserts below check both.
//
// Reclaimers: none, ebr. Not hp and not ibr: searches pass through marked and excised nodes
// (whose frozen links make re-reading a link prove nothing), helpers act on nodes named in
// descriptors long after reading them, and a relocation's dest is found again by address;
// none of that can be validated per pointer. Epochs need no per-pointer proof.
//
// Progress: insert and erase are lock-free (a failed CAS means another operation changed the
// word; every restart follows a change or a help). contains is lock-free: one pass with no
// restarts, or the paper's find, which restarts only after helping.
//
// Memory orders. On x86 a CAS is a locked instruction and a load a plain move whatever the
// order; the orders below are what the C++ model needs.
//  - Loads of op words, keys and links are acquire. op words: pair with the release CAS that
//    installed a descriptor (its fields are then visible) or unflagged one (the child or key
//    change it finished is then visible). Links: pair with the release child CAS, so a new
//    node's fields are visible. Keys: pair with the release key CAS (below), and keep the loads
//    after it (a child, or the op re-read that validates it) from being hoisted above it.
//  - Flag CASes (CHILDCAS, RELOCATE, the VCAS on dest) and MARK: release on success (publish
//    the descriptor, or pass on what this thread read, to helpers), relaxed on failure (the
//    value read is only compared; the operation searches again) except the VCAS, acquire
//    (the value read decides the state).
//  - Child CAS: release (publishes the new node or passes on the moved-up child); relaxed on
//    failure: then another helper did it, and our later unflag (release) still orders our
//    failed read, which read its value, before any reader of the NONE word (coherence).
//  - Unflag and replace-exit CASes: release (readers of the new word see the finished
//    change); relaxed on failure (another helper did it).
//  - State CASes: acq_rel / acquire: the state read decides what a helper may touch; DONE is
//    released after the key CAS, so a reader of DONE sees dest's new key.
//  - The key CAS: release on success. The DONE CAS and dest's unflag (release) publish the new
//    key to readers of those words, but contains, find, reaches and excise read the key without
//    them: they load a node's op word, then its key, then (contains, find) the op word again
//    and trust the key if the word is unchanged. With a relaxed key CAS the C++ model lets a
//    reader take the new key and still read dest's op word from before the VCAS twice; with
//    release, reading the new key (acquire) makes the VCAS, which happens before the key CAS
//    (the key CAS thread read SUCCESSFUL), visible to the later op load. Free on x86 (a locked
//    instruction either way).
//  - exits_left: acq_rel, so the thread that retires the op follows every exit.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/bst/detail/tree_depth.hpp"

namespace cdsb {

namespace detail::howley_jones {
// glibc malloc's chunk for a request of n bytes (64-bit): n + 8 bytes of header, rounded up to
// 16, at least 32. Objects in different chunk sizes never share a bin (nor a tcache list).
constexpr std::size_t glibc_chunk(std::size_t n) { return n + 8 <= 32 ? 32 : (n + 8 + 15) / 16 * 16; }
// jemalloc's small size classes: 8, then 16-byte steps up to 128.
constexpr std::size_t jemalloc_class(std::size_t n) { return n <= 8 ? 8 : (n + 15) / 16 * 16; }
}  // namespace detail::howley_jones

template <reclaim::WholeOperationReclaimer R, class Key = std::uint64_t, class Value = std::uint64_t>
class HowleyJonesBst {
  // Searches read links with plain acquire loads, never protect() (why: see the top).
  struct Node;
  struct ChildCasOp;
  struct RelocateOp;

  // An op word: state in bits 0-1; NONE: a version (bits 2-63); MARK: bit 2 set iff a
  // relocation marked the node; CHILDCAS / RELOCATE: the descriptor's address.
  class OpWord {
   public:
    enum State : std::uintptr_t { none = 0, mark = 1, childcas = 2, relocate = 3 };
    constexpr OpWord() noexcept = default;
    static OpWord clean(std::uint64_t version) noexcept { return OpWord(static_cast<std::uintptr_t>(version) << 2); }
    static OpWord marked(bool by_relocation) noexcept { return OpWord((std::uintptr_t{by_relocation} << 2) | mark); }
    static OpWord flagged(ChildCasOp* op) noexcept { return OpWord(reinterpret_cast<std::uintptr_t>(op) | childcas); }
    static OpWord flagged(RelocateOp* op) noexcept { return OpWord(reinterpret_cast<std::uintptr_t>(op) | relocate); }
    State state() const noexcept { return static_cast<State>(bits_ & 3); }
    bool by_relocation() const noexcept { return (bits_ >> 2) & 1; }  // MARK only
    ChildCasOp* child_cas_op() const noexcept { return reinterpret_cast<ChildCasOp*>(bits_ & ~std::uintptr_t{3}); }
    RelocateOp* relocate_op() const noexcept { return reinterpret_cast<RelocateOp*>(bits_ & ~std::uintptr_t{3}); }
    friend bool operator==(OpWord a, OpWord b) noexcept { return a.bits_ == b.bits_; }

   private:
    explicit constexpr OpWord(std::uintptr_t bits) noexcept : bits_(bits) {}
    std::uintptr_t bits_ = 0;
  };

  // A child link: a node's address, or a null (bit 0 set) with a stamp in bits 2-63 (bit 1
  // stays clear in both, for ChildCasOp's side bit). A new node's nulls carry stamp 0.
  class Child {
   public:
    constexpr Child() noexcept = default;
    static Child to(Node* n) noexcept { return Child(reinterpret_cast<std::uintptr_t>(n)); }
    static Child null_stamped(std::uint64_t stamp) noexcept { return Child((static_cast<std::uintptr_t>(stamp) << 2) | 1); }
    bool is_null() const noexcept { return bits_ & 1; }
    Node* node() const noexcept { return reinterpret_cast<Node*>(bits_); }
    std::uintptr_t bits() const noexcept { return bits_; }
    static Child from_bits(std::uintptr_t bits) noexcept { return Child(bits); }
    friend bool operator==(Child a, Child b) noexcept { return a.bits_ == b.bits_; }

   private:
    explicit constexpr Child(std::uintptr_t bits) noexcept : bits_(bits) {}
    std::uintptr_t bits_ = 1;
  };

  struct Node : R::NodeBase {
    Node(Key k, OpWord o) : key(k), op(o) {}
    std::atomic<Key> key;  // changes only by a relocation into the node (and only upwards)
    std::atomic<OpWord> op;
    std::atomic<Child> left{Child()};
    std::atomic<Child> right{Child()};
  };
  static_assert(alignof(Node) >= 8, "links keep two flag bits below a node's address");

  // Replaces `expected` by `update` in the left or right link of the node whose op word holds
  // it. Insert: a null -> the new node. Excision: the marked node -> its child or a new null.
  struct ChildCasOp : R::NodeBase {
    ChildCasOp(bool is_left, Child expected, Child update)
        : expected_and_side(expected.bits() | (std::uintptr_t{is_left} << 1)), update(update) {}
    Child expected() const noexcept { return Child::from_bits(expected_and_side & ~std::uintptr_t{2}); }
    bool is_left() const noexcept { return expected_and_side & 2; }
    const std::uintptr_t expected_and_side;
    const Child update;
  };

  enum RelocateState : std::uint32_t { ongoing, successful, done, failed };

  // Moves replace's key into dest (see the top). replace is not named: only the threads that
  // found the op in replace's op word act on replace, and they have it.
  struct RelocateOp : R::NodeBase {
    RelocateOp(Node* d, OpWord d_before, std::uint64_t d_after, Key remove, Key replace)
        : dest(d), dest_before(d_before), dest_after(d_after), remove_key(remove), replace_key(replace) {}
    std::atomic<std::uint32_t> state{ongoing};
    std::atomic<std::uint32_t> exits_left{2};  // DONE: dest's unflag and replace's MARK
    Node* const dest;
    const OpWord dest_before;        // dest's op word when the erase read it (the VCAS expects it)
    const std::uint64_t dest_after;  // dest's NONE version once unflagged
    const Key remove_key;
    const Key replace_key;
  };
  static_assert(alignof(ChildCasOp) >= 4 && alignof(RelocateOp) >= 4, "op words keep the state in two low bits");
  static_assert(std::atomic<OpWord>::is_always_lock_free && std::atomic<Child>::is_always_lock_free);

  // Descriptors apart from nodes in the system allocator's size classes too (see the top).
  static constexpr std::size_t node_chunk = detail::howley_jones::glibc_chunk(sizeof(Node));
  static_assert(node_chunk != detail::howley_jones::glibc_chunk(sizeof(ChildCasOp)) &&
                    node_chunk != detail::howley_jones::glibc_chunk(sizeof(RelocateOp)),
                "a descriptor would share a glibc malloc bin with the nodes");
  static constexpr std::size_t node_class = detail::howley_jones::jemalloc_class(sizeof(Node));
  static_assert(node_class != detail::howley_jones::jemalloc_class(sizeof(ChildCasOp)) &&
                    node_class != detail::howley_jones::jemalloc_class(sizeof(RelocateOp)),
                "a descriptor would share a jemalloc size class with the nodes");

 public:
  using key_type = Key;
  using mapped_type = Value;
  using reclaimer_type = R;
  static constexpr std::size_t node_bytes = sizeof(Node);
  static constexpr std::size_t descriptor_bytes = sizeof(ChildCasOp);
  static constexpr std::size_t relocate_descriptor_bytes = sizeof(RelocateOp);
  static constexpr Key min_key = std::numeric_limits<Key>::min() + 1;  // the root's key is below
  static constexpr Key max_key = std::numeric_limits<Key>::max();

  explicit HowleyJonesBst(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, 0, options),
        stats_(max_threads, {{"update_restarts", StatKind::counter},
                             {"helps", StatKind::counter},
                             {"relocations_failed", StatKind::counter},
                             {"contains_slow_paths", StatKind::counter},
                             {"relocation_dest_walks", StatKind::counter}}),
        tid_bits_(std::bit_width(static_cast<unsigned>(max_threads > 1 ? max_threads - 1 : 0))),
        versions_(max_threads) {
    assert(max_threads >= 1 && tid_bits_ <= 16);
    root_ = reclaimer_.template allocate<Node>(0, std::numeric_limits<Key>::min(), OpWord::clean(next_version(0)));
  }

  HowleyJonesBst(const HowleyJonesBst&) = delete;
  HowleyJonesBst& operator=(const HowleyJonesBst&) = delete;

  // Quiescent: no op word holds a descriptor (every operation finished its own), so only the
  // nodes in the tree remain; retired ones are the reclaimer's.
  ~HowleyJonesBst() {
    visit(root_, [&](Node* n) { reclaimer_.deallocate(0, n); });
  }

  // Linearizable (at the child CAS that links the new node, by whichever helper, or when the
  // search found the key); lock-free. Reclaimers: none, ebr.
  bool insert(int tid, Key key, Value /*value: a set, see the top*/) {
    assert(key >= min_key);
    auto guard = reclaimer_.enter(tid);
    Node* fresh = nullptr;  // kept across attempts
    for (;;) {
      Search s;
      const Found result = find(tid, key, s, root_);
      if (result == Found::found) {
        if (fresh) reclaimer_.deallocate(tid, fresh);  // never published
        return false;
      }
      if (!fresh) fresh = reclaimer_.template allocate<Node>(tid, key, OpWord::clean(next_version(tid)));
      const bool is_left = result == Found::not_found_left;
      // The null the search ended at: unchanged while curr's op word is (its flag CAS checks).
      const Child old = (is_left ? s.curr->left : s.curr->right).load(std::memory_order_acquire);
      if (!old.is_null()) {  // filled since: curr's op word has changed too
        stats_.add(tid, update_restarts);
        continue;
      }
      ChildCasOp* op = reclaimer_.template allocate<ChildCasOp>(tid, is_left, old, Child::to(fresh));
      OpWord expected = s.curr_op;
      // Flag CHILDCAS. release: publishes op and the new node to helpers.
      if (s.curr->op.compare_exchange_strong(expected, OpWord::flagged(op), std::memory_order_release,
                                             std::memory_order_relaxed)) {
        help_child_cas(tid, op, s.curr);
        return true;
      }
      reclaimer_.deallocate(tid, op);  // never published
      stats_.add(tid, update_restarts);
    }
  }

  // Linearizable (at the MARK of a node with < 2 children, or at the key CAS of a relocation,
  // by whichever helper; or when the search found no node with the key); lock-free.
  // Reclaimers: none, ebr.
  bool erase(int tid, Key key) {
    assert(key >= min_key);
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      Search s;
      if (find(tid, key, s, root_) != Found::found) return false;
      Node* const curr = s.curr;
      // Read after curr's op word: unchanged while it is (the CASes below check).
      const Child l = curr->left.load(std::memory_order_acquire), r = curr->right.load(std::memory_order_acquire);
      if (l.is_null() || r.is_null()) {
        OpWord expected = s.curr_op;
        // MARK. release: helpers that read it then read curr's (final) links.
        if (curr->op.compare_exchange_strong(expected, OpWord::marked(false), std::memory_order_release,
                                             std::memory_order_relaxed)) {
          CDSB_INTERLEAVE("hj.erase.marked");  // key erased, node not excised: others excise it
          if (!help_marked(tid, s.pred, s.pred_op, curr)) excise(tid, curr, key);
          return true;
        }
      } else {
        Search rs;  // the successor: leftmost node of curr's right subtree
        if (find(tid, key, rs, curr) == Found::abort || curr->op.load(std::memory_order_acquire) != s.curr_op) {
          stats_.add(tid, update_restarts);
          continue;
        }
        Node* const replace = rs.curr;
        const Key replace_key = replace->key.load(std::memory_order_acquire);  // fixed while its op is rs.curr_op
        RelocateOp* op =
            reclaimer_.template allocate<RelocateOp>(tid, curr, s.curr_op, next_version(tid), key, replace_key);
        OpWord expected = rs.curr_op;
        // Flag RELOCATE on replace. release: publishes op to helpers.
        if (replace->op.compare_exchange_strong(expected, OpWord::flagged(op), std::memory_order_release,
                                                std::memory_order_relaxed)) {
          CDSB_INTERLEAVE("hj.erase.relocate_flagged");  // op on replace, not on dest: others finish it
          bool excised = false;
          if (help_relocate(tid, op, rs.pred, rs.pred_op, replace, /*creator=*/true, excised)) {
            if (!excised) excise(tid, replace, replace_key);
            return true;
          }
          stats_.add(tid, relocations_failed);
        } else {
          reclaimer_.deallocate(tid, op);  // never published
        }
      }
      stats_.add(tid, update_restarts);
    }
  }

  // Linearizable (see the top: at the read of the key, of the MARK, or of the null; or as the
  // paper's find); lock-free: one pass without writes, helping or restarts, except in the
  // rare cases it cannot decide (then the paper's find). Reclaimers: none, ebr.
  bool contains(int tid, Key key) {
    if (key < min_key) return false;  // the root's key, never a user key
    auto guard = reclaimer_.enter(tid);
    Node* last_right = root_;
    OpWord last_right_op = root_->op.load(std::memory_order_acquire);
    Child next = root_->right.load(std::memory_order_acquire);
    while (!next.is_null()) {
      Node* const n = next.node();
      const OpWord op = n->op.load(std::memory_order_acquire);  // before the key (see the top)
      const Key k = n->key.load(std::memory_order_acquire);
      if (key < k) {
        next = n->left.load(std::memory_order_acquire);
      } else if (key > k) {
        last_right = n;
        last_right_op = op;
        next = n->right.load(std::memory_order_acquire);
      } else {
        const OpWord now = n->op.load(std::memory_order_acquire);  // after the key (see the top)
        switch (now.state()) {
          case OpWord::none:
          case OpWord::childcas: return true;
          case OpWord::relocate:  // a relocation's dest holds its key; its replace may not
            if (now.relocate_op()->dest == n) return true;
            return contains_slow(tid, key);
          case OpWord::mark:
            if (CDSB_MUTANT("hj.contains_ignores_mark")) return true;  // seeded bug: an erased key found
            if (!now.by_relocation()) return false;
            return contains_slow(tid, key);
        }
        return true;  // unreachable
      }
    }
    const auto state = last_right_op.state();
    if ((state == OpWord::none || state == OpWord::childcas) &&
        last_right->op.load(std::memory_order_acquire) == last_right_op)
      return false;
    return contains_slow(tid, key);
  }

  // ---- quiescent helpers ----------------------------------------------------------------
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    // In order, with an explicit stack: a tree built from sorted keys is as deep as it is large.
    std::vector<Node*> stack;
    Child c = root_->right.load(std::memory_order_acquire);
    while (!c.is_null() || !stack.empty()) {
      while (!c.is_null()) {
        stack.push_back(c.node());
        c = c.node()->left.load(std::memory_order_acquire);
      }
      Node* n = stack.back();
      stack.pop_back();
      fn(n->key.load(std::memory_order_acquire));
      c = n->right.load(std::memory_order_acquire);
    }
  }

  // Each key with the nodes a search for it reads, the auxiliary root included (quiescent).
  template <class Fn>
  void for_each_key_depth(Fn&& fn) const {
    detail::visit_with_depth(root_, [](Node* n) {
      const Child l = n->left.load(std::memory_order_acquire), r = n->right.load(std::memory_order_acquire);
      return std::array<Node*, 2>{l.is_null() ? nullptr : l.node(), r.is_null() ? nullptr : r.node()};
    }, [&](Node* n, std::size_t depth) {
      if (n != root_) fn(n->key.load(std::memory_order_acquire), depth);
    });
  }

  // Keys in the set (quiescent).
  std::size_t size() const {
    std::size_t n = 0;
    for_each_key([&](Key) { ++n; });
    return n;
  }

  // Strict key order (every key inside the open interval its ancestors allow, which also
  // rules out cycles and shared subtrees), the root sentinel in place with no left child, and
  // every reachable op word NONE: no flag, no relocation and no mark left at quiescence (each
  // operation unflags what it flagged and excises what it marked). No finished state is left
  // behind: a NONE word carries only a version.
  std::string check_invariants() const {
    if (root_->key.load(std::memory_order_acquire) != std::numeric_limits<Key>::min())
      return "the root sentinel's key changed";
    if (!root_->left.load(std::memory_order_acquire).is_null()) return "the root sentinel has a left child";
    struct Item {
      Node* n;
      bool has_lo, has_hi;
      Key lo, hi;
    };
    std::vector<Item> stack{{root_, false, false, Key{}, Key{}}};
    while (!stack.empty()) {
      const Item it = stack.back();
      stack.pop_back();
      const Key k = it.n->key.load(std::memory_order_acquire);
      if ((it.has_lo && !(it.lo < k)) || (it.has_hi && !(k < it.hi)))
        return "key order violated (or a cycle or shared subtree) at key " + std::to_string(k);
      switch (it.n->op.load(std::memory_order_acquire).state()) {
        case OpWord::childcas: return "a CHILDCAS flag remains at key " + std::to_string(k);
        case OpWord::relocate: return "a RELOCATE flag remains at key " + std::to_string(k);
        case OpWord::mark: return "a marked node is still in the tree at key " + std::to_string(k);
        case OpWord::none: break;
      }
      const Child l = it.n->left.load(std::memory_order_acquire), r = it.n->right.load(std::memory_order_acquire);
      if (!r.is_null()) stack.push_back({r.node(), true, it.has_hi, k, it.hi});
      if (!l.is_null()) stack.push_back({l.node(), it.has_lo, true, it.lo, k});
    }
    return {};
  }

  // Nodes reachable from the root, the root included (quiescent).
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
  enum Stat { update_restarts, helps, relocations_failed, contains_slow_paths, relocation_dest_walks };
  enum class Found { found, not_found_left, not_found_right, abort };

  struct Search {
    Node* pred = nullptr;
    OpWord pred_op;
    Node* curr = nullptr;
    OpWord curr_op;
  };

  // A value never used before in this tree (see change 1 at the top): thread tid's counter,
  // with tid in the low bits. 62 bits in an op word: 2^46 values per thread at 2^16 threads.
  std::uint64_t next_version(int tid) noexcept {
    return (++*versions_[tid] << tid_bits_) | static_cast<std::uint64_t>(tid);
  }

  // The paper's find: from aux_root down to k or the null where it belongs, helping every
  // flagged or marked node on the way and starting over; then the lastRight check (a
  // relocation may have moved k up into a node where the search turned right) and a check
  // that curr did not change. Returns the node reached with the op words read before its
  // links. From a node other than the root: abort if that node is flagged.
  Found find(int tid, Key k, Search& s, Node* aux_root) {
  retry:
    Found result = Found::not_found_right;
    s.curr = aux_root;
    s.curr_op = aux_root->op.load(std::memory_order_acquire);
    if (s.curr_op.state() != OpWord::none) {
      if (aux_root != root_) return Found::abort;
      help_child_cas(tid, s.curr_op.child_cas_op(), aux_root);  // the root is only ever flagged CHILDCAS
      goto retry;
    }
    Child next = aux_root->right.load(std::memory_order_acquire);
    Node* last_right = aux_root;
    OpWord last_right_op = s.curr_op;
    while (!next.is_null()) {
      s.pred = s.curr;
      s.pred_op = s.curr_op;
      s.curr = next.node();
      s.curr_op = s.curr->op.load(std::memory_order_acquire);
      if (s.curr_op.state() != OpWord::none) {
        stats_.add(tid, helps);
        help(tid, s.pred, s.pred_op, s.curr, s.curr_op);
        goto retry;
      }
      const Key ck = s.curr->key.load(std::memory_order_acquire);
      if (k < ck) {
        result = Found::not_found_left;
        next = s.curr->left.load(std::memory_order_acquire);
      } else if (k > ck) {
        result = Found::not_found_right;
        next = s.curr->right.load(std::memory_order_acquire);
        last_right = s.curr;
        last_right_op = s.curr_op;
      } else {
        result = Found::found;
        break;
      }
    }
    if (result != Found::found && last_right->op.load(std::memory_order_acquire) != last_right_op) goto retry;
    if (s.curr->op.load(std::memory_order_acquire) != s.curr_op) goto retry;
    return result;
  }

  bool contains_slow(int tid, Key key) {
    stats_.add(tid, contains_slow_paths);
    Search s;
    return find(tid, key, s, root_) == Found::found;
  }

  void help(int tid, Node* pred, OpWord pred_op, Node* curr, OpWord curr_op) {
    switch (curr_op.state()) {
      case OpWord::childcas: help_child_cas(tid, curr_op.child_cas_op(), curr); break;
      case OpWord::relocate: {
        if (CDSB_MUTANT("hj.help_skips_relocate")) break;  // seeded bug: waits for the relocation's creator
        bool excised = false;
        help_relocate(tid, curr_op.relocate_op(), pred, pred_op, curr, /*creator=*/false, excised);
        break;
      }
      case OpWord::mark: help_marked(tid, pred, pred_op, curr); break;
      case OpWord::none: break;
    }
  }

  // Finishes op on `dest`, the node whose op word held it (reached by traversal, or ours).
  void help_child_cas(int tid, ChildCasOp* op, Node* dest) {
    std::atomic<Child>& link = op->is_left() ? dest->left : dest->right;
    Child expected = op->expected();
    // Child CAS. release: publishes the new node (or passes on the moved-up child). It
    // succeeds once: the link never holds `expected` again (nulls are unique; an excised node
    // is never relinked, nor reused while we are inside our guard).
    link.compare_exchange_strong(expected, op->update, std::memory_order_release, std::memory_order_relaxed);
    OpWord flagged = OpWord::flagged(op);
    // Unflag. release: a reader of the NONE word sees the new link.
    if (dest->op.compare_exchange_strong(flagged, OpWord::clean(next_version(tid)), std::memory_order_release,
                                         std::memory_order_relaxed)) {
      // op has left the only op word that held it; its child CAS is done (see the top).
      if (!op->expected().is_null()) reclaimer_.retire(tid, op->expected().node());  // excised
      reclaimer_.retire(tid, op);
    }
  }

  // Excises the marked node curr by flagging pred (from pred_op, read before pred's link to
  // curr) with a ChildCASOp. True iff this call's flag CAS did (and the excision is done).
  bool help_marked(int tid, Node* pred, OpWord pred_op, Node* curr) {
    if (pred_op.state() != OpWord::none) return false;
    // acquire: curr is marked, so these links are final (the MARK, read with acquire by
    // whoever called us, was released after the last change to them).
    const Child l = curr->left.load(std::memory_order_acquire), r = curr->right.load(std::memory_order_acquire);
    const Child replacement = !l.is_null() ? l : !r.is_null() ? r : Child::null_stamped(next_version(tid));
    const bool is_left = pred->left.load(std::memory_order_acquire) == Child::to(curr);
    ChildCasOp* op = reclaimer_.template allocate<ChildCasOp>(tid, is_left, Child::to(curr), replacement);
    OpWord expected = pred_op;
    // Flag CHILDCAS on pred. release: publishes op.
    if (pred->op.compare_exchange_strong(expected, OpWord::flagged(op), std::memory_order_release,
                                         std::memory_order_relaxed)) {
      help_child_cas(tid, op, pred);
      return true;
    }
    reclaimer_.deallocate(tid, op);  // never published
    return false;
  }

  // CAS of op's state from `from` to `to`; returns the state after it (ours, or the one set
  // before us).
  static std::uint32_t decide(RelocateOp* op, std::uint32_t from, std::uint32_t to) {
    std::uint32_t seen = from;
    // acq_rel / acquire: see the header.
    return op->state.compare_exchange_strong(seen, to, std::memory_order_acq_rel, std::memory_order_acquire) ? to : seen;
  }

  // One of the op words that held op has let it go (DONE: two of them).
  void exit_relocation(int tid, RelocateOp* op) {
    if (op->exits_left.fetch_sub(1, std::memory_order_acq_rel) == 1) reclaimer_.retire(tid, op);
  }

  // The paper's helpRelocate, with changes 2 and 3 (see the top). curr: the node whose op
  // word held op (dest or replace), or replace for the creator; pred / pred_op: curr's parent
  // and its op word as the caller's search read them. True iff the relocation succeeded;
  // `excised`: replace was excised by this call.
  bool help_relocate(int tid, RelocateOp* op, Node* pred, OpWord pred_op, Node* curr, bool creator, bool& excised) {
    Node* const dest = op->dest;
    const bool at_dest = curr == dest;  // an address compare: dest is not touched on that account
    bool dest_alive = at_dest || creator;
    std::uint32_t state = op->state.load(std::memory_order_acquire);
    if (state == ongoing) {
      if (at_dest) {
        state = decide(op, ongoing, successful);  // we read op in dest's op word: installed
      } else if (dest_alive || (stats_.add(tid, relocation_dest_walks), dest_alive = reaches(dest, op->remove_key))) {
        OpWord seen = op->dest_before;
        // The VCAS. release: publishes op to dest-side helpers. The value is unique to
        // dest's incarnation, so a reused address fails it.
        if (dest->op.compare_exchange_strong(seen, OpWord::flagged(op), std::memory_order_release,
                                             std::memory_order_acquire) ||
            seen == OpWord::flagged(op))
          state = decide(op, ongoing, successful);
        else
          state = decide(op, ongoing, failed);  // dest's op moved on: never installable
      } else {
        state = decide(op, ongoing, failed);  // dest left (see `reaches`)
      }
    }
    if (state == successful) {
      dest_alive = true;  // dest's unflag follows DONE, which follows this read
      Key expected = op->remove_key;
      // The key CAS: the erase's linearization point. Keys only grow, so it cannot succeed twice.
      // release: a reader that reads the new key (acquire) then sees the VCAS that preceded it
      // (this thread read SUCCESSFUL), so its op-key-op validation cannot pair the new key with
      // dest's op word from before the relocation (see the header).
      dest->key.compare_exchange_strong(expected, op->replace_key, std::memory_order_release, std::memory_order_relaxed);
      state = decide(op, successful, done);
    }
    assert(state == done || (state == failed && !at_dest));
    if (state == done && dest_alive) {
      OpWord flagged = OpWord::flagged(op);
      // Unflag dest. release: publishes the new key to readers of the NONE word.
      if (dest->op.compare_exchange_strong(flagged, OpWord::clean(op->dest_after), std::memory_order_release,
                                           std::memory_order_relaxed))
        exit_relocation(tid, op);
    }
    if (at_dest) return state == done;
    const bool ok = state == done;
    OpWord flagged = OpWord::flagged(op);
    // Replace's exit: MARK (its key now lives in dest) or NONE. release: see the header.
    if (curr->op.compare_exchange_strong(flagged, ok ? OpWord::marked(true) : OpWord::clean(next_version(tid)),
                                         std::memory_order_release, std::memory_order_relaxed)) {
      if (ok) exit_relocation(tid, op);
      else reclaimer_.retire(tid, op);  // FAILED: replace's op word was the only one
    }
    if (ok) {
      if (pred == dest && pred_op == op->dest_before) pred_op = OpWord::clean(op->dest_after);
      excised = help_marked(tid, pred, pred_op, curr);
    }
    return ok;
  }

  // True iff a walk from the root towards k meets `target` (compared by address only, never
  // dereferenced unless met). A node met is alive for the caller's whole guard.
  bool reaches(Node* target, Key k) const {
    Child c = root_->right.load(std::memory_order_acquire);
    while (!c.is_null()) {
      Node* const n = c.node();
      if (n == target) return true;
      const Key nk = n->key.load(std::memory_order_acquire);
      if (k == nk) return false;  // another node holds k: target does not (unmarked) any more
      c = (k < nk ? n->left : n->right).load(std::memory_order_acquire);
    }
    return false;
  }

  // Returns once the marked node `target` (key k) is out of the tree: walks from the root
  // towards it (a node with key k other than target: to its right, where a relocation's
  // replace lies), helping whatever is flagged on the way, and excises it when met. While
  // target is in the tree it lies on that path (no other node holds k unmarked below a node
  // with key k, and nothing is inserted below a marked node), so meeting a null means it is out.
  void excise(int tid, Node* target, Key k) {
    for (;;) {
    restart:
      Node* pred = root_;
      OpWord pred_op = root_->op.load(std::memory_order_acquire);
      if (pred_op.state() != OpWord::none) {
        help_child_cas(tid, pred_op.child_cas_op(), root_);
        continue;
      }
      Child next = root_->right.load(std::memory_order_acquire);
      while (!next.is_null()) {
        Node* const curr = next.node();
        const OpWord curr_op = curr->op.load(std::memory_order_acquire);
        if (curr == target) {
          if (help_marked(tid, pred, pred_op, curr)) return;
          goto restart;  // pred changed since we read it
        }
        if (curr_op.state() != OpWord::none) {
          stats_.add(tid, helps);
          help(tid, pred, pred_op, curr, curr_op);
          goto restart;
        }
        const Key ck = curr->key.load(std::memory_order_acquire);
        next = (k < ck ? curr->left : curr->right).load(std::memory_order_acquire);
        pred = curr;
        pred_op = curr_op;
      }
      return;
    }
  }

  // Every node under n, n included, parents before children (children read before fn).
  template <class Fn>
  static void visit(Node* n, Fn&& fn) {
    std::vector<Node*> stack{n};
    while (!stack.empty()) {
      Node* const x = stack.back();
      stack.pop_back();
      const Child l = x->left.load(std::memory_order_acquire), r = x->right.load(std::memory_order_acquire);
      if (!r.is_null()) stack.push_back(r.node());
      if (!l.is_null()) stack.push_back(l.node());
      fn(x);
    }
  }

  R reclaimer_;
  UserStats stats_;
  const int tid_bits_;
  std::vector<Padded<std::uint64_t>> versions_;  // thread tid's version counter: its own only
  Node* root_;  // key min, for ever; the set lives in its right subtree
};

static_assert(ConcurrentSet<HowleyJonesBst<reclaim::Archetype<>>>);

}  // namespace cdsb
