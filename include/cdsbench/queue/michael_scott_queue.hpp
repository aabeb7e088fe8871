// Michael-Scott queue: M. M. Michael and M. L. Scott, "Simple, Fast, and Practical Non-Blocking
// and Blocking Concurrent Queue Algorithms", PODC 1996. Written once against the reclamation
// interface (reclaim/reclaimer.hpp) and instantiated with each scheme and allocation policy;
// optional bounded exponential backoff after a failed CAS (the paper's measured variant).
//
// A singly linked list with a dummy node at its head: head points to the dummy, whose
// successor holds the front item; tail points to the last node or, lagging by one, to its
// predecessor. enqueue links a new node after the last node with one CAS on its null next
// link and then swings tail (any thread that finds tail lagging swings it first: helping).
// dequeue reads the front item from the dummy's successor and swings head to it with one
// CAS; the old dummy is retired and the successor becomes the new dummy.
//
// Unbounded. Linearization points: enqueue at its successful CAS on last->next; dequeue at
// its successful CAS on head, or, when empty, at its load of head->next that saw null (head
// was that node before and after the load: it was re-read unchanged, and head never returns
// to a node it left, since a left node is retired and not reused while we hold it).
// Lock-free: a CAS fails only because another operation's CAS succeeded.
//
// Reclamation: a node is retired once head has moved past it (it was the dummy); only the
// thread whose CAS moved head retires it. With hazard pointers dequeue protects head (slot 0)
// and then the dummy's successor (slot 1) and re-reads head: while head is still the dummy,
// its successor has not been the dummy yet, so it cannot have been retired. enqueue protects
// tail (slot 0): a node that tail points to is not retired (head never passes tail: dequeue
// swings a lagging tail before it moves head past it).
//
// Node layout: the reclaimer's NodeBase (empty, or IBR's epochs), the value, the link.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/queue/concepts.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb {

template <reclaim::Reclaimer R, bool WithBackoff = false>
class MichaelScottQueue {
  struct Node : R::NodeBase {
    explicit Node(std::uint64_t v) : value(v) {}
    std::uint64_t value;  // written before the node is published, read only after
    std::atomic<Node*> next{nullptr};
  };

 public:
  using reclaimer_type = R;
  static constexpr int hazard_slots = 2;
  static constexpr std::size_t node_bytes = sizeof(Node);
  static constexpr bool bounded = false;

  explicit MichaelScottQueue(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, hazard_slots, options) {
    Node* dummy = reclaimer_.template allocate<Node>(0, 0);
    head_->store(dummy, std::memory_order_relaxed);
    tail_->store(dummy, std::memory_order_relaxed);
  }
  MichaelScottQueue(const MichaelScottQueue&) = delete;
  MichaelScottQueue& operator=(const MichaelScottQueue&) = delete;
  ~MichaelScottQueue() {
    for (Node* n = head_->load(std::memory_order_relaxed); n;) {
      Node* next = n->next.load(std::memory_order_relaxed);
      reclaimer_.deallocate(0, n);
      n = next;
    }
  }

  // Linearizable (at the CAS that links the node); lock-free; every reclaimer.
  void enqueue(int tid, std::uint64_t v) {
    auto guard = reclaimer_.enter(tid);
    Node* const node = reclaimer_.template allocate<Node>(tid, v);
    Backoff backoff;
    for (;;) {
      // (1) protect: acquire (pairs with (2) and (3)): the node tail names is fully
      // initialised; with HP it stays allocated while we read its link.
      Node* last = reclaimer_.protect(tid, 0, *tail_);
      Node* next = last->next.load(std::memory_order_acquire);
      if (next == nullptr) {
        CDSB_INTERLEAVE("msq.enqueue.found_last");  // last found, not yet linked after
        // (2) release: publishes the node's value to whoever reaches it through this link.
        // Relaxed on failure: we start over from tail.
        if (last->next.compare_exchange_strong(next, node, std::memory_order_release, std::memory_order_relaxed)) {
          // (3) release: tail may now name the node. A failure means another thread swung
          // tail past it already (helping).
          tail_->compare_exchange_strong(last, node, std::memory_order_release, std::memory_order_relaxed);
          return;
        }
        if constexpr (WithBackoff) backoff();
      } else {
        // tail lags: help swing it, then retry (3).
        tail_->compare_exchange_strong(last, next, std::memory_order_release, std::memory_order_relaxed);
      }
    }
  }

  // Linearizable (at the CAS that moves head, or at the load that saw no successor);
  // lock-free; every reclaimer.
  std::optional<std::uint64_t> dequeue(int tid) {
    auto guard = reclaimer_.enter(tid);
    Backoff backoff;
    for (;;) {
      Node* first = reclaimer_.protect(tid, 0, *head_);                  // acquire: pairs with (4)
      Node* next = reclaimer_.protect(tid, 1, first->next);               // acquire: pairs with (2)
      // Re-read head: while it is still `first`, `next` has not been the dummy, so it was
      // neither retired nor freed before slot 1 was published (HP), and the empty answer
      // below holds at the load of first->next. seq_cst: a scan that missed slot 1 must make
      // this load see the head CAS that preceded its fence (C++20 [atomics.order]/4; the
      // same instruction as acquire on x86).
      if (first != head_->load(std::memory_order_seq_cst)) continue;
      if (next == nullptr) return std::nullopt;
      Node* last = tail_->load(std::memory_order_acquire);
      if (first == last) {
        // tail lags behind a linked node: swing it first, so head never passes tail (3).
        tail_->compare_exchange_strong(last, next, std::memory_order_release, std::memory_order_relaxed);
        continue;
      }
      const std::uint64_t v = next->value;  // read before the CAS: after it, next may be dequeued and freed
      CDSB_INTERLEAVE("msq.dequeue.read");  // the value read, head not yet moved
      // (4) acq_rel, as Treiber's pop: the unlink must precede the retire's reclamation checks
      // (reclaim/), and our reads of both nodes precede the next dequeuer's retiring `next`.
      // Relaxed on failure: we start over from head.
      if (head_->compare_exchange_strong(first, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        if (CDSB_MUTANT("msq.free_at_once")) reclaimer_.deallocate(tid, first);
        else reclaimer_.retire(tid, first);
        return v;
      }
      if constexpr (WithBackoff) backoff();
    }
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  template <class Fn>  // front to back
  void for_each_item(Fn&& fn) const {
    for (const Node* n = head_->load(std::memory_order_relaxed)->next.load(std::memory_order_relaxed); n;
         n = n->next.load(std::memory_order_relaxed))
      fn(n->value);
  }
  // "" when tail is the last node and reachable from head (quiescent: no enqueue left it lagging).
  std::string check_invariants() const {
    const Node* n = head_->load(std::memory_order_relaxed);
    while (n->next.load(std::memory_order_relaxed)) n = n->next.load(std::memory_order_relaxed);
    return n == tail_->load(std::memory_order_relaxed) ? "" : "tail is not the last node";
  }
  std::size_t memory_bytes() const {
    std::size_t nodes = 0;
    for (const Node* n = head_->load(std::memory_order_relaxed); n; n = n->next.load(std::memory_order_relaxed)) ++nodes;
    return sizeof(*this) + nodes * sizeof(Node);
  }
  StatsReport stats() const { return reclaimer_.stats(); }

 private:
  Padded<std::atomic<Node*>> head_{nullptr};  // dequeuers' line
  Padded<std::atomic<Node*>> tail_{nullptr};  // enqueuers' line
  R reclaimer_;
};

// The registry's variants name a structure template of one parameter.
template <reclaim::Reclaimer R>
using MichaelScottQueueBackoff = MichaelScottQueue<R, true>;

static_assert(ConcurrentQueue<MichaelScottQueue<reclaim::Archetype<false>>>);
static_assert(ConcurrentQueue<MichaelScottQueueBackoff<reclaim::Archetype<false>>>);

}  // namespace cdsb
