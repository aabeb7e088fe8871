// The one measured loop (architecture.md §4, pitfall P1), written once as a template over a
// workload (bench/workloads/workload.hpp: the Workload concept); every structure and every
// kind of workload runs through it.
//
// The thread choreography (bench/harness/trial.cpp): start and pin all threads, prefill with
// those same threads (P5), release them together through a barrier, measure for a duration
// (or an op count) with a stop flag checked every operation, join, validate while quiescent.
// The report is built by small functions, one per part (throughput, latency, memory,
// counters), from what each thread recorded.
//
// The choreography is compiled once: it sees a workload through TrialWorkload, one virtual
// call per thread and phase. Only the measured loop and the workload's own code are
// instantiated per structure, so the registry's many variants compile fast.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "bench/core/clock.hpp"
#include "bench/core/latency.hpp"
#include "bench/harness/trial_context.hpp"
#include "bench/workloads/workload.hpp"

namespace cdsb::bench {

// The measured loop. Returns the number of operations run. Latency sampling times one
// operation in `sample_every` (countdown, so the common path is one decrement and a
// predictable branch); the stop flag is a relaxed load of a line written once. `latency`
// holds one histogram per op type (null when not sampling).
template <Workload W>
std::uint64_t measured_loop(W& workload, int tid, typename W::ThreadState& st, const std::atomic<bool>& stop,
                            std::uint64_t op_limit, std::uint32_t sample_every, LatencyHistogram* latency) {
  std::uint64_t ops = 0;
  std::uint64_t until_sample = sample_every ? sample_every : UINT64_MAX;
  while (ops < op_limit) {
    // A workload with an end of its own (a queue's consumers drain until the producers are
    // done) decides, told whether the stop was asked; the others stop when asked.
    if constexpr (EndsItself<W>) {
      if (workload.done(tid, st, stop.load(std::memory_order_relaxed))) break;
    } else if (stop.load(std::memory_order_relaxed)) {
      break;
    }
    if (--until_sample == 0) [[unlikely]] {
      until_sample = sample_every;
      const std::uint64_t begin = now_ns();
      const int op = workload.step(tid, st);
      latency[op].record(now_ns() - begin);
    } else {
      workload.step(tid, st);
    }
    ++ops;
  }
  return ops;
}

// A workload as the choreography sees it: the Workload protocol with the thread's state
// bound, and the measured loop behind `measure`.
class TrialWorkload {
 public:
  virtual ~TrialWorkload() = default;
  virtual int op_type_count() const = 0;
  virtual const char* op_type_name(int op) const = 0;
  virtual void thread_start(int tid) = 0;
  virtual void thread_finish(int tid) = 0;
  virtual void prefill_begin() = 0;
  virtual void prefill(int tid) = 0;
  virtual void prefill_correct(int tid) = 0;
  virtual bool prefill_failed() const = 0;
  virtual void report_prefill(Json& j) const = 0;
  virtual std::uint64_t measure(int tid, const std::atomic<bool>& stop, std::uint64_t op_limit, std::uint32_t sample_every,
                                LatencyHistogram* latency) = 0;
  virtual bool finish(Json& j) = 0;
};

template <Workload W>
class TrialWorkloadOf final : public TrialWorkload {
 public:
  explicit TrialWorkloadOf(W& workload) : w_(workload) {}
  explicit TrialWorkloadOf(std::unique_ptr<W> owned) : owned_(std::move(owned)), w_(*owned_) {}
  int op_type_count() const override { return W::op_type_count; }
  const char* op_type_name(int op) const override { return W::op_type_name(op); }
  void thread_start(int tid) override { w_.thread_start(tid); }
  void thread_finish(int tid) override { w_.thread_finish(tid); }
  void prefill_begin() override { w_.prefill_begin(); }
  void prefill(int tid) override { w_.prefill(tid, w_.state(tid)); }
  void prefill_correct(int tid) override { w_.prefill_correct(tid, w_.state(tid)); }
  bool prefill_failed() const override { return w_.prefill_failed(); }
  void report_prefill(Json& j) const override { w_.report_prefill(j); }
  std::uint64_t measure(int tid, const std::atomic<bool>& stop, std::uint64_t op_limit, std::uint32_t sample_every,
                        LatencyHistogram* latency) override {
    return measured_loop(w_, tid, w_.state(tid), stop, op_limit, sample_every, latency);
  }
  bool finish(Json& j) override { return w_.finish(j); }

 private:
  std::unique_ptr<W> owned_;  // when the trial owns the workload: destroying this is its teardown
  W& w_;
};

// Runs one trial of a workload (trial.cpp).
TrialOutcome run_trial(TrialWorkload& workload, const TrialContext& ctx);

template <Workload W>
TrialOutcome run_trial(W& workload, const TrialContext& ctx) {
  TrialWorkloadOf<W> erased(workload);
  return run_trial(static_cast<TrialWorkload&>(erased), ctx);
}

// A trial of a workload it builds and destroys: the structure's teardown (freeing every node)
// is part of what a user waits for between trials, so it is timed (trial.cpp says when it is
// left to the process's exit).
TrialOutcome run_owned_trial(std::unique_ptr<TrialWorkload> workload, const TrialContext& ctx);

template <Workload W>
TrialOutcome run_owned_trial(const TrialContext& ctx) {
  return run_owned_trial(std::make_unique<TrialWorkloadOf<W>>(std::make_unique<W>(ctx)), ctx);
}

}  // namespace cdsb::bench
