// Batch queue: ours, for the dedup study's open question (Feldman et al., SPLASH 2013: its
// lock-free queues lost to PARSEC's locked ring because only the ring moved 20 items per
// synchronisation). It answers it as BQ does (Milman, Kogan, Lev, Luchangco & Petrank, SPAA
// 2018: a batch applied to a Michael-Scott-like list with about one shared access), with
// batches that are themselves single linearizable operations, and with items stored in
// arrays rather than one node each.
//
// A Michael-Scott list of segments. A segment holds the items of one enqueue_batch (up to 64;
// a larger batch is a chain of segments built privately), in an array, with its count; its
// size class is the power of two at or above the count. enqueue_batch links its segment (or
// chain) after the last segment with one CAS on the last segment's null link, then swings tail
// (any thread that finds tail lagging swings it first). The head is a pair (segment, index of
// the next item in it), changed by one double-width CAS (platform/dwcas.hpp): dequeue_batch(max)
// reads up to max items from the head's position onwards, across segments, then moves the head
// past them with that one CAS, and retires the segments it moved past. A single enqueue or
// dequeue is a batch of one.
//
// Unbounded. Linearization points: enqueue_batch at the CAS that links its segment (its items
// are contiguous and in order: they are one segment or one chain); dequeue_batch that returns
// max items at its successful head CAS; one that returns fewer (or none) at its read of the
// null link that ended its walk. The head was then the position it read (the CAS that follows
// succeeds only if the head did not move; the empty answer re-reads it), and the items walked
// were the whole queue; between that read and the CAS only enqueues can take effect (a dequeue
// must move the head), and they do not see the items taken. So dequeue_batch(max) returns fewer
// than max items only if the queue held fewer at its linearization point. Progress: lock-free
// (a CAS fails only because another operation's succeeded).
//
// Reclamation: whole-operation reclaimers only (ebr, none): a dequeue walks segments it reached
// through links, and with EBR a position read from the head stays dereferenceable for the
// guard's life, so the head's double-word CAS has no ABA. A segment is retired by the dequeue
// whose CAS moved the head past it; tail is swung past a segment before the head passes it,
// so no segment tail names is ever retired.
//
// Memory orders: the link CAS is release (publishes the segment's count and items), the loads of
// links and of tail acquire; the head's double-width CAS is x86's locked cmpxchg16b, outside the
// C++ memory model (platform/dwcas.hpp): its ordering is x86-TSO's, and its words are read with
// acquire loads (a torn read only makes the CAS fail or the empty answer retry).
// Progress note: with producers appending as fast as it walks, a dequeue_batch of a large max
// can chase the tail and retry (each retry re-reads its items): lock-free, not starvation-free.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/dwcas.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/queue/concepts.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb {

template <reclaim::WholeOperationReclaimer R>
class BatchQueue {
  static constexpr std::uint32_t max_segment_items = 64;

  struct Segment : R::NodeBase {
    std::atomic<Segment*> next{nullptr};
    std::uint64_t* items = nullptr;  // its SegmentOf's storage
    std::uint32_t count = 0;         // items, written before the segment is published
    std::uint32_t size_class = 0;    // log2 of its capacity: which SegmentOf to destroy
  };
  template <std::uint32_t Capacity>
  struct SegmentOf : Segment {
    SegmentOf() { this->items = storage; }  // user-provided: the storage is not zeroed
    std::uint64_t storage[Capacity];
  };

 public:
  using reclaimer_type = R;
  static constexpr int hazard_slots = 0;
  static constexpr std::size_t segment_header_bytes = sizeof(SegmentOf<1>) - sizeof(std::uint64_t);

  static std::string unavailable_reason() {
    return dwcas_available() ? "" : "it needs double-width CAS (cmpxchg16b), which this CPU lacks";
  }

  explicit BatchQueue(int max_threads, reclaim::ReclaimOptions options = {}) : reclaimer_(max_threads, hazard_slots, options) {
    Segment* dummy = make_segment(0, 0);
    head_.lo.store(reinterpret_cast<std::uint64_t>(dummy), std::memory_order_relaxed);
    head_.hi.store(0, std::memory_order_relaxed);
    tail_->store(dummy, std::memory_order_relaxed);
  }
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;
  ~BatchQueue() {
    for (Segment* s = head_segment(); s;) {
      Segment* next = s->next.load(std::memory_order_relaxed);
      destroy(0, s, false);
      s = next;
    }
  }

  // Linearizable (at the CAS that links it); lock-free; ebr, none.
  void enqueue(int tid, std::uint64_t v) { enqueue_batch(tid, std::span<const std::uint64_t>(&v, 1)); }

  // Linearizable (at the CAS that links its segments: the items are contiguous, in order);
  // lock-free; ebr, none.
  void enqueue_batch(int tid, std::span<const std::uint64_t> items) {
    if (items.empty()) return;
    auto guard = reclaimer_.enter(tid);
    // The chain, built privately: segments of up to 64 items.
    Segment* first = nullptr;
    Segment* last = nullptr;
    for (std::size_t at = 0; at < items.size(); at += max_segment_items) {
      const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(max_segment_items, items.size() - at));
      Segment* s = make_segment(tid, n);
      std::copy_n(items.data() + at, n, s->items);
      if (last) last->next.store(s, std::memory_order_relaxed);  // published by the link CAS below
      else first = s;
      last = s;
    }
    for (;;) {
      Segment* end = tail_->load(std::memory_order_acquire);
      Segment* next = end->next.load(std::memory_order_acquire);
      if (next) {
        tail_->compare_exchange_strong(end, next, std::memory_order_release, std::memory_order_relaxed);  // help
        continue;
      }
      CDSB_INTERLEAVE("bq.enqueue.found_last");
      // release: publishes the chain's counts, items and inner links.
      if (end->next.compare_exchange_strong(next, first, std::memory_order_release, std::memory_order_relaxed)) {
        tail_->compare_exchange_strong(end, last, std::memory_order_release, std::memory_order_relaxed);
        return;
      }
    }
  }

  // Linearizable (see the header); lock-free; ebr, none.
  std::optional<std::uint64_t> dequeue(int tid) {
    std::uint64_t v;
    return dequeue_batch(tid, 1, &v) ? std::optional<std::uint64_t>(v) : std::nullopt;
  }

  // Takes up to max items into out, front first; fewer only if the queue held fewer at its
  // linearization point. Linearizable (see the header); lock-free; ebr, none.
  std::size_t dequeue_batch(int tid, std::size_t max, std::uint64_t* out) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      // The head's two words, each read atomically; a torn pair fails the CAS below.
      std::uint64_t from_segment = head_.lo.load(std::memory_order_acquire);
      std::uint64_t from_index = head_.hi.load(std::memory_order_acquire);
      Segment* const first = reinterpret_cast<Segment*>(from_segment);
      Segment* s = first;
      std::uint64_t i = from_index;
      std::size_t n = 0;
      while (n < max) {
        if (i >= s->count) {
          Segment* next = s->next.load(std::memory_order_acquire);
          if (!next) break;
          // tail_ past s before the head passes it: no segment tail_ names is retired. (A load
          // first: the CAS, a locked write, only where tail_ lags at s.)
          if (Segment* lagging = s; tail_->load(std::memory_order_acquire) == s)
            tail_->compare_exchange_strong(lagging, next, std::memory_order_release, std::memory_order_relaxed);
          s = next;
          i = 0;
          continue;
        }
        const std::size_t take = std::min<std::size_t>(max - n, s->count - i);
        std::copy_n(s->items + i, take, out + n);
        n += take;
        i += take;
      }
      if (n == 0) {
        // Empty at the null link read, if the head was still where we read it then.
        if (head_.lo.load(std::memory_order_acquire) == from_segment && head_.hi.load(std::memory_order_acquire) == from_index)
          return 0;
        continue;
      }
      CDSB_INTERLEAVE("bq.dequeue.walked");  // items read, head not yet moved
      if (dwcas(head_, from_segment, from_index, reinterpret_cast<std::uint64_t>(s), i)) {
        // Only this dequeue moved the head past them: it retires them. (The mutant frees them
        // at once, under a dequeue that may still read their items.)
        for (Segment* gone = first; gone != s;) {
          Segment* next = gone->next.load(std::memory_order_relaxed);
          destroy(tid, gone, !CDSB_MUTANT("bq.free_at_once"));
          gone = next;
        }
        return n;
      }
    }
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  template <class Fn>  // front to back
  void for_each_item(Fn&& fn) const {
    std::uint64_t i = head_.hi.load(std::memory_order_relaxed);
    for (const Segment* s = head_segment(); s; s = s->next.load(std::memory_order_relaxed), i = 0)
      for (; i < s->count; ++i) fn(s->items[i]);
  }
  std::string check_invariants() const {
    const Segment* s = head_segment();
    if (head_.hi.load(std::memory_order_relaxed) > s->count) return "the head's index is past its segment's items";
    while (s->next.load(std::memory_order_relaxed)) {
      s = s->next.load(std::memory_order_relaxed);
      if (s->count == 0 || s->count > (1u << s->size_class)) return "a linked segment's count is outside its size class";
    }
    return s == tail_->load(std::memory_order_relaxed) ? "" : "tail is not the last segment";
  }
  std::size_t memory_bytes() const {
    std::size_t bytes = sizeof(*this);
    for (const Segment* s = head_segment(); s; s = s->next.load(std::memory_order_relaxed))
      bytes += segment_header_bytes + (std::size_t{1} << s->size_class) * sizeof(std::uint64_t);
    return bytes;
  }
  StatsReport stats() const { return reclaimer_.stats(); }

 private:
  Segment* head_segment() const { return reinterpret_cast<Segment*>(head_.lo.load(std::memory_order_relaxed)); }

  // A segment for n items (n <= 64), of the smallest size class that holds them.
  Segment* make_segment(int tid, std::uint32_t n) {
    const auto size_class = static_cast<std::uint32_t>(std::bit_width(std::max<std::uint32_t>(n, 1) - 1));
    Segment* s = with_class(size_class, [&]<std::uint32_t C>() -> Segment* { return reclaimer_.template allocate<SegmentOf<C>>(tid); });
    s->count = n;
    s->size_class = size_class;
    return s;
  }
  // Retires (or, at teardown, frees) a segment as the type it was allocated as.
  void destroy(int tid, Segment* s, bool retire) {
    with_class(s->size_class, [&]<std::uint32_t C>() {
      auto* typed = static_cast<SegmentOf<C>*>(s);
      if (retire) reclaimer_.retire(tid, typed);
      else reclaimer_.deallocate(tid, typed);
      return 0;
    });
  }
  template <class Fn>
  static auto with_class(std::uint32_t size_class, Fn&& fn) {
    switch (size_class) {
      case 0: return fn.template operator()<1>();
      case 1: return fn.template operator()<2>();
      case 2: return fn.template operator()<4>();
      case 3: return fn.template operator()<8>();
      case 4: return fn.template operator()<16>();
      case 5: return fn.template operator()<32>();
      default: return fn.template operator()<64>();
    }
  }

  alignas(false_sharing_range) DoubleWord head_;  // (segment, index of its next item): cmpxchg16b
  Padded<std::atomic<Segment*>> tail_{nullptr};
  R reclaimer_;
};

static_assert(ConcurrentQueue<BatchQueue<reclaim::Archetype<true>>> && HasNativeBatch<BatchQueue<reclaim::Archetype<true>>>);

}  // namespace cdsb
