// The blocking wrapper with the producers-done termination protocol (architecture.md §3;
// concepts.hpp, HasTermination) over any queue: how the stages of PARSEC's dedup pipeline
// (C. Bienia et al., PACT 2008) hand work on, with whichever queue the run names.
//
// PipelineQueue<Q> owns a Q. Producers enqueue (one item or a batch) and each calls
// producer_done() once after its last enqueue; consumers call dequeue_wait or
// dequeue_batch_wait, which wait for an item and report "finished" (nullopt, 0) once every
// producer is done and the queue is empty.
//
// Where Q has the protocol itself (HasTermination: LockedRingQueue, dedup's own ring, whose
// consumers sleep on a condition variable), every call is forwarded to it, set_producers
// included. Otherwise the wrapper adds it:
// - a count of producers done, an atomic incremented by producer_done (a release RMW);
// - a consumer that finds Q empty waits by spinning briefly (cpu_relax) and then yielding
//   (Backoff, platform/pause.hpp) before it tries again: it never sleeps, so it costs a core
//   (or, oversubscribed, a yield per try) while it waits;
// - finished is returned only by a dequeue made after the consumer observed (acquire) the
//   count equal to the producer count, that still found Q empty.
//
// Why no item is lost (the last items of a producer, enqueued right before its
// producer_done, included): a producer's enqueues precede its producer_done in program order,
// and its release increment (1) is in the release sequence that the consumer's acquire load
// (2) reads from (every later increment is an RMW and continues it), so every enqueue of every
// producer happens before the consumer's load that saw them all done, and hence before the
// dequeue it makes next. That dequeue is linearized after all those enqueues, so a
// linearizable Q can report empty then only if every item was already taken. The order
// matters: a dequeue that found Q empty *before* the load proves nothing (the last producer
// may enqueue and finish between the two), which is why the loop below loads first and
// dequeues second. The argument needs Q's dequeue to be linearizable (or at least never to
// report empty while an item whose enqueue happens before it was not taken); a relaxed queue
// that may miss items is not safe under this wrapper.
//
// Misuse: an enqueue after the last producer_done may be missed by consumers that already
// returned finished; a producer_done beyond the producer count throws std::logic_error.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>

#include "cdsbench/platform/pause.hpp"
#include "cdsbench/queue/concepts.hpp"

namespace cdsb {

namespace detail {
template <class Q>
concept HasSetProducers = requires(Q& q, int n) { q.set_producers(n); };
}  // namespace detail

template <ConcurrentQueue Q>
class PipelineQueue {
  static constexpr bool native = HasTermination<Q>;

 public:
  using queue_type = Q;

  // Builds the owned Q from args.
  template <class... Args>
    requires std::constructible_from<Q, Args...>
  explicit PipelineQueue(Args&&... args) : q_(std::forward<Args>(args)...) {}
  PipelineQueue(const PipelineQueue&) = delete;
  PipelineQueue& operator=(const PipelineQueue&) = delete;

  Q& queue() noexcept { return q_; }
  const Q& queue() const noexcept { return q_; }

  // Quiescent (before use): how many producers will call producer_done (1 unless set; a
  // native Q keeps its own count). Not available where Q has the protocol but no setter.
  void set_producers(int n)
    requires(!native || detail::HasSetProducers<Q>)
  {
    if constexpr (native) {
      q_.set_producers(n);
    } else {
      if (n < 0) throw std::invalid_argument("PipelineQueue: negative producer count");
      if (n < done_.load(std::memory_order_relaxed))
        throw std::invalid_argument("PipelineQueue: fewer producers than already done");
      producers_ = n;
    }
  }

  // As Q's enqueue (linearizable where Q's is; blocks while a bounded Q is full).
  void enqueue(int tid, std::uint64_t v) { q_.enqueue(tid, v); }

  // As cdsb::enqueue_batch on Q: one linearizable operation where Q has a native batch, else
  // one enqueue per item.
  void enqueue_batch(int tid, std::span<const std::uint64_t> items) { cdsb::enqueue_batch(q_, tid, items); }

  // As Q's dequeue: never waits; nullopt when Q is empty (not "finished").
  std::optional<std::uint64_t> dequeue(int tid) { return q_.dequeue(tid); }

  // As Q's native dequeue_batch (present only where Q has one, so that HasNativeBatch of the
  // wrapper means what it says).
  std::size_t dequeue_batch(int tid, std::size_t max, std::uint64_t* out)
    requires HasNativeBatch<Q>
  {
    return q_.dequeue_batch(tid, max, out);
  }

  // Counts the calling producer as done; each producer calls it once, after its last enqueue.
  // Native: as Q's. Otherwise linearizable (at the successful CAS), lock-free; throws
  // std::logic_error beyond the producer count (and counts nothing then).
  void producer_done() {
    if constexpr (native) {
      q_.producer_done();
    } else {
      int d = done_.load(std::memory_order_relaxed);
      do {
        if (d >= producers_) throw std::logic_error("PipelineQueue::producer_done: more calls than producers");
        // (1) release: the producer's enqueues happen before any acquire load (2) that reads
        // this count or a later one (the later increments are RMWs: the release sequence goes
        // on through them). Relaxed on failure: the value read back is only the next try.
      } while (!done_.compare_exchange_weak(d, d + 1, std::memory_order_release, std::memory_order_relaxed));
    }
  }

  // An item, or nullopt once every producer is done and Q is empty (finished). Native: as Q's.
  // Otherwise linearizable where Q's dequeue is (at the dequeue that returns the item or finds
  // Q empty after every producer was done); blocking: spins, then yields, until an item comes
  // or the producers are done.
  std::optional<std::uint64_t> dequeue_wait(int tid) {
    if constexpr (native) {
      return q_.dequeue_wait(tid);
    } else {
      Backoff backoff(spin_limit);
      for (;;) {
        const bool all_done = producers_done();  // (2), before the dequeue (header)
        if (auto v = q_.dequeue(tid)) return v;
        if (all_done) return std::nullopt;
        backoff();
      }
    }
  }

  // Up to max items into out, in queue order; 0 once every producer is done and Q is empty
  // (finished). max >= 1, else std::invalid_argument (0 would read as finished). Native: as
  // Q's. Otherwise as dequeue_wait, each try one cdsb::dequeue_batch on Q (one linearizable
  // operation where Q has a native batch, single dequeues otherwise).
  std::size_t dequeue_batch_wait(int tid, std::size_t max, std::uint64_t* out) {
    if (max == 0) throw std::invalid_argument("PipelineQueue::dequeue_batch_wait: max must be at least 1");
    if constexpr (native) {
      return q_.dequeue_batch_wait(tid, max, out);
    } else {
      Backoff backoff(spin_limit);
      for (;;) {
        const bool all_done = producers_done();  // (2), before the dequeue (header)
        if (const std::size_t n = cdsb::dequeue_batch(q_, tid, max, out); n > 0) return n;
        if (all_done) return 0;
        backoff();
      }
    }
  }

 private:
  // Doublings of the spin before a waiting consumer yields instead (1 + 2 + ... + 64 pauses).
  static constexpr std::uint32_t spin_limit = 64;

  // (2) acquire: pairs with the release increments (1), so every producer's enqueues happen
  // before the dequeue that follows. producers_ is written only quiescently (before the
  // threads start, which orders it before their reads).
  bool producers_done() const noexcept { return done_.load(std::memory_order_acquire) == producers_; }

  Q q_;
  int producers_ = 1;            // the generic protocol's only (native: unused)
  std::atomic<int> done_{0};     // producers that called producer_done (native: unused)
};

namespace detail {
// A queue with nothing but the contract, to check the wrapper's concepts.
struct PipelineArchetypeQueue {
  void enqueue(int, std::uint64_t);
  std::optional<std::uint64_t> dequeue(int);
};
}  // namespace detail

static_assert(HasTermination<PipelineQueue<detail::PipelineArchetypeQueue>> &&
              !HasNativeBatch<PipelineQueue<detail::PipelineArchetypeQueue>>);

}  // namespace cdsb
