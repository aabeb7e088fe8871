// What a workload is (architecture.md §3), and the pieces every workload shares.
//
// A workload is what the one measured loop (bench/harness/trial.hpp) runs: it draws the next
// operation from the thread's generator, runs it on its structure and keeps the per-thread
// bookkeeping its validation needs. A new kind of structure adds a workload, never a loop.
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <string>

#include "bench/core/clock.hpp"
#include "bench/harness/trial_context.hpp"
#include "bench/workloads/op_mix.hpp"
#include "cdsbench/random/any_generator.hpp"
#include "cdsbench/random/reseeding.hpp"
#include "cdsbench/random/seeding.hpp"

namespace cdsb::bench {

// The protocol run_trial drives. Every member is called by the trial's threads as the
// choreography says: thread_start/thread_finish and step on the thread itself; prefill_begin
// by the trial's own thread before the workers prefill; prefill on every thread;
// prefill_correct on thread 0 alone (neither with --prefill none); prefill_failed,
// report_prefill and finish while quiescent.
template <class W>
concept Workload = requires(W& w, const W& cw, int tid, typename W::ThreadState& st, Json& j) {
  { W::op_type_count } -> std::convertible_to<int>;
  { W::op_type_name(0) } -> std::convertible_to<const char*>;
  { w.state(tid) } -> std::same_as<typename W::ThreadState&>;
  w.thread_start(tid);
  w.thread_finish(tid);
  w.prefill_begin();
  w.prefill(tid, st);
  w.prefill_correct(tid, st);
  { cw.prefill_failed() } -> std::same_as<bool>;
  cw.report_prefill(j);
  { w.step(tid, st) } -> std::same_as<int>;  // the op type it ran
  { w.finish(j) } -> std::same_as<bool>;     // validation passed
};

// Optional: a workload whose threads end on a condition of their own (a fixed amount of work
// done, or a queue drained after its producers ended) says so in done(tid, st, stop_asked),
// which the measured loop asks before each operation instead of reading the stop flag.
template <class W>
concept EndsItself = requires(W& w, int tid, typename W::ThreadState& st) {
  { w.done(tid, st, true) } -> std::same_as<bool>;
};

// The per-thread state every workload starts from: the thread's own generator (P2, P3), its
// operation mix (P4), and per-type counts. A workload's ThreadState derives from it.
template <int OpTypes>
struct ThreadBasics {
  ThreadBasics(const Config& c, std::uint64_t trial_seed, int tid, OpMix op_mix)
      : rng(AnyGenerator(c.prng, thread_seed(trial_seed, tid)), c.reseed_every), mix(op_mix) {}

  void count(int op, bool ok) noexcept {
    ++attempts[op];
    successes[op] += ok;
  }

  Reseeding<AnyGenerator> rng;
  OpMix mix;
  std::array<std::uint64_t, OpTypes> attempts{}, successes{};
  std::uint64_t prefill_ops = 0;
};

// The prefill's time limit (--prefill-timeout-ms): a prefill loop asks expired(i) on each
// iteration, and the clock is read on every 256th, so the check costs nothing measurable.
// Once expired, it stays so for every thread; the trial then fails (never a number).
class PrefillDeadline {
 public:
  void start(std::uint64_t timeout_ms) { deadline_ns_ = now_ns() + timeout_ms * 1'000'000; }

  bool expired(std::uint64_t iteration) {
    // Relaxed: the flag only stops loops; the barrier after prefill publishes it.
    if ((iteration & 255) == 0 && now_ns() > deadline_ns_) timed_out_.store(true, std::memory_order_relaxed);
    return timed_out_.load(std::memory_order_relaxed);
  }
  bool timed_out() const { return timed_out_.load(std::memory_order_relaxed); }

 private:
  std::uint64_t deadline_ns_ = 0;  // written before the workers start prefill
  std::atomic<bool> timed_out_{false};
};

// Folds the threads' counts into the report: <op>_attempts, <op>_successes per op type, and
// prefill_ops. States is a range of (pointers or Padded wrappers of) ThreadBasics.
template <class W, class States>
void report_counts(Json& j, const States& states) {
  std::array<std::uint64_t, W::op_type_count> attempts{}, successes{};
  for (const auto& st : states)
    for (int op = 0; op < W::op_type_count; ++op) {
      attempts[op] += st->attempts[op];
      successes[op] += st->successes[op];
    }
  for (int op = 0; op < W::op_type_count; ++op) {
    j[std::string(W::op_type_name(op)) + "_attempts"] = attempts[op];
    j[std::string(W::op_type_name(op)) + "_successes"] = successes[op];
  }
}

template <class States>
void report_prefill_work(Json& j, const States& states, bool converged) {
  std::uint64_t ops = 0;
  for (const auto& st : states) ops += st->prefill_ops;
  j["prefill_ops"] = ops;
  j["prefill_converged"] = converged;
}

}  // namespace cdsb::bench
