// The locked ring queue of PARSEC's dedup (queue.c / queue.h of dedup in PARSEC 3.0: C. Bienia,
// S. Kumar, J. P. Singh and K. Li, "The PARSEC Benchmark Suite: Characterization and
// Architectural Implications", PACT 2008), the blocking baseline of the pipeline's queues
// (Feldman et al. replace it with non-blocking queues in the same pipeline). Our own code,
// after its design: std::mutex and std::condition_variable instead of pthreads, capacity and
// batch sizes chosen by the caller instead of dedup's compile-time constants.
//
// Algorithm: a bounded ring of uint64_t values under one mutex. Every operation takes the lock
// once, does all its work (one item or a whole batch, like dedup's ITEM_PER_INSERT items per
// lock hold) and releases it. Two condition variables: not_empty_ (consumers of the blocking
// dequeues wait there) and not_full_ (producers wait there for room). Termination (dedup's
// end_count): each of the `producers` producers calls producer_done() once after its last
// enqueue; a blocking dequeue returns "finished" once every producer is done and the ring is
// empty.
//
// Layout: the object holds the mutex, the two condition variables, the indices and counts; the
// ring is one array of capacity words (a power of two, so an index is a mask). head_ and tail_
// are free-running 64-bit counters: size = tail_ - head_, slot = counter & mask (no "one slot
// left empty" as in dedup's ring; 2^64 operations never wrap in practice).
//
// Bounded: capacity() items (the requested capacity rounded up to a power of two). enqueue
// blocks while the ring is full; dequeue and dequeue_batch never block.
// Linearizable: every operation at its one lock hold (a batch is one operation: its items are
// contiguous and in order). Blocking, not lock-free: a thread that holds the lock and is
// descheduled stops every other.
// Memory orders: none of our own. Every shared field is read and written under mutex_, whose
// lock/unlock give the acquire/release ordering (and the condition variables' waits re-lock it).
//
// The protocol's guarantee: a dequeue_wait (or dequeue_batch_wait) returns "finished" only
// when, under the lock, every producer had called producer_done and the ring was empty. A
// producer's enqueues happen before its producer_done (program order, and both lock the same
// mutex), so by then every item of every producer was in the ring and has been taken: the last
// items enqueued right before producer_done are never lost.
//
// Wake-ups, and why none is lost. A waiter checks its predicate and blocks under the lock
// (condition_variable::wait releases the lock and blocks atomically), and every change of the
// state a waiter waits for is made under the lock, with its notification issued before the
// lock is released; so a change either happens before the waiter's check (it sees it) or after
// it blocked (the notification reaches it). Which waiters get notified:
// - not_empty_: an enqueue of k items notifies min(k, waiting consumers): notify_all when k
//   covers every waiter, else notify_one k times. Let B be the consumers blocked in the wait
//   and U those woken but not yet back under the lock; waiting_consumers_ counts both. The
//   invariant "B > 0 implies size <= U" holds at every unlock: an enqueue with B > 0 adds k
//   items and k woken consumers (or wakes them all); a woken consumer takes at least one item
//   or, finding none, blocks again (size 0). So no item stays in the ring while a consumer
//   sleeps with nobody on the way to take it, with single items and batches alike. The last
//   producer_done notifies all: every blocked consumer must see "finished".
// - not_full_: a dequeue that frees room notifies all waiting producers: they wait for room of
//   different sizes (a batch needs room for all its items), so waking one could wake one that
//   still cannot proceed while another that could sleeps on. A big batch may wait while small
//   enqueues keep the ring nearly full (no fairness between producers, as in dedup).
#pragma once

#include <algorithm>
#include <bit>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/queue/concepts.hpp"

namespace cdsb {

class LockedRingQueue {
 public:
  // The statistics, per thread: operations that blocked at least once because the ring was
  // full (enqueue, enqueue_batch) or empty (dequeue_wait, dequeue_batch_wait).
  enum Stat { waits_full, waits_empty };

  // capacity >= 1, rounded up to a power of two; producers >= 0 (0: every blocking dequeue on
  // an empty ring returns finished at once). max_threads bounds the thread ids.
  // The capacity the harness builds it with (its registry entry says so).
  static constexpr std::size_t default_capacity = std::size_t{1} << 20;

  explicit LockedRingQueue(int max_threads, std::size_t capacity = default_capacity, int producers = 1)
      : capacity_(checked_capacity(capacity)),
        mask_(capacity_ - 1),
        ring_(std::make_unique_for_overwrite<std::uint64_t[]>(capacity_)),
        producers_(checked_producers(producers)),
        stats_(max_threads, {{"waits_full", StatKind::counter}, {"waits_empty", StatKind::counter}}) {}
  LockedRingQueue(const LockedRingQueue&) = delete;
  LockedRingQueue& operator=(const LockedRingQueue&) = delete;

  // Quiescent (before use): the number of producers that will call producer_done. The harness
  // learns it after building the queue.
  void set_producers(int n) {
    std::lock_guard lock(mutex_);
    if (checked_producers(n) < done_) throw std::invalid_argument("LockedRingQueue: fewer producers than already done");
    producers_ = n;
  }

  // Linearizable (at its lock hold); blocking (waits while the ring is full).
  void enqueue(int tid, std::uint64_t v) {
    std::unique_lock lock(mutex_);
    wait_for_room(lock, tid, 1);
    ring_[tail_ & mask_] = v;
    ++tail_;
    notify_consumers(1);
  }

  // Linearizable (at its lock hold; the items land contiguously and in order); blocking (waits
  // until the ring has room for all of them). Throws std::invalid_argument if items.size() >
  // capacity(): such a batch could never fit.
  void enqueue_batch(int tid, std::span<const std::uint64_t> items) {
    const std::size_t k = items.size();
    if (k > capacity_) throw std::invalid_argument("LockedRingQueue::enqueue_batch: batch larger than the capacity");
    if (k == 0) return;
    std::unique_lock lock(mutex_);
    wait_for_room(lock, tid, k);
    // At most two runs: up to the end of the array, then from its start.
    const std::size_t at = tail_ & mask_;
    const std::size_t first = std::min(k, capacity_ - at);
    std::copy_n(items.data(), first, ring_.get() + at);
    std::copy_n(items.data() + first, k - first, ring_.get());
    tail_ += k;
    notify_consumers(k);
  }

  // Linearizable (at its lock hold); blocking (takes the lock, never waits for an item):
  // nullopt when the ring is empty.
  std::optional<std::uint64_t> dequeue(int /*tid*/) {
    std::lock_guard lock(mutex_);
    if (tail_ == head_) return std::nullopt;
    return take_one();
  }

  // Linearizable (at its lock hold); blocking (takes the lock, never waits for an item): takes
  // min(max, size) items into out, in queue order.
  std::size_t dequeue_batch(int /*tid*/, std::size_t max, std::uint64_t* out) {
    std::lock_guard lock(mutex_);
    return take(max, out);
  }

  // Counts a producer as done (each producer calls it once, after its last enqueue); the last
  // one wakes every waiting consumer. Throws std::logic_error beyond the producer count.
  // Linearizable (at its lock hold); blocking.
  void producer_done() {
    std::lock_guard lock(mutex_);
    if (done_ >= producers_) throw std::logic_error("LockedRingQueue::producer_done: more calls than producers");
    ++done_;
    if (done_ == producers_) not_empty_.notify_all();
  }

  // Linearizable (at the lock hold that takes the item or sees every producer done and the
  // ring empty); blocking (waits for an item): nullopt means finished.
  std::optional<std::uint64_t> dequeue_wait(int tid) {
    std::unique_lock lock(mutex_);
    wait_for_item(lock, tid);
    if (tail_ == head_) return std::nullopt;
    return take_one();
  }

  // Linearizable (as dequeue_wait); blocking: takes min(max, size) >= 1 items into out, or
  // returns 0 (finished) once every producer is done and the ring is empty. max >= 1, else
  // std::invalid_argument (0 would read as finished).
  std::size_t dequeue_batch_wait(int tid, std::size_t max, std::uint64_t* out) {
    if (max == 0) throw std::invalid_argument("LockedRingQueue::dequeue_batch_wait: max must be at least 1");
    std::unique_lock lock(mutex_);
    wait_for_item(lock, tid);
    return take(max, out);
  }

  std::size_t capacity() const noexcept { return capacity_; }

  // Linearizable (at its lock hold); blocking.
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(tail_ - head_);
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  template <class Fn>  // front to back
  void for_each_item(Fn&& fn) const {
    for (std::uint64_t i = head_; i != tail_; ++i) fn(ring_[i & mask_]);
  }
  std::string check_invariants() const {
    if (!std::has_single_bit(capacity_) || mask_ != capacity_ - 1) return "capacity is not a power of two with its mask";
    if (tail_ < head_) return "tail behind head: " + std::to_string(tail_) + " < " + std::to_string(head_);
    if (tail_ - head_ > capacity_)
      return "size " + std::to_string(tail_ - head_) + " exceeds the capacity " + std::to_string(capacity_);
    if (done_ < 0 || done_ > producers_)
      return "producers done " + std::to_string(done_) + " outside [0, " + std::to_string(producers_) + "]";
    if (waiting_consumers_ != 0 || waiting_producers_ != 0) return "threads still waiting";
    return {};
  }
  std::size_t memory_bytes() const noexcept { return sizeof(*this) + capacity_ * sizeof(std::uint64_t); }
  StatsReport stats() const { return stats_.report(); }

 private:
  static std::size_t checked_capacity(std::size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("LockedRingQueue: capacity must be at least 1");
    if (capacity > (std::size_t{1} << (std::numeric_limits<std::size_t>::digits - 1)))
      throw std::invalid_argument("LockedRingQueue: capacity too large");
    return std::bit_ceil(capacity);
  }
  static int checked_producers(int producers) {
    if (producers < 0) throw std::invalid_argument("LockedRingQueue: negative producer count");
    return producers;
  }

  // Under the lock: blocks until k slots are free.
  void wait_for_room(std::unique_lock<std::mutex>& lock, int tid, std::size_t k) {
    if (capacity_ - (tail_ - head_) >= k) return;
    stats_.add(tid, waits_full);
    ++waiting_producers_;
    not_full_.wait(lock, [&] { return capacity_ - (tail_ - head_) >= k; });
    --waiting_producers_;
  }

  // Under the lock: blocks until the ring holds an item or every producer is done.
  void wait_for_item(std::unique_lock<std::mutex>& lock, int tid) {
    if (tail_ != head_ || done_ == producers_) return;
    stats_.add(tid, waits_empty);
    ++waiting_consumers_;
    not_empty_.wait(lock, [&] { return tail_ != head_ || done_ == producers_; });
    --waiting_consumers_;
  }

  // Under the lock, after k items were added: wakes min(k, waiting) consumers (header: the
  // invariant that makes this enough).
  void notify_consumers(std::size_t k) {
    if (waiting_consumers_ == 0) return;
    if (k >= static_cast<std::size_t>(waiting_consumers_)) {
      not_empty_.notify_all();
    } else {
      for (std::size_t i = 0; i < k; ++i) not_empty_.notify_one();
    }
  }

  // Under the lock, after room was freed: every waiting producer rechecks its own need.
  void notify_producers() {
    if (waiting_producers_ > 0) not_full_.notify_all();
  }

  // Under the lock, the ring not empty.
  std::uint64_t take_one() {
    const std::uint64_t v = ring_[head_ & mask_];
    ++head_;
    notify_producers();
    return v;
  }

  // Under the lock: takes min(max, size) items.
  std::size_t take(std::size_t max, std::uint64_t* out) {
    const std::size_t n = std::min<std::size_t>(max, tail_ - head_);
    if (n == 0) return 0;
    const std::size_t at = head_ & mask_;
    const std::size_t first = std::min(n, capacity_ - at);
    std::copy_n(ring_.get() + at, first, out);
    std::copy_n(ring_.get(), n - first, out + first);
    head_ += n;
    notify_producers();
    return n;
  }

  const std::size_t capacity_;
  const std::size_t mask_;
  const std::unique_ptr<std::uint64_t[]> ring_;

  mutable std::mutex mutex_;  // guards everything below, and the ring's live slots
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::uint64_t head_ = 0;  // counter of the next item to dequeue
  std::uint64_t tail_ = 0;  // counter of the next free slot
  int producers_;
  int done_ = 0;  // producers that called producer_done
  int waiting_consumers_ = 0;  // in wait_for_item: blocked, or woken and not yet back
  int waiting_producers_ = 0;  // in wait_for_room: the same
  UserStats stats_;  // written under the lock by the operation's own thread only
};

static_assert(ConcurrentQueue<LockedRingQueue> && HasNativeBatch<LockedRingQueue> && HasTermination<LockedRingQueue>);

}  // namespace cdsb
