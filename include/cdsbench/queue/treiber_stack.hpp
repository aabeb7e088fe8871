// Treiber stack: R. K. Treiber, "Systems Programming: Coping with Parallelism", IBM Research
// Report RJ 5118, 1986. The lock-free (LF) baseline of Calciu et al.'s evaluation (ASPLOS
// 2017) for the stack, written once against the reclamation interface (reclaim/reclaimer.hpp)
// and instantiated with each scheme and allocation policy.
//
// A singly linked list whose head is the top. push links a new node in front of the head
// with one CAS; pop swings the head to the top node's successor with one CAS and retires
// the node; top reads the head's value. Reclamation makes the classic ABA impossible: a
// popped node is not freed (so its address is not reused) while a thread that read it may
// still CAS on it; with hazard pointers the top is protected by slot 0 before its link is
// read.
//
// Node layout: the reclaimer's NodeBase (empty, or IBR's epochs), the value, the link.
// The link is a plain field: written only before the node is published (the pushing CAS
// releases it) and never changed after.
//
// The harness runs it beside NR, SL, RWL, FC and FC+ over the sequential stack through an
// adapter of its own (bench/workloads/blackbox/stack.hpp): this header knows no seq/ type.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/queue/concepts.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb {

template <reclaim::Reclaimer R>
class TreiberStack {
  struct Node : R::NodeBase {
    Node(std::uint64_t v, Node* n) : value(v), next(n) {}
    const std::uint64_t value;
    Node* next;
  };

 public:
  using reclaimer_type = R;
  static constexpr int hazard_slots = 1;
  static constexpr std::size_t node_bytes = sizeof(Node);

  explicit TreiberStack(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, hazard_slots, options) {}
  TreiberStack(const TreiberStack&) = delete;
  TreiberStack& operator=(const TreiberStack&) = delete;
  ~TreiberStack() {
    for (Node* n = head_->load(std::memory_order_relaxed); n;) {
      Node* next = n->next;
      reclaimer_.deallocate(0, n);
      n = next;
    }
  }

  // Linearizable (at the successful CAS); lock-free; every reclaimer.
  void push(int tid, std::uint64_t v) {
    auto guard = reclaimer_.enter(tid);
    Node* n = reclaimer_.template allocate<Node>(tid, v, head_->load(std::memory_order_relaxed));
    // (1) release: publishes the node's value and link to the acquire/protect loads (2).
    // Relaxed on failure: the head we read back is only the next link to try.
    while (!head_->compare_exchange_weak(n->next, n, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }

  // Linearizable (at the successful CAS, or at the load that saw the stack empty);
  // lock-free; every reclaimer.
  std::optional<std::uint64_t> pop(int tid) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      // (2) protect: an acquire load (pairs with (1)) that, with HP, re-reads the head after
      // publishing the hazard, so the node cannot be freed while we read its fields.
      Node* top = reclaimer_.protect(tid, 0, *head_);
      if (!top) return std::nullopt;
      Node* next = top->next;
      CDSB_INTERLEAVE("treiber.pop.loaded");  // top and next read, CAS not done: the ABA window
      // (3) acq_rel: the unlink must precede the retire's reclamation checks (reclaim/);
      // relaxed on failure (we reload through protect).
      if (head_->compare_exchange_weak(top, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        const std::uint64_t v = top->value;
        // Unlinked by exactly one thread: this one. (The mutant frees it at once instead.)
        if (CDSB_MUTANT("treiber.free_at_once")) reclaimer_.deallocate(tid, top);
        else reclaimer_.retire(tid, top);
        return v;
      }
    }
  }

  // Linearizable (at the protected load); wait-free with EBR and none, lock-free with HP
  // and IBR (protect retries while the head or the epoch moves); every reclaimer.
  std::optional<std::uint64_t> top(int tid) {
    auto guard = reclaimer_.enter(tid);
    const Node* t = reclaimer_.protect(tid, 0, *head_);  // (2)
    if (!t) return std::nullopt;
    return t->value;
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  template <class Fn>  // bottom to top
  void for_each_item(Fn&& fn) const {
    std::vector<std::uint64_t> items;
    for (const Node* n = head_->load(std::memory_order_relaxed); n; n = n->next) items.push_back(n->value);
    for (auto it = items.rbegin(); it != items.rend(); ++it) fn(*it);
  }
  std::string check_invariants() const { return {}; }  // any list is a valid stack
  std::size_t memory_bytes() const {
    std::size_t nodes = 0;
    for (const Node* n = head_->load(std::memory_order_relaxed); n; n = n->next) ++nodes;
    return sizeof(*this) + nodes * sizeof(Node);
  }
  StatsReport stats() const { return reclaimer_.stats(); }

 private:
  Padded<std::atomic<Node*>> head_{nullptr};
  R reclaimer_;
};

static_assert(ConcurrentStack<TreiberStack<reclaim::Archetype<false>>>);

}  // namespace cdsb
