// The queue workload (architecture.md §3): queues in the one measured loop.
//
// Modes (--queue-mode):
//   pairs   each thread enqueues, then dequeues as many items, alternately (the common "enqueue-dequeue pairs").
//   split   the first --producers threads only enqueue; the others only dequeue, through the
//           producers-done termination protocol (PipelineQueue), until every producer has ended
//           and the queue is empty: the dedup study's Fig. 9 (it used equal halves).
//   random  each operation an enqueue with probability --enqueue (default 50%: Morrison & Afek's
//           "50% enqueues"), a dequeue otherwise.
// An operation moves --batch items: the queue's native batch operations where it has them,
// single operations otherwise (queue/concepts.hpp); batch 1 is single-item operations. A trial
// runs for a duration, or moves a fixed number of items (--items: each producer enqueues its
// share, and the time to move them all is measured). Split-mode consumers end on their own
// (done): after the stop, they drain what the producers left.
//
// Stacks run the same workload in LIFO mode (StackAsQueue): push for enqueue, pop for dequeue,
// with the same item accounting; their order is checked by lincheck's stack model, not here.
//
// Items: every item names its producer and that producer's sequence number,
// (producer + 1) << 40 | sequence; every consumer logs what it dequeued, in order. Validation
// (P6) is exact: every item dequeued or left in the queue was enqueued, none twice, none lost
// (each producer's sequence numbers 0..n-1 each seen once, in a bitmap), and per-producer FIFO
// (each consumer sees a producer's items in order, and what is left comes after what was
// taken) for the queues that promise it; a relaxed queue reports its reorders instead.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/core/report.hpp"
#include "bench/harness/make_structure.hpp"
#include "bench/harness/trial_context.hpp"
#include "bench/workloads/workload.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/queue/concepts.hpp"
#include "cdsbench/queue/pipeline_queue.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"  // HasThreadHooks

namespace cdsb::bench {

// A thread's dequeued items in order, in blocks allocated as it goes (never copied), run-length
// encoded: an item one above the item before it (a producer's next item: a batch, or a queue
// that hands out a producer's items in a row) adds nothing but a count. Why: the log is written
// inside the measured loop, and a plain log's fresh pages (8 bytes an item, zeroed by the kernel
// when first touched) cost more than the queue operations themselves (perf, the locked ring in
// pairs of 20-item batches on one thread, the log even in 2 MiB pages: 40% of the trial's samples
// in the kernel's clear_page); a run costs one word.
// Exact: the replay gives back every item appended, in order, whatever their values.
// Words: an item below 2^63 as itself; a run marker (top bits 10) "the item before continues
// with this many successors"; an escape (top bits 11) before an item of 2^63 or more.
class ItemLog {
 public:
  void append(const std::uint64_t* items, std::size_t n) {
    // The common case first: the whole batch continues the run (a compare per item, no branch,
    // which the compiler vectorises).
    if (started_ && run_ + n <= run_max) {
      bool continues = true;
      for (std::size_t i = 0; i < n; ++i) continues &= items[i] == next_ + i;
      if (continues) {
        run_ += n;
        next_ += n;
        return;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t item = items[i];
      if (item == next_ && started_ && run_ < run_max) {
        ++run_;
        ++next_;
        continue;
      }
      end_run();
      if (item >= escape_bit) push(escape);
      push(item);
      next_ = item + 1;  // 0 after UINT64_MAX: a later 0 is a run of it, replayed as such
      started_ = true;
    }
  }
  template <class Fn>
  void for_each(Fn&& fn) const {
    std::uint64_t last = 0;
    bool escaped = false;
    auto word = [&](std::uint64_t w) {
      if (escaped || w < escape_bit) {
        escaped = false;
        fn(last = w);
      } else if (w == escape) {
        escaped = true;
      } else {
        for (std::uint64_t k = w & run_max; k > 0; --k) fn(++last);
      }
    };
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const std::size_t n = b + 1 == blocks_.size() ? used_ : block_words;
      for (std::size_t i = 0; i < n; ++i) word(blocks_[b][i]);
    }
    if (run_) word(run_marker | run_);  // the run still open
  }
  std::size_t bytes() const { return blocks_.size() * block_words * sizeof(std::uint64_t); }

 private:
  static constexpr std::uint64_t escape_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t run_marker = escape_bit;                          // 10...
  static constexpr std::uint64_t escape = escape_bit | std::uint64_t{1} << 62;     // 11...
  static constexpr std::uint64_t run_max = (std::uint64_t{1} << 62) - 1;
  static constexpr std::size_t block_words = std::size_t{1} << 16;  // 512 KiB

  void end_run() {
    if (run_) push(run_marker | run_);
    run_ = 0;
  }
  void push(std::uint64_t w) {
    if (used_ == block_words) [[unlikely]] {
      blocks_.push_back(std::make_unique_for_overwrite<std::uint64_t[]>(block_words));
      used_ = 0;
    }
    blocks_.back()[used_++] = w;
  }

  std::vector<std::unique_ptr<std::uint64_t[]>> blocks_;
  std::size_t used_ = block_words;
  std::uint64_t next_ = 0;  // the item that would extend the run
  bool started_ = false;    // an item was appended (before it, nothing extends)
  std::uint64_t run_ = 0;   // successors of the last item written, not yet written
};

// S's reclaimer_type, where it has one (it names the registry's variant).
template <class S>
struct ReclaimerTypeOf {};
template <class S>
  requires requires { typename S::reclaimer_type; }
struct ReclaimerTypeOf<S> {
  using reclaimer_type = typename S::reclaimer_type;
};

// A stack seen by the queue workload (LIFO mode): enqueue pushes, dequeue pops, and what is
// left is listed bottom to top. No native batches: a batch is single pushes or pops.
template <ConcurrentStack S>
class StackAsQueue : public ReclaimerTypeOf<S> {
 public:
  static constexpr std::string_view order = "lifo";

  explicit StackAsQueue(int max_threads)
    requires std::is_constructible_v<S, int>
      : stack_(max_threads) {}
  StackAsQueue(int max_threads, reclaim::ReclaimOptions options)
    requires std::is_constructible_v<S, int, reclaim::ReclaimOptions>
      : stack_(max_threads, options) {}

  void enqueue(int tid, std::uint64_t v) { stack_.push(tid, v); }
  std::optional<std::uint64_t> dequeue(int tid) { return stack_.pop(tid); }

  template <class Fn>
  void for_each_item(Fn&& fn) const
    requires requires(const S& s) { s.for_each_item(fn); }
  {
    stack_.for_each_item(fn);
  }
  std::string check_invariants() const
    requires requires(const S& s) { s.check_invariants(); }
  {
    return stack_.check_invariants();
  }
  std::size_t memory_bytes() const
    requires requires(const S& s) { s.memory_bytes(); }
  {
    return stack_.memory_bytes();
  }
  StatsReport stats() const
    requires requires(const S& s) { s.stats(); }
  {
    return stack_.stats();
  }

 private:
  S stack_;
};

// Everything of the queue workload that does not depend on the queue, compiled once
// (queue_workload.cpp).
class QueueWorkloadCore {
 public:
  static constexpr int op_type_count = 2;
  enum Op : int { enqueue_op = 0, dequeue_op = 1 };
  static const char* op_type_name(int op) { return op == enqueue_op ? "enqueue" : "dequeue"; }
  static constexpr int max_batch = 64;
  static constexpr unsigned sequence_bits = 40;

  static constexpr std::uint64_t item_of(int producer, std::uint64_t sequence) {
    return (static_cast<std::uint64_t>(producer) + 1) << sequence_bits | sequence;
  }

  enum class Role { both, producer, consumer };

  struct ThreadState : ThreadBasics<op_type_count> {
    using ThreadBasics<op_type_count>::ThreadBasics;
    Role role = Role::both;
    bool enqueue_next = true;             // pairs mode: the next operation is the pair's enqueue
    std::size_t pair_items = 0;           // pairs mode: the items of the pair's enqueue, which its dequeue takes
    bool finished = false;                // split consumer: the protocol said so
    std::uint64_t produced = 0;           // items it enqueued, prefill included: its next sequence number
    std::uint64_t prefilled = 0;
    std::uint64_t share = UINT64_MAX;     // --items: the items it enqueues in the measured phase
    std::uint64_t dequeued = 0;           // items it dequeued in the measured phase
    ItemLog log;
    std::array<std::uint64_t, max_batch> buffer{};
  };

  QueueWorkloadCore(const TrialContext& ctx, std::string_view order);

  ThreadState& state(int tid) { return *states_[tid]; }
  void prefill_begin() { deadline_.start(cfg_.prefill_timeout_ms); }
  void prefill_correct(int, ThreadState&) {}
  bool prefill_failed() const { return deadline_.timed_out(); }
  void report_prefill(Json& j) const;

  // Whether thread tid's measured loop is over (EndsItself).
  bool done(ThreadState& st, bool stop_asked) const {
    if (st.role == Role::consumer) return st.finished;
    // A fixed-work trial is stopped only when its prefill failed (then it measures nothing).
    if (cfg_.items && !stop_asked) return st.produced - st.prefilled >= st.share && st.enqueue_next;
    return stop_asked;
  }

 protected:
  // The next n items thread tid enqueues, written to its buffer: its next sequence numbers.
  std::span<const std::uint64_t> next_items(int tid, ThreadState& st, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) st.buffer[i] = item_of(tid, st.produced + i);
    st.produced += n;
    return {st.buffer.data(), n};
  }
  // Items the next enqueue moves: the batch, or what is left of the thread's share.
  std::size_t enqueue_size(const ThreadState& st) const {
    const std::uint64_t left = st.share - (st.produced - st.prefilled);
    return left < cfg_.batch ? static_cast<std::size_t>(left) : cfg_.batch;
  }
  std::uint64_t prefill_share(int tid) const;

  // Validation and the workload's figures; `remaining` is what the queue held at the end, front
  // first. Returns the error, "" if none.
  std::string validate(Json& j, const std::vector<std::uint64_t>& remaining) const;
  static bool conclude(Json& j, const std::string& error);

  const Config& cfg_;
  const std::string order_;  // what the queue promises: fifo, per_producer_fifo, relaxed or lifo (a stack)
  const bool fifo_;          // per-producer FIFO order, checked here
  // Random mode: a draw at or above this enqueues, so 2^64 - it of the 2^64 draws do
  // (2^63 at 50%, the top bit, as before there was a choice).
  const std::uint64_t dequeue_below_;
  std::vector<Padded<ThreadState>> states_;
  PrefillDeadline deadline_;
};

// Recorder: NoRecorder for measurement, HistoryRecorder for linearizability histories: single
// operations as enqueue(v) and dequeue(), a native batch as one enqueue_batch(first, count) (a
// batch's items are consecutive numbers) or dequeue_batch(max) -> [items]; a stack's as push,
// pop, push_batch and pop_batch (the checker's stack model). A batch made of single operations
// is not one operation: no histories with batches for such a queue.
template <ConcurrentQueue Q, class Recorder = NoRecorder>
class QueueWorkload final : public QueueWorkloadCore {
 public:
  explicit QueueWorkload(const TrialContext& ctx)
    requires(!Recorder::enabled)
      : QueueWorkload(ctx, Recorder{}) {}

  QueueWorkload(const TrialContext& ctx, Recorder recorder)
      : QueueWorkloadCore(ctx, order_of()),
        recorder_(std::move(recorder)),
        queue_(make_pipeline_queue<Q>(ctx.config.total_threads(), ctx.config.reclaim_eager)) {
    if (Recorder::enabled && cfg_.batch != 1 && !HasNativeBatch<Q>)
      throw std::logic_error("histories with batches are recorded for queues with native batches only");
    if (cfg_.queue_mode == QueueMode::split) queue_->set_producers(cfg_.producers);
  }

  const Recorder& recorder() const { return recorder_; }

  void thread_start(int tid) {
    if constexpr (HasThreadHooks<Q>) queue_->queue().thread_init(tid);
  }
  void thread_finish(int tid) {
    if (states_[tid]->role == Role::producer) queue_->producer_done();
    if constexpr (HasThreadHooks<Q>) queue_->queue().thread_exit(tid);
  }
  bool done(int, ThreadState& st, bool stop_asked) const { return QueueWorkloadCore::done(st, stop_asked); }

  // One measured operation: an enqueue or a dequeue of up to --batch items.
  int step(int tid, ThreadState& st) {
    bool enqueue = st.role == Role::producer;
    if (st.role == Role::both) {
      if (cfg_.queue_mode == QueueMode::pairs) {
        enqueue = st.enqueue_next;
        st.enqueue_next = !enqueue;
      } else {
        enqueue = st.rng.next() >= dequeue_below_;
      }
    }
    std::uint64_t call_ns = 0;
    if constexpr (Recorder::enabled) call_ns = call_stamp_ns();
    if (enqueue) {
      const auto items = next_items(tid, st, enqueue_size(st));
      st.pair_items = items.size();
      if (cfg_.batch == 1) queue_->queue().enqueue(tid, items[0]);
      else queue_->enqueue_batch(tid, items);  // waits while a bounded queue lacks room
      st.count(enqueue_op, true);
      if constexpr (Recorder::enabled) {
        const std::uint64_t returned = return_stamp_ns();
        if (cfg_.batch == 1)
          recorder_.record(tid, {lifo ? "push" : "enqueue", {static_cast<std::int64_t>(items[0]), 0}, 1, 0, false, call_ns, returned});
        else
          recorder_.record(tid, {lifo ? "push_batch" : "enqueue_batch",
                                 {static_cast<std::int64_t>(items[0]), static_cast<std::int64_t>(items.size())}, 2, 0, false,
                                 call_ns, returned});
      }
      return enqueue_op;
    }
    // A pair's dequeue takes as many items as its enqueue gave (the last of a share may be short).
    const std::size_t max = cfg_.queue_mode == QueueMode::pairs ? st.pair_items : cfg_.batch;
    std::size_t n = 0;
    if (st.role == Role::consumer) {
      n = cfg_.batch == 1 ? take(queue_->dequeue_wait(tid), st) : queue_->dequeue_batch_wait(tid, cfg_.batch, st.buffer.data());
      st.finished = n == 0;
    } else {
      n = cfg_.batch == 1 ? take(queue_->queue().dequeue(tid), st) : dequeue_batch(queue_->queue(), tid, max, st.buffer.data());
    }
    if constexpr (Recorder::enabled) {
      const std::uint64_t returned = return_stamp_ns();
      if (cfg_.batch == 1)
        recorder_.record(tid, {lifo ? "pop" : "dequeue", {0, 0}, 0, n ? static_cast<std::int64_t>(st.buffer[0]) : 0, n > 0,
                               call_ns, returned});
      else
        recorder_.record_list(tid, {lifo ? "pop_batch" : "dequeue_batch", {static_cast<std::int64_t>(max), 0}, 1, 0, false,
                                    call_ns, returned},
                              std::span<const std::uint64_t>(st.buffer.data(), n));
    }
    st.log.append(st.buffer.data(), n);
    st.dequeued += n;
    st.count(dequeue_op, n > 0);
    return dequeue_op;
  }

  // ---- prefill by the measuring threads (P5): each its share, as the producer it names ----
  void prefill(int tid, ThreadState& st) {
    const std::uint64_t share = prefill_share(tid);
    for (std::uint64_t i = 0; st.prefilled < share && !deadline_.expired(i); ++i) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(cfg_.batch, share - st.prefilled));
      enqueue_batch(queue_->queue(), tid, next_items(tid, st, n));
      st.prefilled += n;
      ++st.prefill_ops;
    }
  }

  // ---- quiescent validation (P6) and the workload's figures -----------------------------
  bool finish(Json& j) {
    Q& q = queue_->queue();
    if constexpr (requires { q.memory_bytes(); }) j["structure_memory_bytes"] = q.memory_bytes();
    std::vector<std::uint64_t> remaining;
    if constexpr (requires { q.for_each_item([](std::uint64_t) {}); }) {
      q.for_each_item([&](std::uint64_t v) { remaining.push_back(v); });
    } else {
      while (const auto v = q.dequeue(0)) remaining.push_back(*v);
    }
    std::string error = validate(j, remaining);
    if constexpr (requires { q.check_invariants(); }) {
      const std::string invariants = q.check_invariants();
      j["invariants"] = invariants.empty() ? "ok" : invariants;
      if (error.empty() && !invariants.empty()) error = "invariant violated: " + invariants;
    }
    if constexpr (requires { { q.stats() } -> std::same_as<StatsReport>; }) put_stats(j, q.stats());
    return conclude(j, error);
  }

 private:
  static constexpr std::string_view order_of() {
    if constexpr (requires { Q::order; }) return Q::order;
    else return "fifo";
  }
  static constexpr bool lifo = order_of() == "lifo";
  static std::size_t take(std::optional<std::uint64_t> v, ThreadState& st) {
    if (!v) return 0;
    st.buffer[0] = *v;
    return 1;
  }

  Recorder recorder_;
  std::unique_ptr<PipelineQueue<Q>> queue_;
};

}  // namespace cdsb::bench
