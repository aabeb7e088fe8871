// Elimination-backoff stack: D. Hendler, N. Shavit and L. Yerushalmi, "A Scalable Lock-free
// Stack Algorithm", SPAA 2004. Written once against the reclamation interface
// (reclaim/reclaimer.hpp) and instantiated with each scheme and allocation policy.
//
// A Treiber stack (treiber_stack.hpp) whose operations, when their CAS on the head fails,
// back off into a collision array instead of retrying at once: a push and a pop that meet
// there cancel out (the pop returns the push's value) without touching the head, so under
// contention pairs of operations complete in parallel. The collision layer here is one-sided,
// a simplification of the paper's symmetric exchange: a push that failed its CAS offers its
// node in a random slot and waits a bounded time; a pop that failed its CAS looks in one
// random slot and takes an offer it finds. A slot moves only
//   empty -(push offers node n)-> n -(a pop takes it)-> taken -(the same push)-> empty
//   empty -(push offers node n)-> n -(the push withdraws it)-> empty
// so while a slot holds n only a pop (taking it) or n's push (withdrawing it) can change it,
// and while it holds `taken` only n's push can.
//
// Unbounded. Linearization points: push at its successful CAS on the head; pop at its
// successful CAS on the head, or, when empty, at its load of the head that saw null; an
// eliminated pair at the pop's successful CAS on the slot (push, then pop at once, leaving the
// stack as it was): both are pending then, since the push returns only after seeing `taken`.
// Lock-free: a failed CAS on the head means another operation's succeeded, and an offer waits
// a bounded number of steps.
//
// Reclamation: a node popped from the list is retired (as in Treiber's stack). A node taken
// from a slot was never in the list and its push never reads it again, so no other thread can
// reach it: the pop frees it at once. A pop reads the node only after its CAS took it; another
// pop that read the same slot value fails its CAS without reading the node (a freed and reused
// address offered again is a fresh offer, which the CAS rightly takes).
//
// Node layout: the reclaimer's NodeBase (empty, or IBR's epochs), the value, the link.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/queue/concepts.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb {

template <reclaim::Reclaimer R>
class EliminationStack {
  struct Node : R::NodeBase {
    explicit Node(std::uint64_t v) : value(v) {}
    const std::uint64_t value;
    Node* next = nullptr;  // written only before the node is published, never after
  };
  static constexpr std::uintptr_t empty_slot = 0, taken = 1;  // else a waiting push's Node*
  enum Stat { offers, eliminated };

 public:
  using reclaimer_type = R;
  static constexpr int hazard_slots = 1;
  static constexpr std::size_t node_bytes = sizeof(Node);
  // How long an offer waits for a pop, in spin-wait hints (~2-10 us on current x86): long
  // enough for a pop that failed its CAS at the same time to arrive, short enough that a
  // push no pop meets soon goes back to the head.
  static constexpr int offer_spins = 256;

  // One collision slot per two threads (at least one): the paper's array width for a mix
  // of pushes and pops, without its adaptive narrowing.
  explicit EliminationStack(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, hazard_slots, options),
        slot_count_(static_cast<std::uint32_t>(std::max(1, max_threads / 2))),
        slots_(std::make_unique<Padded<std::atomic<std::uintptr_t>>[]>(slot_count_)),
        rng_(static_cast<std::size_t>(max_threads)),
        stats_(max_threads, {{"elimination_offers", StatKind::counter}, {"eliminated_pairs", StatKind::counter}}) {
    for (int t = 0; t < max_threads; ++t) rng_[static_cast<std::size_t>(t)].value = 0x9E3779B97F4A7C15ull * (t + 1u);
  }
  EliminationStack(const EliminationStack&) = delete;
  EliminationStack& operator=(const EliminationStack&) = delete;
  ~EliminationStack() {
    for (Node* n = head_->load(std::memory_order_relaxed); n;) {
      Node* next = n->next;
      reclaimer_.deallocate(0, n);
      n = next;
    }
  }

  // Linearizable (at the successful CAS on the head, or at the pop's CAS that took the
  // offer); lock-free; every reclaimer.
  void push(int tid, std::uint64_t v) {
    auto guard = reclaimer_.enter(tid);
    Node* n = reclaimer_.template allocate<Node>(tid, v);
    n->next = head_->load(std::memory_order_relaxed);
    for (;;) {
      CDSB_INTERLEAVE("elimination.push.loaded");  // the head read, the CAS not done: where it can fail
      // (1) release: publishes the node's value and link to the acquire/protect loads (2).
      // Relaxed on failure: the head read back is only the next link to try.
      if (head_->compare_exchange_strong(n->next, n, std::memory_order_release, std::memory_order_relaxed)) return;
      if (offer(tid, n)) return;
      n->next = head_->load(std::memory_order_relaxed);
    }
  }

  // Linearizable (at the successful CAS on the head or on a slot, or at the load that saw
  // the stack empty); lock-free; every reclaimer.
  std::optional<std::uint64_t> pop(int tid) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      // (2) protect: an acquire load (pairs with (1)) that, with HP, re-reads the head after
      // publishing the hazard, so the node cannot be freed while we read its fields.
      Node* top = reclaimer_.protect(tid, 0, *head_);
      if (!top) return std::nullopt;
      Node* next = top->next;
      CDSB_INTERLEAVE("elimination.pop.loaded");  // top and next read, the CAS not done
      // (3) acq_rel: the unlink must precede the retire's reclamation checks (reclaim/).
      if (head_->compare_exchange_strong(top, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        const std::uint64_t v = top->value;
        reclaimer_.retire(tid, top);
        return v;
      }
      if (const auto v = take_offer(tid)) return v;
    }
  }

  std::uint32_t collision_slots() const { return slot_count_; }

  // ---- quiescent helpers -------------------------------------------------------------------
  template <class Fn>  // bottom to top
  void for_each_item(Fn&& fn) const {
    std::vector<std::uint64_t> items;
    for (const Node* n = head_->load(std::memory_order_relaxed); n; n = n->next) items.push_back(n->value);
    for (auto it = items.rbegin(); it != items.rend(); ++it) fn(*it);
  }
  // No operation runs, so no offer waits: every slot is empty.
  std::string check_invariants() const {
    for (std::uint32_t s = 0; s < slot_count_; ++s)
      if (slots_[s]->load(std::memory_order_relaxed) != empty_slot)
        return "collision slot " + std::to_string(s) + " is not empty while no operation runs";
    return {};
  }
  std::size_t memory_bytes() const {
    std::size_t nodes = 0;
    for (const Node* n = head_->load(std::memory_order_relaxed); n; n = n->next) ++nodes;
    return sizeof(*this) + slot_count_ * sizeof(slots_[0]) + rng_.size() * sizeof(rng_[0]) + nodes * sizeof(Node);
  }
  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  // A slot drawn at random for thread tid (xorshift64 on its own cache line).
  std::atomic<std::uintptr_t>& random_slot(int tid) {
    std::uint64_t& x = rng_[static_cast<std::size_t>(tid)].value;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *slots_[static_cast<std::uint32_t>((x >> 32) * slot_count_ >> 32)];
  }

  // Offers node n in a random slot and waits for a pop; true if one took it.
  bool offer(int tid, Node* n) {
    std::atomic<std::uintptr_t>& slot = random_slot(tid);
    std::uintptr_t expected = empty_slot;
    const auto mine = reinterpret_cast<std::uintptr_t>(n);
    // (4) release: publishes the node's value to the pop whose acquire CAS (5) takes it.
    // Relaxed on failure: a busy slot is simply not used.
    if (!slot.compare_exchange_strong(expected, mine, std::memory_order_release, std::memory_order_relaxed)) return false;
    stats_.add(tid, offers);
    CDSB_INTERLEAVE("elimination.push.offered");
    // Relaxed: only a pop can change the slot now, and nothing is read from it but `taken`.
    for (int i = 0; i < offer_spins && slot.load(std::memory_order_relaxed) == mine; ++i) cpu_relax();
    expected = mine;
    // Withdraw. Relaxed: no data passes either way. Failing means the slot holds `taken`: a pop
    // has the node. (The mutant withdraws with a plain store, as if no pop could have come.)
    if (CDSB_MUTANT("elimination.withdraw_blindly")) {
      slot.store(empty_slot, std::memory_order_relaxed);
      return false;
    }
    if (slot.compare_exchange_strong(expected, empty_slot, std::memory_order_relaxed)) return false;
    slot.store(empty_slot, std::memory_order_relaxed);  // only this push may clear `taken`
    return true;
  }

  // Takes an offer from a random slot, if one is there.
  std::optional<std::uint64_t> take_offer(int tid) {
    std::atomic<std::uintptr_t>& slot = random_slot(tid);
    std::uintptr_t seen = slot.load(std::memory_order_relaxed);
    if (seen == empty_slot || seen == taken) return std::nullopt;
    CDSB_INTERLEAVE("elimination.pop.saw_offer");
    // (5) acquire: pairs with (4), so the node's value is visible. Relaxed on failure: the
    // node is not read then.
    if (!slot.compare_exchange_strong(seen, taken, std::memory_order_acquire, std::memory_order_relaxed))
      return std::nullopt;
    Node* n = reinterpret_cast<Node*>(seen);
    const std::uint64_t v = n->value;
    reclaimer_.deallocate(tid, n);  // never in the list, and its push reads it no more
    stats_.add(tid, eliminated);
    return v;
  }

  Padded<std::atomic<Node*>> head_{nullptr};
  R reclaimer_;
  const std::uint32_t slot_count_;
  const std::unique_ptr<Padded<std::atomic<std::uintptr_t>>[]> slots_;
  std::vector<Padded<std::uint64_t>> rng_;  // per thread, written by its thread only
  UserStats stats_;
};

static_assert(ConcurrentStack<EliminationStack<reclaim::Archetype<false>>>);

}  // namespace cdsb
