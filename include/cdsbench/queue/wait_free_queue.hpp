// A wait-free queue: C. Yang and J. Mellor-Crummey, "A Wait-free Queue as Fast as
// Fetch-and-Add", PPoPP 2016 (its algorithm; the segment reclamation is this file's own).
//
// An infinite array of cells, emulated by a list of segments of 2^SegmentOrder cells, and two
// counters that hand out cell indices by fetch-and-add: T for enqueues, H for dequeues.
// Fast path: an enqueue draws i from T and CASes its value into cell i (bottom -> v); a dequeue
// draws i from H and takes the value in cell i, or, finding none after a short spin, marks the
// cell unusable (bottom -> top), so the enqueue that drew i draws again. After FastTries failed
// tries an operation publishes a request in its handle and every thread helps it:
// - an enqueue request (its value and pending|id, id a cell it failed in) is placed in the
//   `enq` field of a cell a dequeuer marked unusable, at index >= id, by that dequeuer or by the
//   enqueuer itself; one CAS on the request's state, pending|id -> cell, claims it for one cell,
//   whose value whoever claimed or saw the claim then writes (commit, which moves T past it).
//   The field names the request by its handle and its id, not by the handle's request struct,
//   which the handle reuses: the reference code names the struct, and a stale placement there
//   can take the handle's next request into a cell every dequeue has passed (a lost item;
//   chaoran/fast-wait-free-queue issue 14);
// - a dequeue request (its id, a cell it failed in, and pending|announced) is completed by
//   searching the cells after id for a candidate (one holding a value no dequeue claimed, or one
//   that proves the queue empty: unusable for good, T <= index), announcing it in the
//   request's state, and claiming the cell's `deq` field for the request.
// A dequeuer that marks a cell unusable looks at one peer's enqueue request, and a dequeue that
// took a value helps one peer's dequeue request, the peers taken round robin.
//
// Unbounded. Values must be below `top` (UINT64_MAX - 1): bottom and top mark cells. At most
// `max_handles` (4,096) threads, and 2^52 cells drawn in a queue's life.
// Linearizable (the paper's §5): an enqueue at the index of its cell, which T passes before
// the value can be returned (commit); a dequeue that returns a value at its cell's index, an
// empty dequeue at the moment T <= its index while its cell was unusable. Progress: wait-free.
// An operation makes at most FastTries fast-path tries. A published enqueue request is written
// into a cell once each other thread's round robin reaches it (at most n - 1 of its helps; a
// helper that fails to place it keeps trying it at its next cell), so within O(n^2) cells
// marked unusable after it was published; a dequeue request is completed by its own search or
// by helpers, which move on to a later candidate only when another dequeue took the one
// announced; each search is bounded by the cells that operations of the n threads can claim
// ahead of it (the paper's argument).
//
// Reclamation (this file's): a segment is freed once no operation can reach it. Each handle
// publishes a floor while it runs an operation, the id of the segment it starts from (its
// cached one; when it has none, the first one's), then reads the first segment's id: no segment
// at or after both is freed until the floor is withdrawn. A dequeue that finds the first segment
// `cleanup_lag` segments behind its own takes the cleaner's flag (others skip: no one waits) and
// moves the first segment up to the one holding cell min(T, H), no further than any floor; then
// it frees the segments before the first one and before every floor it reads after moving it.
// Why nothing freed is still reached:
// - an operation starts from its cached segment only if it is at or after the first id read
//   after the floor was published (else from the first segment, read after that), and walks
//   forward only; a cleaner that published an earlier first id frees only below it, one that
//   published a later one read the floor first;
// - a cleaner that missed a handle's floor read T and H before that floor was published, so the
//   handle's cells, drawn from T and H after it, are at or after the cut: the first segment never
//   passes a cell an operation in flight will visit. Dequeue helpers start there, having lowered
//   their floor to the first id (a floor only lowered keeps what it kept).
// A stalled operation keeps the segments after its floor (memory, not others' progress: they
// never wait for it).
//
// Memory orders: sequentially consistent, but for the floor's withdrawal (release: see
// end_operation). The reclamation's argument above is one about a single total order of the
// floors' stores and loads, the first id's store and loads and the counters' fetch-and-adds;
// the cells' protocol is the paper's, stated for sequential consistency. On x86 that costs one
// locked store per operation (raising its floor) beyond the paper's own locked instructions
// (loads are plain; the fetch-and-adds and CASes are locked anyway), and a few on the slow
// paths (a request's publication, a commit).
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/queue/concepts.hpp"

namespace cdsb {

template <unsigned SegmentOrder = 10, int FastTries = 10>
class WaitFreeQueue {
  static_assert(SegmentOrder >= 1 && SegmentOrder <= 16);
  static_assert(FastTries >= 1, "a slow path starts from a cell a fast try failed in");
  static constexpr std::uint64_t segment_cells = std::uint64_t{1} << SegmentOrder;
  static constexpr std::uint64_t bottom = ~std::uint64_t{0};  // a cell that never held a value; help_enq: "empty"
  static constexpr std::uint64_t pending_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t no_id = ~std::uint64_t{0};  // no floor; no cell
  static constexpr int spin_limit = 100;  // a dequeue's wait for the enqueue that drew its index
  static constexpr std::uint64_t cleanup_lag = 2;  // segments left behind before a dequeue frees them
  // A cell's `enq` names the request placed in it by its handle and its id (the cell it failed
  // in: no two requests share one), not by the handle's request struct, which the handle reuses:
  // a visitor claims the request only while it is that one (a stale placement of an earlier
  // request must not take a later one into a cell every dequeue has passed).
  static constexpr unsigned handle_bits = 12;
  static constexpr std::uint64_t no_request = 0, closed = 1;
  static constexpr std::uint64_t placed(int handle, std::uint64_t id) {
    return (id + 1) << handle_bits | static_cast<std::uint64_t>(handle);
  }
  static constexpr int handle_of(std::uint64_t enq) { return static_cast<int>(enq & ((1u << handle_bits) - 1)); }
  static constexpr std::uint64_t id_of(std::uint64_t enq) { return (enq >> handle_bits) - 1; }

 public:
  static constexpr std::uint64_t top = ~std::uint64_t{0} - 1;  // an unusable cell; values must be below it
  static constexpr int max_handles = 1 << handle_bits;

 private:
  struct EnqRequest {
    std::atomic<std::uint64_t> value{0};
    std::atomic<std::uint64_t> state{0};  // pending_bit | the cell it failed in; then the cell it was claimed for
  };
  struct DeqRequest {
    std::atomic<std::uint64_t> id{0};     // the cell it failed in
    std::atomic<std::uint64_t> state{0};  // pending_bit | the announced candidate; then the cell it took
  };
  struct alignas(cache_line_size) Cell {  // a line each: neighbouring indices go to different threads
    std::atomic<std::uint64_t> value{bottom};
    std::atomic<std::uint64_t> enq{no_request};  // no_request, closed (none will use it), or placed(handle, id)
    std::atomic<DeqRequest*> deq{nullptr};  // nullptr, taken_deq (a fast dequeue took it), or a request
  };
  struct Segment {
    explicit Segment(std::uint64_t segment_id) : id(segment_id) {}
    const std::uint64_t id;
    std::atomic<Segment*> next{nullptr};
    Cell cells[segment_cells];
  };
  struct alignas(false_sharing_range) Handle {
    // The owner's alone.
    Segment* enq_segment = nullptr;
    std::uint64_t enq_segment_id = 0;
    Segment* deq_segment = nullptr;
    std::uint64_t deq_segment_id = 0;
    int enq_peer = 0;              // whose enqueue request it looks at next
    std::uint64_t enq_help_id = no_id;  // that peer's request it failed to place, to try again
    int deq_peer = 0;              // whose dequeue request it helps next
    // Shared.
    std::atomic<std::uint64_t> floor{no_id};
    EnqRequest enq_request;
    DeqRequest deq_request;
  };

 public:
  static constexpr std::size_t segment_bytes = sizeof(Segment);

  explicit WaitFreeQueue(int max_threads)
      : threads_(max_threads),
        handles_(std::make_unique<Handle[]>(static_cast<std::size_t>(max_threads))),
        stats_(max_threads, {{"slow_enqueues", StatKind::counter},
                             {"slow_dequeues", StatKind::counter},
                             {"segments_freed", StatKind::counter}}) {
    assert(max_threads >= 1 && max_threads <= max_handles);
    Segment* s = new Segment(0);
    first_->store(s, std::memory_order_relaxed);
    oldest_ = s;
    for (int t = 0; t < threads_; ++t) {
      handles_[t].enq_peer = handles_[t].deq_peer = next_peer(t);
    }
  }
  WaitFreeQueue(const WaitFreeQueue&) = delete;
  WaitFreeQueue& operator=(const WaitFreeQueue&) = delete;
  ~WaitFreeQueue() {
    for (Segment* s = oldest_; s;) {
      Segment* next = s->next.load(std::memory_order_relaxed);
      delete s;
      s = next;
    }
  }

  // Linearizable at its cell's index; wait-free. v must be below top.
  void enqueue(int tid, std::uint64_t v) {
    assert(v < top && "WaitFreeQueue: bottom and top mark cells; they cannot be enqueued");
    Handle& h = handles_[tid];
    Segment* segment =
        start_segment(h.enq_segment, h.enq_segment_id, begin_operation(h, h.enq_segment, h.enq_segment_id));
    std::uint64_t failed_cell = 0;
    bool done = false;
    for (int t = 0; t < FastTries && !done; ++t) done = enqueue_fast(segment, v, failed_cell);
    if (!done) {
      stats_.add(tid, slow_enqueues, 1);
      enqueue_slow(tid, h, segment, v, failed_cell);
    }
    h.enq_segment = segment;
    h.enq_segment_id = segment->id;
    end_operation(h);
  }

  // Linearizable (a value at its cell's index; empty when T <= its index); wait-free.
  std::optional<std::uint64_t> dequeue(int tid) {
    Handle& h = handles_[tid];
    Segment* segment =
        start_segment(h.deq_segment, h.deq_segment_id, begin_operation(h, h.deq_segment, h.deq_segment_id));
    std::uint64_t v = top, failed_cell = 0;
    for (int t = 0; t < FastTries && v == top; ++t) v = dequeue_fast(h, segment, failed_cell);
    if (v == top) {
      stats_.add(tid, slow_dequeues, 1);
      v = dequeue_slow(h, segment, failed_cell);
    }
    if (v != bottom) {
      help_dequeue(h, handles_[h.deq_peer]);
      h.deq_peer = next_peer(h.deq_peer);
    }
    h.deq_segment = segment;
    h.deq_segment_id = segment->id;
    end_operation(h);
    if (v == bottom) return std::nullopt;
    cleanup(tid, h.deq_segment_id);
    return v;
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  template <class Fn>  // front to back
  void for_each_item(Fn&& fn) const {
    const std::uint64_t t = tail_->load(std::memory_order_relaxed);
    const Segment* s = first_->load(std::memory_order_relaxed);
    for (std::uint64_t i = std::max(head_->load(std::memory_order_relaxed), s->id << SegmentOrder); i < t; ++i) {
      while (s && s->id < (i >> SegmentOrder)) s = s->next.load(std::memory_order_relaxed);
      if (!s) return;
      const Cell& c = s->cells[i & (segment_cells - 1)];
      const std::uint64_t v = c.value.load(std::memory_order_relaxed);
      if (v < top && !c.deq.load(std::memory_order_relaxed)) fn(v);
    }
  }
  // "" when no operation is in flight or pending, the first segment is reachable from the oldest
  // and at or before cell min(T, H), and no cell before H holds a value no dequeue took.
  std::string check_invariants() const {
    for (int t = 0; t < threads_; ++t) {
      const Handle& h = handles_[t];
      if (h.floor.load(std::memory_order_relaxed) != no_id) return "a handle still holds a floor";
      if (h.enq_request.state.load(std::memory_order_relaxed) & pending_bit) return "an enqueue request is pending";
      if (h.deq_request.state.load(std::memory_order_relaxed) & pending_bit) return "a dequeue request is pending";
    }
    const Segment* first = first_->load(std::memory_order_relaxed);
    const Segment* s = oldest_;
    while (s && s != first) s = s->next.load(std::memory_order_relaxed);
    if (!s) return "the first segment is not reachable from the oldest";
    const std::uint64_t h = head_->load(std::memory_order_relaxed), t = tail_->load(std::memory_order_relaxed);
    if (first->id > (std::min(h, t) >> SegmentOrder)) return "the first segment is past cell min(T, H)";
    if (first->id != first_id_->load(std::memory_order_relaxed)) return "the first segment's id is not the one published";
    for (std::uint64_t i = first->id << SegmentOrder; i < h; ++i) {
      while (s && s->id < (i >> SegmentOrder)) s = s->next.load(std::memory_order_relaxed);
      if (!s) break;
      const Cell& c = s->cells[i & (segment_cells - 1)];
      if (c.value.load(std::memory_order_relaxed) < top && !c.deq.load(std::memory_order_relaxed))
        return "cell " + std::to_string(i) + ", before the head, holds a value no dequeue took";
    }
    return "";
  }
  std::size_t memory_bytes() const {
    std::size_t segments = 0;
    for (const Segment* s = oldest_; s; s = s->next.load(std::memory_order_relaxed)) ++segments;
    return sizeof(*this) + static_cast<std::size_t>(threads_) * sizeof(Handle) + segments * sizeof(Segment);
  }
  StatsReport stats() const { return stats_.report(); }

 private:
  enum Stat { slow_enqueues, slow_dequeues, segments_freed };

  static bool pending(std::uint64_t state) { return state & pending_bit; }
  static std::uint64_t cell_of(std::uint64_t state) { return state & ~pending_bit; }
  int next_peer(int t) const { return t + 1 == threads_ ? 0 : t + 1; }

  // Publishes the handle's floor, the id of the segment it means to start from (its cached one;
  // the first one's when it has none), and returns the first id read after it. While the floor
  // is up, no segment at or after max(floor, returned id) is freed: a cleaner that published a
  // first id before that read frees only below it; one that published later reads the floor
  // before freeing and frees only below it.
  std::uint64_t begin_operation(Handle& h, const Segment* cached, std::uint64_t cached_id) {
    h.floor.store(cached ? cached_id : first_id_->load(std::memory_order_seq_cst), std::memory_order_seq_cst);
    const std::uint64_t kept = first_id_->load(std::memory_order_seq_cst);
    CDSB_INTERLEAVE("wfq.operation.begun");  // the floor up, no segment touched yet
    return kept;
  }
  // release: the operation's reads of its segments come before a cleaner that reads the floor
  // withdrawn (acquire, in its seq_cst load) frees them.
  static void end_operation(Handle& h) { h.floor.store(no_id, std::memory_order_release); }

  // The cached segment if it is at or after `kept` (begin_operation's first id: then its floor
  // keeps it), else the first one (read after: at or after `kept`, so kept too). The cached one is
  // at or before the cells the handle's next operation draws.
  Segment* start_segment(Segment*& cached, std::uint64_t& cached_id, std::uint64_t kept) {
    if (!cached || cached_id < kept) {
      cached = first_->load(std::memory_order_seq_cst);
      cached_id = cached->id;
    }
    return cached;
  }

  // Cell i, walking forward from `segment` (moved to i's), appending segments as needed.
  // nullptr when `segment` is already past i (only a helper of a request that is over sees it).
  Cell* find_cell(Segment*& segment, std::uint64_t i) {
    const std::uint64_t target = i >> SegmentOrder;
    if (segment->id > target) return nullptr;
    while (segment->id < target) {
      Segment* next = segment->next.load(std::memory_order_seq_cst);
      if (!next) {
        Segment* fresh = new Segment(segment->id + 1);
        if (segment->next.compare_exchange_strong(next, fresh, std::memory_order_seq_cst)) next = fresh;
        else delete fresh;  // another thread appended first; next is its segment
      }
      segment = next;
    }
    return &segment->cells[i & (segment_cells - 1)];
  }
  // For an operation's own cells: always at or after its start segment.
  Cell& own_cell(Segment*& segment, std::uint64_t i) {
    Cell* c = find_cell(segment, i);
    assert(c && "a cell before the operation's start segment");
    return *c;
  }

  static void advance_to(std::atomic<std::uint64_t>& counter, std::uint64_t at_least) {
    std::uint64_t v = counter.load(std::memory_order_seq_cst);
    while (v < at_least && !counter.compare_exchange_weak(v, at_least, std::memory_order_seq_cst)) {}
  }

  bool enqueue_fast(Segment*& segment, std::uint64_t v, std::uint64_t& failed_cell) {
    const std::uint64_t i = tail_->fetch_add(1, std::memory_order_seq_cst);
    Cell& c = own_cell(segment, i);
    CDSB_INTERLEAVE("wfq.enqueue.drew");  // an index drawn, its value not yet in the cell
    std::uint64_t empty = bottom;
    if (c.value.compare_exchange_strong(empty, v, std::memory_order_seq_cst)) return true;
    failed_cell = i;  // a dequeue marked it unusable first
    return false;
  }

  void enqueue_slow(int tid, Handle& h, Segment*& segment, std::uint64_t v, std::uint64_t failed_cell) {
    EnqRequest& r = h.enq_request;
    r.value.store(v, std::memory_order_seq_cst);  // before the state: a helper that sees it pending reads v
    r.state.store(pending_bit | failed_cell, std::memory_order_seq_cst);
    CDSB_INTERLEAVE("wfq.enqueue.published");  // a stalled enqueue: dequeuers place and commit it
    Segment* walker = segment;
    while (pending(r.state.load(std::memory_order_seq_cst))) {
      const std::uint64_t i = tail_->fetch_add(1, std::memory_order_seq_cst);
      Cell& c = own_cell(walker, i);
      std::uint64_t none = no_request;
      if (c.enq.compare_exchange_strong(none, placed(tid, failed_cell), std::memory_order_seq_cst) &&
          c.value.load(std::memory_order_seq_cst) == bottom) {
        // Reserved a cell no dequeue has reached: claim it, unless a helper claimed another one.
        CDSB_INTERLEAVE("wfq.enqueue.reserved");
        std::uint64_t expected = pending_bit | failed_cell;
        r.state.compare_exchange_strong(expected, i, std::memory_order_seq_cst);
        break;
      }
    }
    const std::uint64_t cell = cell_of(r.state.load(std::memory_order_seq_cst));
    CDSB_INTERLEAVE("wfq.enqueue.claimed");  // claimed for `cell`, the value not yet in
    commit(own_cell(segment, cell), v, cell);
  }

  // An enqueue's value into the cell claimed for it; T first moves past the cell, so a dequeue
  // that finds T <= its index never returns empty past a value committed before it.
  void commit(Cell& c, std::uint64_t v, std::uint64_t i) {
    advance_to(*tail_, i + 1);
    c.value.store(v, std::memory_order_seq_cst);
  }

  // What cell i holds for a dequeue, deciding it if it holds nothing yet: a value; top (nothing
  // for this dequeue: try another cell); or bottom (the queue was empty: T <= i).
  std::uint64_t help_enq(Handle& h, Cell& c, std::uint64_t i) {
    std::uint64_t v = c.value.load(std::memory_order_seq_cst);
    for (int spins = 0; v == bottom && spins < spin_limit; ++spins) {
      cpu_relax();
      v = c.value.load(std::memory_order_seq_cst);
    }
    if (v == bottom && c.value.compare_exchange_strong(v, top, std::memory_order_seq_cst)) v = top;
    if (v != top) return v;  // a value (a fast enqueue's, or a committed request's)
    // Unusable for fast enqueues: it serves a slow enqueue's request, or none.
    if (c.enq.load(std::memory_order_seq_cst) == no_request) {
      // One peer's request, round robin; a peer whose request we failed to place is tried again
      // while that request is the same one.
      int p = 0;
      std::uint64_t s = 0;
      for (;;) {
        p = h.enq_peer;
        s = handles_[p].enq_request.state.load(std::memory_order_seq_cst);
        if (h.enq_help_id == no_id || h.enq_help_id == cell_of(s)) break;
        h.enq_help_id = no_id;
        h.enq_peer = next_peer(h.enq_peer);
      }
      std::uint64_t none = no_request;
      if (pending(s) && cell_of(s) <= i &&
          !c.enq.compare_exchange_strong(none, placed(p, cell_of(s)), std::memory_order_seq_cst)) {
        h.enq_help_id = cell_of(s);  // the cell went to another request: this one at our next cell
      } else {
        h.enq_peer = next_peer(h.enq_peer);
      }
      none = no_request;
      c.enq.compare_exchange_strong(none, closed, std::memory_order_seq_cst);  // no request here: none ever
      CDSB_INTERLEAVE("wfq.help_enq.placed");  // a peer's request placed here, or the cell closed
    }
    const std::uint64_t e = c.enq.load(std::memory_order_seq_cst);
    if (e != closed) {
      EnqRequest& r = handles_[handle_of(e)].enq_request;
      std::uint64_t id = id_of(e);
      std::uint64_t s = r.state.load(std::memory_order_seq_cst);
      const std::uint64_t ev = r.value.load(std::memory_order_seq_cst);  // the value of s's request (see below)
      CDSB_INTERLEAVE("wfq.help_enq.read_request");
      if (CDSB_MUTANT("wfq.claim_any_request") && pending(s) && cell_of(s) <= i) id = cell_of(s);  // the reference code's test
      const std::uint64_t read = s;
      // Claim the placed request for this cell if it is still pending; or it was claimed for this
      // cell and its value is not in yet: then the cell is still unusable, so its enqueue has not
      // committed, so has not begun a next request, whose value ev could otherwise be.
      if (s == (pending_bit | id)) {
        if (r.state.compare_exchange_strong(s, i, std::memory_order_seq_cst)) s = i;  // else s: the state now
        else if (CDSB_MUTANT("wfq.stale_claim_state")) s = read;  // seeded: the state read before the CAS
      }
      if (s == i && c.value.load(std::memory_order_seq_cst) == top) commit(c, ev, i);
    }
    // A value; or none, ever (no request placed, or the placed one went to another cell).
    const std::uint64_t value = c.value.load(std::memory_order_seq_cst);
    if (value != top) return value;
    return tail_->load(std::memory_order_seq_cst) <= i ? bottom : top;
  }

  std::uint64_t dequeue_fast(Handle& h, Segment*& segment, std::uint64_t& failed_cell) {
    const std::uint64_t i = head_->fetch_add(1, std::memory_order_seq_cst);
    Cell& c = own_cell(segment, i);
    CDSB_INTERLEAVE("wfq.dequeue.drew");
    const std::uint64_t v = help_enq(h, c, i);
    if (v == bottom) return bottom;
    DeqRequest* none = nullptr;
    if (v != top && c.deq.compare_exchange_strong(none, taken_deq(), std::memory_order_seq_cst)) return v;
    failed_cell = i;  // unusable, or its value went to a dequeue request
    return top;
  }

  std::uint64_t dequeue_slow(Handle& h, Segment*& segment, std::uint64_t failed_cell) {
    DeqRequest& r = h.deq_request;
    r.id.store(failed_cell, std::memory_order_seq_cst);
    r.state.store(pending_bit | failed_cell, std::memory_order_seq_cst);
    CDSB_INTERLEAVE("wfq.dequeue.published");  // a stalled dequeue: others' dequeues complete it
    help_dequeue(h, h);
    const std::uint64_t cell = cell_of(r.state.load(std::memory_order_seq_cst));
    const std::uint64_t v = own_cell(segment, cell).value.load(std::memory_order_seq_cst);
    advance_to(*head_, cell + 1);  // no later dequeue draws a cell this request's search passed
    return v == top ? bottom : v;
  }

  // Completes peer's dequeue request if it is pending.
  void help_dequeue(Handle& h, Handle& peer) {
    DeqRequest& r = peer.deq_request;
    std::uint64_t s = r.state.load(std::memory_order_seq_cst);
    const std::uint64_t id = r.id.load(std::memory_order_seq_cst);
    if (!pending(s) || cell_of(s) < id) return;  // none, or a new request half written
    // Search from the first segment: it is at or before every cell a pending request's search
    // reaches (see the reclamation above; past id's cell, the request is over). Our floor may be
    // after it: lower the floor to the first id (lowering never uncovers a segment it kept), and
    // read the first segment after re-reading the id, so that it is kept.
    const std::uint64_t first_id = first_id_->load(std::memory_order_seq_cst);
    if (first_id < h.floor.load(std::memory_order_relaxed)) {
      h.floor.store(first_id, std::memory_order_seq_cst);
      first_id_->load(std::memory_order_seq_cst);
    }
    Segment* searcher = first_->load(std::memory_order_seq_cst);
    Segment* announcer = searcher;
    s = r.state.load(std::memory_order_seq_cst);
    std::uint64_t prior = id, i = id, candidate = no_id;
    for (;;) {
      // Search the cells after the announced one for a candidate; stop when someone announces.
      while (candidate == no_id && pending(s) && cell_of(s) == prior) {
        Cell* c = find_cell(searcher, ++i);
        if (!c) return;
        CDSB_INTERLEAVE("wfq.search.visiting");  // a helper about to decide cell i
        const std::uint64_t v = help_enq(h, *c, i);
        if (v == bottom || (v != top && !c->deq.load(std::memory_order_seq_cst))) candidate = i;
        else s = r.state.load(std::memory_order_seq_cst);
      }
      if (candidate != no_id) {
        std::uint64_t expected = pending_bit | prior;
        r.state.compare_exchange_strong(expected, pending_bit | candidate, std::memory_order_seq_cst);
        s = r.state.load(std::memory_order_seq_cst);
      }
      if (!pending(s) || r.id.load(std::memory_order_seq_cst) != id) return;  // completed, or a new request
      Cell* c = find_cell(announcer, cell_of(s));
      if (!c) return;
      DeqRequest* holder = nullptr;
      // The announced cell proves the queue empty, or its value is now the request's.
      if (c->value.load(std::memory_order_seq_cst) == top ||
          c->deq.compare_exchange_strong(holder, &r, std::memory_order_seq_cst) || holder == &r) {
        r.state.compare_exchange_strong(s, cell_of(s), std::memory_order_seq_cst);
        return;
      }
      // Another dequeue took the announced value: search on after it.
      prior = cell_of(s);
      if (prior >= i) {
        candidate = no_id;
        i = prior;
      }
    }
  }

  // Frees the segments no operation can reach (see the reclamation above). Called after a
  // dequeue, outside its operation (its own floor would hold the cut back).
  void cleanup(int tid, std::uint64_t own_segment) {
    const std::uint64_t front = first_id_->load(std::memory_order_seq_cst);
    if (own_segment < front + cleanup_lag) return;
    if (cleaning_->exchange(true, std::memory_order_seq_cst)) return;  // another thread is at it
    std::uint64_t cut =
        std::min(tail_->load(std::memory_order_seq_cst), head_->load(std::memory_order_seq_cst)) >> SegmentOrder;
    const bool floors = !CDSB_MUTANT("wfq.cleanup_ignores_floors");
    for (int t = 0; t < threads_ && floors; ++t) cut = std::min(cut, handles_[t].floor.load(std::memory_order_seq_cst));
    Segment* first = first_->load(std::memory_order_seq_cst);
    while (first->id < cut) {
      Segment* next = first->next.load(std::memory_order_seq_cst);
      if (!next) break;  // cell min(T, H) opens a segment no one appended yet
      first = next;
    }
    first_->store(first, std::memory_order_seq_cst);  // the pointer before the id: a reader of the id finds a segment at or after it
    first_id_->store(first->id, std::memory_order_seq_cst);
    std::uint64_t bound = first->id;
    for (int t = 0; t < threads_ && floors; ++t) bound = std::min(bound, handles_[t].floor.load(std::memory_order_seq_cst));
    std::uint64_t freed = 0;
    while (oldest_->id < bound) {
      Segment* next = oldest_->next.load(std::memory_order_seq_cst);
      delete oldest_;
      oldest_ = next;
      ++freed;
    }
    if (freed) stats_.add(tid, segments_freed, freed);
    cleaning_->store(false, std::memory_order_seq_cst);
  }

  static DeqRequest* taken_deq() { return &taken_deq_; }
  static inline DeqRequest taken_deq_{};

  Padded<std::atomic<std::uint64_t>> tail_{0};  // T
  Padded<std::atomic<std::uint64_t>> head_{0};  // H
  Padded<std::atomic<Segment*>> first_{nullptr};     // no operation starts before it
  Padded<std::atomic<std::uint64_t>> first_id_{0};  // its id, published after it
  Padded<std::atomic<bool>> cleaning_{false};
  Segment* oldest_ = nullptr;  // the oldest segment not freed: the cleaner's
  const int threads_;
  std::unique_ptr<Handle[]> handles_;
  UserStats stats_;
};

static_assert(ConcurrentQueue<WaitFreeQueue<>>);

}  // namespace cdsb
