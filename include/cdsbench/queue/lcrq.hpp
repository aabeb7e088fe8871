// LCRQ: A. Morrison and Y. Afek, "Fast Concurrent Queues for x86 Processors", PPoPP 2013.
// Written once against the reclamation interface (reclaim/reclaimer.hpp); a ring is the unit
// of reclamation.
//
// CRQ, one ring of 2^RingOrder cells, each a pair of words changed together by double-width
// CAS (platform/dwcas.hpp: cmpxchg16b): (safe bit | index, value). A cell with index i serves
// the enqueue and the dequeue that draw ticket i from the ring's tail and head counters, which
// they advance by fetch-and-add: the contention is one FAA per operation rather than a CAS
// retry loop. An enqueue with ticket t stores its value in cell t mod R if the cell is empty,
// its index is at most t, and it is safe (or no dequeuer has passed t yet); otherwise it draws
// another ticket. A dequeue with ticket h takes the value of a cell whose index is h (and
// advances the index to h + R, the cell's next round); finding the cell empty it advances the
// index anyway, so the enqueue with ticket h fails there; finding an older round's value it
// marks the cell unsafe. A dequeue that finds tail <= h + 1 returns empty after fixState moves
// tail up to head (dequeuers overshoot head on an empty ring). The tail's top bit closes the
// ring: an enqueue closes it when the ring is full (t - head >= R) or it failed `starvation_limit`
// times (a livelock with dequeuers), and no enqueue enters a closed ring.
//
// LCRQ, a Michael-Scott list of CRQs: an enqueue that finds its ring closed appends a new ring
// holding its value; a dequeue that finds its ring empty and a successor moves head to it (the
// ring is then retired) after trying the ring once more: an enqueue whose ticket was drawn
// before the close may have landed in the meantime.
//
// Unbounded (a ring per 2^RingOrder items in flight); values must not be `empty_value`
// (UINT64_MAX): it marks an empty cell. Linearizable, but with no fixed linearization point in
// the operation's own steps: within a ring, operations are ordered by their tickets (an
// enqueue with ticket 0 that stores its value after the enqueue with ticket 1 still precedes
// it, and the dequeues return them in ticket order); an empty dequeue
// comes after the dequeues whose tickets precede its own, however late those take their items.
// Rings are ordered by the list. Progress: lock-free (a ticket fails only because another
// operation's ticket moved the cell on; the starvation limit bounds an enqueue's tries in one
// ring, and a closed ring is left for a new one).
//
// Memory orders: the counters' FAAs and the cell CASs are sequentially consistent (locked
// instructions on x86, which this algorithm needs: cmpxchg16b; stronger than needed, at no cost
// there: every decision rests on the order of one location, but for the enqueue's head <= t
// check on an unsafe cell, which release/acquire through the cell would cover). The cell's
// double-width CAS is outside the C++ memory model (platform/dwcas.hpp): its ordering is x86's
// locked instructions' (x86-TSO), not a C++ guarantee. The ring links follow the
// Michael-Scott queue's: release CAS publishes a new ring, acquire loads (protect) read it.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/dwcas.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/queue/concepts.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb {

template <reclaim::Reclaimer R, unsigned RingOrder = 12>
class Lcrq {
  static_assert(RingOrder >= 1 && RingOrder <= 24);
  static constexpr std::uint64_t ring_size = std::uint64_t{1} << RingOrder;
  static constexpr std::uint64_t index_mask = ring_size - 1;
  static constexpr std::uint64_t safe_bit = std::uint64_t{1} << 63;    // in a cell's first word
  static constexpr std::uint64_t closed_bit = std::uint64_t{1} << 63;  // in a ring's tail
  static constexpr int starvation_limit = 64;

 public:
  static constexpr std::uint64_t empty_value = ~std::uint64_t{0};

 private:
  struct Ring : R::NodeBase {
    // A new ring holding `first` at index 0 (an enqueue's, when the last ring closed), or empty.
    explicit Ring(std::optional<std::uint64_t> first) {
      for (std::uint64_t i = 0; i < ring_size; ++i) {
        cells[i].lo.store(safe_bit | i, std::memory_order_relaxed);
        cells[i].hi.store(empty_value, std::memory_order_relaxed);
      }
      if (first) {
        cells[0].hi.store(*first, std::memory_order_relaxed);
        tail.store(1, std::memory_order_relaxed);
      }
    }

    // The CRQ's enqueue: false when the ring is closed (the value was not stored).
    bool enqueue(std::uint64_t v, std::uint64_t& closes) {
      for (int tries = 1;; ++tries) {
        const std::uint64_t t = tail.fetch_add(1, std::memory_order_seq_cst);
        if (t & closed_bit) return false;
        DoubleWord& cell = cells[t & index_mask];
        std::uint64_t lo = cell.lo.load(std::memory_order_seq_cst), val = cell.hi.load(std::memory_order_seq_cst);
        const std::uint64_t index = lo & ~safe_bit;
        // The cell is free for ticket t: empty, not of a later round, and safe or not yet
        // passed by a dequeuer (head <= t: the dequeuer with ticket t will look at it).
        if (val == empty_value && index <= t && ((lo & safe_bit) || head.load(std::memory_order_seq_cst) <= t)) {
          CDSB_INTERLEAVE("lcrq.enqueue.ticket");  // a free cell found for ticket t, not yet claimed
          if (dwcas(cell, lo, val, safe_bit | t, v)) return true;
        }
        const std::uint64_t h = head.load(std::memory_order_seq_cst);
        // Signed: dequeuers may have overshot the tail (h > t).
        if (static_cast<std::int64_t>(t - h) >= static_cast<std::int64_t>(ring_size) || tries >= starvation_limit) {
          tail.fetch_or(closed_bit, std::memory_order_seq_cst);
          ++closes;
          return false;
        }
      }
    }

    // The CRQ's dequeue: the front value, or nullopt when the ring is empty.
    std::optional<std::uint64_t> dequeue() {
      for (;;) {
        const std::uint64_t h = head.fetch_add(1, std::memory_order_seq_cst);
        DoubleWord& cell = cells[h & index_mask];
        for (;;) {
          std::uint64_t lo = cell.lo.load(std::memory_order_seq_cst), val = cell.hi.load(std::memory_order_seq_cst);
          const std::uint64_t index = lo & ~safe_bit, safe = lo & safe_bit;
          if (index > h) break;  // a later round already: this ticket has nothing here (indices only grow)
          if (val != empty_value) {
            if (index == h) {
              const std::uint64_t taken = val;
              if (dwcas(cell, lo, val, safe | (h + ring_size), empty_value)) return taken;  // dequeue transition
            } else if (dwcas(cell, lo, val, index, val)) {
              break;  // an older round's value its dequeuer has not taken yet: unsafe, and move on
            }
          } else if (dwcas(cell, lo, val, safe | (h + ring_size), empty_value)) {
            break;  // empty transition: the enqueue with ticket h will fail here
          }
        }
        const std::uint64_t t = tail.load(std::memory_order_seq_cst) & ~closed_bit;
        if (t <= h + 1) {
          fix_state();
          return std::nullopt;
        }
      }
    }

    // After dequeuers overshot an empty ring: tail up to head, so enqueues do not draw tickets
    // their cells' dequeuers have passed.
    void fix_state() {
      for (;;) {
        std::uint64_t t = tail.load(std::memory_order_seq_cst);
        const std::uint64_t h = head.load(std::memory_order_seq_cst);
        if (tail.load(std::memory_order_seq_cst) != t) continue;
        if (h <= t) return;  // a closed tail is larger than any head: nothing to fix
        if (tail.compare_exchange_strong(t, h, std::memory_order_seq_cst)) return;
      }
    }

    alignas(false_sharing_range) std::atomic<std::uint64_t> head{0};
    alignas(false_sharing_range) std::atomic<std::uint64_t> tail{0};
    alignas(false_sharing_range) std::atomic<Ring*> next{nullptr};
    alignas(false_sharing_range) DoubleWord cells[ring_size];
  };

 public:
  using reclaimer_type = R;
  static constexpr int hazard_slots = 1;
  static constexpr std::size_t ring_bytes = sizeof(Ring);

  // "" where it can run; else why not (the harness refuses it with this).
  static std::string unavailable_reason() {
    return dwcas_available() ? "" : "it needs double-width CAS (cmpxchg16b), which this CPU lacks";
  }

  explicit Lcrq(int max_threads, reclaim::ReclaimOptions options = {})
      : reclaimer_(max_threads, hazard_slots, options), stats_(max_threads, {{"rings_closed", StatKind::counter}}) {
    Ring* ring = reclaimer_.template allocate<Ring>(0, std::nullopt);
    head_->store(ring, std::memory_order_relaxed);
    tail_->store(ring, std::memory_order_relaxed);
  }
  Lcrq(const Lcrq&) = delete;
  Lcrq& operator=(const Lcrq&) = delete;
  ~Lcrq() {
    for (Ring* r = head_->load(std::memory_order_relaxed); r;) {
      Ring* next = r->next.load(std::memory_order_relaxed);
      reclaimer_.deallocate(0, r);
      r = next;
    }
  }

  // Linearizable (ordered by its ticket, or by the CAS that links a new ring holding it);
  // lock-free; every reclaimer. v must not be empty_value.
  void enqueue(int tid, std::uint64_t v) {
    assert(v != empty_value && "LCRQ: empty_value marks an empty cell; it cannot be enqueued");
    auto guard = reclaimer_.enter(tid);
    std::uint64_t closes = 0;
    for (;;) {
      // protect: acquire, pairs with the release CAS that linked the ring; with HP the ring
      // stays allocated while we use it (a ring tail_ names is not retired: dequeue swings
      // tail_ past a ring before it moves head_ past it).
      Ring* ring = reclaimer_.protect(tid, 0, *tail_);
      if (Ring* next = ring->next.load(std::memory_order_acquire)) {
        tail_->compare_exchange_strong(ring, next, std::memory_order_release, std::memory_order_relaxed);  // help
        continue;
      }
      const bool stored = ring->enqueue(v, closes);
      if (closes) stats_.add(tid, rings_closed, closes);
      closes = 0;
      if (stored) return;
      // The ring is closed: append a new one that already holds v, unless another enqueue
      // already did (a 64 KiB ring built only to be thrown away).
      if (ring->next.load(std::memory_order_acquire)) continue;
      Ring* fresh = reclaimer_.template allocate<Ring>(tid, v);
      Ring* expected = nullptr;
      // release: publishes the new ring's cells and counters to whoever follows the link.
      if (ring->next.compare_exchange_strong(expected, fresh, std::memory_order_release, std::memory_order_relaxed)) {
        tail_->compare_exchange_strong(ring, fresh, std::memory_order_release, std::memory_order_relaxed);
        return;
      }
      reclaimer_.deallocate(tid, fresh);  // another enqueue appended one first: never published
    }
  }

  // Linearizable (ordered by its ticket; empty when its ring was empty in ticket order and had
  // no successor); lock-free; every reclaimer.
  std::optional<std::uint64_t> dequeue(int tid) {
    auto guard = reclaimer_.enter(tid);
    for (;;) {
      Ring* ring = reclaimer_.protect(tid, 0, *head_);  // acquire, as in enqueue
      if (const auto v = ring->dequeue()) return v;
      Ring* next = ring->next.load(std::memory_order_acquire);
      if (!next) return std::nullopt;
      // Closed and followed by another ring; an enqueue whose ticket preceded the close may
      // have stored its value since our dequeue found the ring empty: look once more.
      if (const auto v = ring->dequeue()) return v;
      CDSB_INTERLEAVE("lcrq.dequeue.leaving_ring");  // the ring found empty twice, head not yet moved
      // tail_ first, so no ring tail_ names is ever retired (enqueue's protect relies on it).
      Ring* last = ring;
      tail_->compare_exchange_strong(last, next, std::memory_order_release, std::memory_order_relaxed);
      // acq_rel, as the Michael-Scott queue's head CAS: the unlink precedes the retire's checks.
      if (head_->compare_exchange_strong(ring, next, std::memory_order_acq_rel, std::memory_order_relaxed))
        reclaimer_.retire(tid, ring);
    }
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  template <class Fn>  // front to back
  void for_each_item(Fn&& fn) const {
    for (const Ring* r = head_->load(std::memory_order_relaxed); r; r = r->next.load(std::memory_order_relaxed)) {
      const std::uint64_t h = r->head.load(std::memory_order_relaxed);
      const std::uint64_t t = r->tail.load(std::memory_order_relaxed) & ~closed_bit;
      for (std::uint64_t i = h; i < t; ++i) {
        const DoubleWord& cell = r->cells[i & index_mask];
        if ((cell.lo.load(std::memory_order_relaxed) & ~safe_bit) == i && cell.hi.load(std::memory_order_relaxed) != empty_value)
          fn(cell.hi.load(std::memory_order_relaxed));
      }
    }
  }
  // "" when tail_ is the last ring, reachable from head_, and every ring but the last is closed.
  std::string check_invariants() const {
    const Ring* r = head_->load(std::memory_order_relaxed);
    for (; r->next.load(std::memory_order_relaxed); r = r->next.load(std::memory_order_relaxed))
      if (!(r->tail.load(std::memory_order_relaxed) & closed_bit)) return "a ring with a successor is not closed";
    return r == tail_->load(std::memory_order_relaxed) ? "" : "tail is not the last ring";
  }
  std::size_t memory_bytes() const {
    std::size_t rings = 0;
    for (const Ring* r = head_->load(std::memory_order_relaxed); r; r = r->next.load(std::memory_order_relaxed)) ++rings;
    return sizeof(*this) + rings * sizeof(Ring);
  }
  StatsReport stats() const {
    StatsReport r = reclaimer_.stats();
    r.append(stats_.report());
    return r;
  }

 private:
  enum Stat { rings_closed };

  Padded<std::atomic<Ring*>> head_{nullptr};
  Padded<std::atomic<Ring*>> tail_{nullptr};
  R reclaimer_;
  UserStats stats_;
};

static_assert(ConcurrentQueue<Lcrq<reclaim::Archetype<false>>>);

}  // namespace cdsb
