// Other libraries' queues behind our ConcurrentQueue interface (include/cdsbench/queue/concepts.hpp),
// so they run through the same queue workload, validation and correctness matrix as ours:
//
//   tbb.concurrent_queue       oneTBB 2021.8 tbb::concurrent_queue: its default 8 micro-queues,
//                              a ticket per push and per pop (unbounded; try_pop never blocks)
//   moodycamel.concurrent_queue  Cameron Desrochers' ConcurrentQueue 1.0.3 (Debian's
//                              libconcurrentqueue-dev), with a producer and a consumer token per
//                              thread; FIFO per producer only (its documentation: no global
//                              order), and native bulk operations
//   boost.lockfree_queue       Boost 1.74 boost::lockfree::queue: the Michael-Scott queue with
//                              tagged pointers and a free list (nodes are recycled, never freed
//                              until the queue is destroyed)
//   libcds.ms_queue            libcds 2.3.3 MSQueue (Michael & Scott, PODC 1996), libcds HP
//   libcds.basket_queue        libcds 2.3.3 BasketQueue (Hoffman, Shalev & Shavit, OPODIS 2007), libcds HP
//   libcds.fc_queue            libcds 2.3.3 FCQueue: a std::deque under flat combining (Hendler et al., SPAA 2010)
//   libcds.segmented_queue     libcds 2.3.3 SegmentedQueue (Afek, Korland & Yanovsky, OPODIS 2010):
//                              quasi-linearizable, a dequeue takes any item of the first segment
//                              (quasi factor: the queue's thread count rounded up to a power of
//                              2), so it reorders items: `relaxed`
//
// Each is used as its documentation says, with its defaults (no item counters or statistics
// beyond what a default instance keeps). None has a quiescent iteration but oneTBB's, so what is
// left at the end of a trial is drained by dequeues on the validating thread.
#pragma once

#include <boost/lockfree/queue.hpp>
#include <cds/container/basket_queue.h>
#include <cds/container/fcqueue.h>
#include <cds/container/msqueue.h>
#include <cds/container/segmented_queue.h>
#include <concurrentqueue/concurrentqueue.h>
#include <oneapi/tbb/concurrent_queue.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench/adapters/libcds_sets.hpp"  // LibcdsSession

namespace cdsb::bench::peers {

// oneTBB's concurrent_queue. Linearizable as a FIFO queue is what lincheck is asked to check
// (its documentation promises FIFO order for a single thread only; see bench/registry/peers.cpp).
class TbbConcurrentQueue {
 public:
  explicit TbbConcurrentQueue(int) {}
  void enqueue(int, std::uint64_t v) { q_.push(v); }
  std::optional<std::uint64_t> dequeue(int) {
    std::uint64_t v = 0;  // written by a successful pop
    if (q_.try_pop(v)) return v;
    return std::nullopt;
  }
  template <class Fn>  // quiescent: front to back
  void for_each_item(Fn&& fn) const {
    for (auto it = q_.unsafe_begin(); it != q_.unsafe_end(); ++it) fn(*it);
  }

 private:
  tbb::concurrent_queue<std::uint64_t> q_;
};

// moodycamel::ConcurrentQueue with a producer and a consumer token per thread (its fast path).
// Items of one producer are dequeued in the order it enqueued them; items of different
// producers in no particular order, and a dequeue may answer empty while another producer's
// sub-queue holds items: FIFO per producer, not a linearizable queue. Its bulk operations are
// native batches: enqueue_bulk places a batch contiguously in the producer's sub-queue, and
// try_dequeue_bulk takes up to max items but may return fewer while the queue holds more.
class MoodycamelConcurrentQueue {
 public:
  static constexpr std::string_view order = "per_producer_fifo";

  explicit MoodycamelConcurrentQueue(int max_threads) {
    producers_.reserve(static_cast<std::size_t>(max_threads));
    consumers_.reserve(static_cast<std::size_t>(max_threads));
    for (int t = 0; t < max_threads; ++t) {
      producers_.emplace_back(q_);
      consumers_.emplace_back(q_);
    }
  }
  void enqueue(int tid, std::uint64_t v) {
    if (!q_.enqueue(producers_[static_cast<std::size_t>(tid)], v)) throw std::bad_alloc();
  }
  std::optional<std::uint64_t> dequeue(int tid) {
    std::uint64_t v = 0;  // written by a successful pop
    if (q_.try_dequeue(consumers_[static_cast<std::size_t>(tid)], v)) return v;
    return std::nullopt;
  }
  void enqueue_batch(int tid, std::span<const std::uint64_t> items) {
    if (!q_.enqueue_bulk(producers_[static_cast<std::size_t>(tid)], items.data(), items.size())) throw std::bad_alloc();
  }
  std::size_t dequeue_batch(int tid, std::size_t max, std::uint64_t* out) {
    return q_.try_dequeue_bulk(consumers_[static_cast<std::size_t>(tid)], out, max);
  }

 private:
  moodycamel::ConcurrentQueue<std::uint64_t> q_;
  // Tokens name their queue: built after it, destroyed before it.
  std::vector<moodycamel::ProducerToken> producers_;
  std::vector<moodycamel::ConsumerToken> consumers_;
};

// Boost.Lockfree's queue: node-based, unbounded (push takes a node from its free list, or
// allocates one); its initial free list holds 128 nodes.
class BoostLockfreeQueue {
 public:
  explicit BoostLockfreeQueue(int) : q_(128) {}
  void enqueue(int, std::uint64_t v) {
    if (!q_.push(v)) throw std::bad_alloc();
  }
  std::optional<std::uint64_t> dequeue(int) {
    std::uint64_t v = 0;  // written by a successful pop
    if (q_.pop(v)) return v;
    return std::nullopt;
  }

 private:
  boost::lockfree::queue<std::uint64_t> q_;
};

// A libcds queue Q (container::MSQueue, BasketQueue, SegmentedQueue on libcds's Hazard
// Pointers, or FCQueue) with the session, thread attachment and thread bound its collector
// needs (libcds_sets.hpp says how libcds is set up). FCQueue needs no collector, but its
// publication records live in the same thread data, so it attaches the same way.
template <class Q, std::string_view const& Order>
class LibcdsQueue {
 public:
  static constexpr std::string_view order = Order;

  // SegmentedQueue's quasi factor: the thread count, rounded up to a power of 2 (at least 2).
  explicit LibcdsQueue(int max_threads)
      : session_(LibcdsSession::Params{LibcdsSession::Gc::hp, hazard_pointers(), max_threads + 1, 0}) {
    if constexpr (std::is_constructible_v<Q, std::size_t>) q_.emplace(std::bit_ceil(static_cast<std::size_t>(std::max(2, max_threads))));
    else q_.emplace();
  }

  void enqueue(int, std::uint64_t v) {
    if (!q_->enqueue(v)) throw std::bad_alloc();
  }
  std::optional<std::uint64_t> dequeue(int) {
    std::uint64_t v = 0;  // written by a successful pop
    if (q_->dequeue(v)) return v;
    return std::nullopt;
  }
  void thread_init(int) { LibcdsSession::attach_thread(); }
  void thread_exit(int) { LibcdsSession::detach_thread(); }

 private:
  static std::size_t hazard_pointers() {
    // Read by value: SegmentedQueue's count is a static const with no definition to bind a reference to.
    if constexpr (requires { Q::c_nHazardPtrCount; }) return std::max(std::size_t{8}, std::size_t{Q::c_nHazardPtrCount});
    else return 8;
  }

  LibcdsSession session_;  // first: attached before the queue is built, detached after it is gone
  std::optional<Q> q_;     // built in place (libcds's queues do not move)
};

inline constexpr std::string_view fifo_order = "fifo", relaxed_order = "relaxed";

// libcds 2.3.3's SegmentedQueue allocates a segment together with its cells (sizeof(segment) +
// quasi factor x sizeof(cell) bytes, intrusive/segmented_queue.h:421) but frees it as one
// segment (cds::details::Allocator::Delete): a sized delete with the wrong size, which ASan
// reports (new-delete-type-mismatch) and which a size-class allocator's sized free (jemalloc's
// sdallocx, under --malloc jemalloc) would take at its word. Its segments come from this
// allocator, which frees without a size; everything else is as shipped.
template <class T>
struct UnsizedFreeAllocator {
  using value_type = T;
  UnsizedFreeAllocator() = default;
  template <class U>
  UnsizedFreeAllocator(const UnsizedFreeAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }
  template <class U>
  bool operator==(const UnsizedFreeAllocator<U>&) const noexcept { return true; }
};
struct SegmentedQueueTraits : cds::container::segmented_queue::traits {
  using allocator = UnsizedFreeAllocator<int>;
};

using LibcdsMsQueue = LibcdsQueue<cds::container::MSQueue<cds::gc::HP, std::uint64_t>, fifo_order>;
using LibcdsBasketQueue = LibcdsQueue<cds::container::BasketQueue<cds::gc::HP, std::uint64_t>, fifo_order>;
using LibcdsFcQueue = LibcdsQueue<cds::container::FCQueue<std::uint64_t>, fifo_order>;
using LibcdsSegmentedQueue =
    LibcdsQueue<cds::container::SegmentedQueue<cds::gc::HP, std::uint64_t, SegmentedQueueTraits>, relaxed_order>;

}  // namespace cdsb::bench::peers
