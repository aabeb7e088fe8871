// The contracts of queues and stacks (architecture.md §3). Values are uint64_t; thread ids dense
// and passed to every operation.
//
// Every queue has single-item enqueue and dequeue. The batch forms are free functions
// (enqueue_batch, dequeue_batch below) that call a queue's native batch operations where it
// has them and single operations otherwise. A native enqueue_batch is one linearizable
// operation that places its items contiguously and in order; a native dequeue_batch(max)
// returns fewer than max items only if the queue held fewer at its linearization point (a
// queue that promises less says so in its header). The default built from single operations
// is not one operation: each item is linearized on its own.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace cdsb {

template <class S>
concept ConcurrentStack = requires(S& s, int tid, std::uint64_t v) {
  s.push(tid, v);
  { s.pop(tid) } -> std::same_as<std::optional<std::uint64_t>>;  // nullopt when empty
};

// A FIFO queue. enqueue of a bounded queue blocks while it is full (its header says so);
// dequeue never blocks: nullopt when the queue is empty.
template <class Q>
concept ConcurrentQueue = requires(Q& q, int tid, std::uint64_t v) {
  q.enqueue(tid, v);
  { q.dequeue(tid) } -> std::same_as<std::optional<std::uint64_t>>;
};

// Native batch operations: enqueue_batch(tid, items), dequeue_batch(tid, max, out) -> count.
template <class Q>
concept HasNativeBatch = ConcurrentQueue<Q> && requires(Q& q, int tid, std::span<const std::uint64_t> items,
                                                         std::uint64_t* out) {
  q.enqueue_batch(tid, items);
  { q.dequeue_batch(tid, std::size_t{1}, out) } -> std::same_as<std::size_t>;
};

// The producers-done termination protocol, native to a queue (PARSEC dedup's ring): each
// producer calls producer_done() once when it has enqueued its last item, and
// dequeue_wait(tid) blocks until it has an item or every producer is done and the queue is
// empty (nullopt: finished). Over any other queue, PipelineQueue (pipeline_queue.hpp) adds it.
template <class Q>
concept HasTermination = ConcurrentQueue<Q> && requires(Q& q, int tid, std::uint64_t* out) {
  q.producer_done();
  { q.dequeue_wait(tid) } -> std::same_as<std::optional<std::uint64_t>>;
  { q.dequeue_batch_wait(tid, std::size_t{1}, out) } -> std::same_as<std::size_t>;
};

// Enqueues items in order: one linearizable operation where the queue has a native batch,
// else one enqueue per item.
template <ConcurrentQueue Q>
void enqueue_batch(Q& q, int tid, std::span<const std::uint64_t> items) {
  if constexpr (HasNativeBatch<Q>) {
    q.enqueue_batch(tid, items);
  } else {
    for (const std::uint64_t v : items) q.enqueue(tid, v);
  }
}

// Dequeues up to max items into out, in queue order; returns how many. Without a native
// batch, single dequeues until one finds the queue empty.
template <ConcurrentQueue Q>
std::size_t dequeue_batch(Q& q, int tid, std::size_t max, std::uint64_t* out) {
  if constexpr (HasNativeBatch<Q>) {
    return q.dequeue_batch(tid, max, out);
  } else {
    std::size_t n = 0;
    for (; n < max; ++n) {
      const auto v = q.dequeue(tid);
      if (!v) break;
      out[n] = *v;
    }
    return n;
  }
}

}  // namespace cdsb
