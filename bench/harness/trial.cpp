// The thread choreography and the report of a trial (trial.hpp), compiled once for every workload.
#include "bench/harness/trial.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "bench/core/perf_counters.hpp"
#include "bench/core/report.hpp"
#include "bench/core/thread_team.hpp"
#include "cdsbench/platform/cache.hpp"

namespace cdsb::bench {
namespace {

// What one thread's measured loop gave besides the team's figures, on its own cache lines.
struct alignas(false_sharing_range) ThreadResult {
  std::uint64_t ops = 0;
  std::unique_ptr<LatencyHistogram[]> latency;  // one per op type, only when sampling (P11)
};

// Throughput: update threads over the span from the first start to the last end; the
// dedicated range-query threads apart (P10).
void report_throughput(Json& j, const Config& cfg, const std::vector<ThreadResult>& results,
                       const std::vector<ThreadFigures>& figures) {
  std::uint64_t first_start = UINT64_MAX, last_end = 0, update_ops = 0, rq_thread_ops = 0;
  double thread_min = 0, thread_max = 0;
  for (int tid = 0; tid < static_cast<int>(results.size()); ++tid) {
    const auto& r = results[tid];
    const auto& f = figures[tid];
    first_start = std::min(first_start, f.start_ns);
    last_end = std::max(last_end, f.end_ns);
    if (tid >= cfg.threads) {
      rq_thread_ops += r.ops;
      continue;
    }
    update_ops += r.ops;
    const double secs = static_cast<double>(std::max<std::uint64_t>(f.end_ns - f.start_ns, 1)) / 1e9;
    const double rate = static_cast<double>(r.ops) / secs;
    thread_min = tid == 0 ? rate : std::min(thread_min, rate);
    thread_max = tid == 0 ? rate : std::max(thread_max, rate);
  }
  const double elapsed_s = static_cast<double>(std::max<std::uint64_t>(last_end - first_start, 1)) / 1e9;
  j["elapsed_ms"] = elapsed_s * 1e3;
  j["total_ops"] = update_ops;
  j["throughput_ops_per_s"] = static_cast<double>(update_ops) / elapsed_s;
  j["ns_per_op_per_thread"] = update_ops ? elapsed_s * 1e9 * cfg.threads / static_cast<double>(update_ops) : 0.0;
  j["thread_throughput_min_ops_per_s"] = thread_min;
  j["thread_throughput_max_ops_per_s"] = thread_max;
  if (cfg.rq_threads > 0) {
    j["rq_thread_ops"] = rq_thread_ops;
    j["rq_thread_throughput_ops_per_s"] = static_cast<double>(rq_thread_ops) / elapsed_s;
  }
  Json per_thread = Json::array();
  for (const auto& r : results) per_thread.push_back(r.ops);
  j["thread_ops"] = per_thread;
}

// Latency percentiles per op type, from the merged per-thread histograms.
void report_latency(Json& j, const TrialWorkload& workload, const std::vector<ThreadResult>& results) {
  Json histograms = Json::object();
  for (int op = 0; op < workload.op_type_count(); ++op) {
    LatencyHistogram merged;
    for (const auto& r : results) merged.merge(r.latency[op]);
    put_latency(j, histograms, workload.op_type_name(op), merged);
  }
  j["latency_histogram_ns"] = histograms;  // [lower, upper, count]; JSON output only
}

// Hardware and software counters per operation, summed over all measuring threads.
void report_counters(Json& j, const std::vector<ThreadResult>& results, const std::vector<ThreadFigures>& figures) {
  PerfTotals totals;
  std::uint64_t ops = 0;
  for (std::size_t tid = 0; tid < results.size(); ++tid) {
    totals.add(*figures[tid].counters);
    ops += results[tid].ops;
  }
  put_counters(j, totals, *figures[0].counters, ops);
}

}  // namespace

TrialOutcome run_trial(TrialWorkload& workload, const TrialContext& ctx) {
  const Config& cfg = ctx.config;
  std::vector<ThreadResult> results(cfg.total_threads());

  // Relaxed is enough for the stop flag and the running count: they carry no data. What the
  // workers wrote is published to this thread by join(), and the barriers order the phases.
  std::atomic<bool> stop{false};
  std::atomic<int> update_threads_running{cfg.threads};
  const std::uint64_t per_thread_ops = cfg.ops ? *cfg.ops / cfg.threads : UINT64_MAX;
  const std::uint64_t ops_remainder = cfg.ops ? *cfg.ops % cfg.threads : 0;
  MemoryPhases memory(cfg.process_figures);

  const std::uint64_t prefill_begin = now_ns();  // the plan and the threads' start count as prefill
  workload.prefill_begin();  // the team's first barrier publishes what it sets to the workers
  // Without a prefill its two barriers are left out: a barrier costs every thread a wake-up,
  // which on an oversubscribed machine is most of a short trial (lincheck records thousands).
  const bool prefills = cfg.prefill != PrefillMode::none;
  ThreadTeam team(ctx.topology, ctx.thread_cpus, cfg.process_figures);
  team.start([&](int tid) {
    ThreadResult& r = results[tid];
    if (cfg.latency_sample) r.latency = std::make_unique<LatencyHistogram[]>(workload.op_type_count());
    workload.thread_start(tid);
    team.sync();  // 1: everyone started
    if (prefills) {
      workload.prefill(tid);
      team.sync();  // 2: parallel prefill done
      if (tid == 0) workload.prefill_correct(tid);
      team.sync();  // 3: prefill complete
    }
    team.sync();  // 4: start the measured phase

    const bool update_thread = tid < cfg.threads;
    const std::uint64_t limit = update_thread ? per_thread_ops + (static_cast<std::uint64_t>(tid) < ops_remainder)
                                              : UINT64_MAX;  // range-query threads run until the update threads stop
    team.begin_measured(tid);
    r.ops = workload.measure(tid, stop, limit, cfg.latency_sample, r.latency.get());
    team.end_measured(tid);
    // With --ops, the last update thread to finish stops the range-query threads.
    if (update_thread && update_threads_running.fetch_sub(1, std::memory_order_relaxed) == 1)
      stop.store(true, std::memory_order_relaxed);
    workload.thread_finish(tid);
  });

  team.sync();  // 1
  if (prefills) {
    team.sync();  // 2
    team.sync();  // 3
  }
  const double prefill_ms = static_cast<double>(now_ns() - prefill_begin) / 1e6;
  memory.after("prefill");
  const bool prefill_failed = workload.prefill_failed();
  if (prefill_failed) stop.store(true, std::memory_order_relaxed);  // measure nothing
  team.sync();  // 4
  if (!cfg.ops && !cfg.items && !prefill_failed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(cfg.duration_ms));
    stop.store(true, std::memory_order_relaxed);
  }
  team.join();
  memory.end();

  TrialOutcome out;
  Json& j = out.report;
  j["trial"] = ctx.trial;
  j["trial_seed"] = ctx.trial_seed;
  j["prefill_time_ms"] = prefill_ms;
  report_throughput(j, cfg, results, team.figures());
  j["pin_failures"] = team.pin_failures();
  if (cfg.latency_sample) report_latency(j, workload, results);
  memory.put(j);
  if (cfg.process_figures) report_counters(j, results, team.figures());
  workload.report_prefill(j);
  if (prefill_failed) {
    out.status = TrialStatus::prefill_timeout;
    j["validation"] = "FAIL";
    j["validation_error"] = "prefill did not converge before --prefill-timeout-ms";
    return out;
  }
  const std::uint64_t validation_begin = now_ns();
  out.status = workload.finish(j) ? TrialStatus::ok : TrialStatus::validation_failed;
  j["validation_time_ms"] = static_cast<double>(now_ns() - validation_begin) / 1e6;
  return out;
}

// After the process's last trial a release build leaves the nodes to the process's exit,
// which returns the memory at once; sanitizer builds always free them, so LeakSanitizer
// checks that teardown frees all.
TrialOutcome run_owned_trial(std::unique_ptr<TrialWorkload> workload, const TrialContext& ctx) {
  TrialOutcome out = run_trial(*workload, ctx);
  if (ctx.last_in_process && !built_with_sanitizer) {
    static_cast<void>(workload.release());
    out.report["teardown"] = "process_exit";
    out.report["teardown_time_ms"] = 0.0;
    return out;
  }
  const std::uint64_t teardown_begin = now_ns();
  workload.reset();
  out.report["teardown"] = "freed";
  out.report["teardown_time_ms"] = static_cast<double>(now_ns() - teardown_begin) / 1e6;
  return out;
}

}  // namespace cdsb::bench
