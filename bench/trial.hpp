// The one measured loop (DESIGN.md §4, pitfall P1), written once as a template over a
// workload; every structure and every kind of workload runs through it.
//
// A Workload provides:
//   ThreadState                     per-thread bookkeeping (kept on its own cache lines)
//   op_type_count, op_type_name(i)  the operation types it counts and times
//   state(tid) -> ThreadState&
//   thread_start(tid) / thread_finish(tid)   structure hooks, run on the thread itself
//   prefill_begin() / prefill(tid, st) / prefill_correct(tid, st) / prefill_failed() / report_prefill(json&)
//   step(tid, st) -> op type        draw one operation, run it, count it
//   finish(json& trial) -> bool     quiescent validation and the workload's own figures
//
// The thread choreography: start and pin all threads, prefill with those same threads (P5),
// release them together through a barrier, measure for a duration (or an op count) with a
// stop flag checked every operation, join, validate while quiescent.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/clock.hpp"
#include "bench/config.hpp"
#include "bench/latency.hpp"
#include "bench/machine_info.hpp"
#include "bench/perf_counters.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/topology.hpp"

namespace cdsb::bench {

using Json = nlohmann::ordered_json;

// Everything a trial needs besides its workload.
struct TrialContext {
  const Config& config;
  const Topology& topology;
  const std::vector<int>& thread_cpus;  // os index per thread; -1 = not pinned
  int trial = 0;
  std::uint64_t trial_seed = 0;
};

enum class TrialStatus { ok, validation_failed, prefill_timeout };

struct TrialOutcome {
  TrialStatus status = TrialStatus::ok;
  Json report;
};

// The measured loop. Returns the number of operations run. Latency sampling times one
// operation in `sample_every` (countdown, so the common path is one decrement and a
// predictable branch); the stop flag is a relaxed load of a line written once.
template <class Workload, class Histograms>
std::uint64_t measured_loop(Workload& workload, int tid, typename Workload::ThreadState& st,
                            const std::atomic<bool>& stop, std::uint64_t op_limit,
                            std::uint32_t sample_every, Histograms* latency) {
  std::uint64_t ops = 0;
  std::uint64_t until_sample = sample_every ? sample_every : UINT64_MAX;
  while (ops < op_limit && !stop.load(std::memory_order_relaxed)) {
    if (--until_sample == 0) [[unlikely]] {
      until_sample = sample_every;
      const std::uint64_t begin = now_ns();
      const int op = workload.step(tid, st);
      (*latency)[op].record(now_ns() - begin);
    } else {
      workload.step(tid, st);
    }
    ++ops;
  }
  return ops;
}

template <class Workload>
TrialOutcome run_trial(Workload& workload, const TrialContext& ctx) {
  const Config& cfg = ctx.config;
  const int n = cfg.total_threads();
  using Histograms = std::array<LatencyHistogram, Workload::op_type_count>;

  struct alignas(false_sharing_range) ThreadResult {
    std::uint64_t ops = 0, start_ns = 0, end_ns = 0;
    std::optional<ThreadCounters> counters;
    std::unique_ptr<Histograms> latency;  // only when sampling (P11)
    bool pinned = false;
  };
  std::vector<ThreadResult> results(n);

  std::barrier sync(n + 1);  // the workers and this thread
  // Relaxed is enough for the stop flag and the running count: they carry no data. What the
  // workers wrote is published to this thread by join(), and the barriers order the phases.
  std::atomic<bool> stop{false};
  std::atomic<int> update_threads_running{cfg.threads};
  const std::uint64_t per_thread_ops = cfg.ops ? *cfg.ops / cfg.threads : UINT64_MAX;
  const std::uint64_t ops_remainder = cfg.ops ? *cfg.ops % cfg.threads : 0;

  const bool measure = cfg.process_figures;
  const bool peak_is_trials = measure && reset_peak_rss();  // else the peak would be the process's
  const auto rss = [measure] { return measure ? current_rss_bytes() : std::nullopt; };
  const auto rss_start = rss();

  auto worker = [&](int tid) {
    ThreadResult& r = results[tid];
    if (ctx.thread_cpus[tid] >= 0) r.pinned = ctx.topology.pin_current_thread(ctx.thread_cpus[tid]);
    if (measure) r.counters.emplace();  // opened by the thread it counts
    if (cfg.latency_sample) r.latency = std::make_unique<Histograms>();
    auto& st = workload.state(tid);
    workload.thread_start(tid);
    sync.arrive_and_wait();  // 1: everyone started
    workload.prefill(tid, st);
    sync.arrive_and_wait();  // 2: parallel prefill done
    if (tid == 0) workload.prefill_correct(tid, st);
    sync.arrive_and_wait();  // 3: prefill complete
    sync.arrive_and_wait();  // 4: start the measured phase

    const bool update_thread = tid < cfg.threads;
    const std::uint64_t limit =
        update_thread ? per_thread_ops + (static_cast<std::uint64_t>(tid) < ops_remainder)
                      : UINT64_MAX;  // range-query threads run until the update threads stop
    if (measure) r.counters->start();
    r.start_ns = now_ns();
    r.ops = measured_loop(workload, tid, st, stop, limit, cfg.latency_sample, r.latency.get());
    r.end_ns = now_ns();
    if (measure) r.counters->stop();
    // With --ops, the last update thread to finish stops the range-query threads.
    if (update_thread && update_threads_running.fetch_sub(1, std::memory_order_relaxed) == 1)
      stop.store(true, std::memory_order_relaxed);
    workload.thread_finish(tid);
  };

  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int tid = 0; tid < n; ++tid) threads.emplace_back(worker, tid);

  workload.prefill_begin();  // the barrier publishes what it sets to the workers
  const std::uint64_t prefill_begin = now_ns();
  sync.arrive_and_wait();  // 1
  sync.arrive_and_wait();  // 2
  sync.arrive_and_wait();  // 3
  const double prefill_ms = static_cast<double>(now_ns() - prefill_begin) / 1e6;
  const auto rss_after_prefill = rss();
  const bool prefill_failed = workload.prefill_failed();
  if (prefill_failed) stop.store(true, std::memory_order_relaxed);  // measure nothing
  sync.arrive_and_wait();  // 4
  if (!cfg.ops && !prefill_failed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(cfg.duration_ms));
    stop.store(true, std::memory_order_relaxed);
  }
  for (auto& t : threads) t.join();
  const auto rss_end = rss();
  const auto rss_peak = peak_is_trials ? peak_rss_bytes() : std::nullopt;

  TrialOutcome out;
  Json& j = out.report;
  j["trial"] = ctx.trial;
  j["trial_seed"] = ctx.trial_seed;
  j["prefill_time_ms"] = prefill_ms;

  // Throughput: update threads over the span from the first start to the last end.
  std::uint64_t first_start = UINT64_MAX, last_end = 0, update_ops = 0, rq_thread_ops = 0;
  double thread_min = 0, thread_max = 0;
  for (int tid = 0; tid < n; ++tid) {
    const ThreadResult& r = results[tid];
    first_start = std::min(first_start, r.start_ns);
    last_end = std::max(last_end, r.end_ns);
    if (tid >= cfg.threads) {
      rq_thread_ops += r.ops;
      continue;
    }
    update_ops += r.ops;
    const double secs = static_cast<double>(std::max<std::uint64_t>(r.end_ns - r.start_ns, 1)) / 1e9;
    const double rate = static_cast<double>(r.ops) / secs;
    thread_min = tid == 0 ? rate : std::min(thread_min, rate);
    thread_max = tid == 0 ? rate : std::max(thread_max, rate);
  }
  const double elapsed_s = static_cast<double>(std::max<std::uint64_t>(last_end - first_start, 1)) / 1e9;
  j["elapsed_ms"] = elapsed_s * 1e3;
  j["total_ops"] = update_ops;
  j["throughput_ops_per_s"] = static_cast<double>(update_ops) / elapsed_s;
  j["ns_per_op_per_thread"] =
      update_ops ? elapsed_s * 1e9 * cfg.threads / static_cast<double>(update_ops) : 0.0;
  j["thread_throughput_min_ops_per_s"] = thread_min;
  j["thread_throughput_max_ops_per_s"] = thread_max;
  if (cfg.rq_threads > 0) {
    j["rq_thread_ops"] = rq_thread_ops;
    j["rq_thread_throughput_ops_per_s"] = static_cast<double>(rq_thread_ops) / elapsed_s;
  }
  Json per_thread = Json::array();
  for (const ThreadResult& r : results) per_thread.push_back(r.ops);
  j["thread_ops"] = per_thread;
  int unpinned = 0;
  for (int tid = 0; tid < n; ++tid) unpinned += ctx.thread_cpus[tid] >= 0 && !results[tid].pinned;
  j["pin_failures"] = unpinned;

  // Latency percentiles per op type, from the merged per-thread histograms.
  if (cfg.latency_sample) {
    Json histograms = Json::object();
    for (int op = 0; op < Workload::op_type_count; ++op) {
      LatencyHistogram merged;
      for (const ThreadResult& r : results) merged.merge((*r.latency)[op]);
      if (merged.total() == 0) continue;
      const std::string name = Workload::op_type_name(op);
      j["latency_" + name + "_samples"] = merged.total();
      for (auto [q, label] : {std::pair{0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}, {0.999, "p99_9"}})
        j["latency_" + name + "_" + label + "_ns"] = *merged.percentile(q);
      Json buckets = Json::array();
      for (int b = 0; b < LatencyHistogram::bucket_count; ++b)
        if (merged.count(b))
          buckets.push_back({LatencyHistogram::lower_bound(b), LatencyHistogram::upper_bound(b),
                             merged.count(b)});
      histograms[name] = buckets;
    }
    j["latency_histogram_ns"] = histograms;  // [lower, upper, count]; JSON output only
  }

  // Memory (P8): the process's RSS; the trial's own peak (reset at its start when allowed).
  auto put_bytes = [&](const char* key, std::optional<std::uint64_t> v) {
    if (v) j[key] = *v; else j[key] = "unavailable";
  };
  put_bytes("rss_start_bytes", rss_start);
  put_bytes("rss_after_prefill_bytes", rss_after_prefill);
  put_bytes("rss_end_bytes", rss_end);
  put_bytes("peak_rss_bytes", rss_peak);

  // Hardware and software counters per operation, summed over all measuring threads.
  if (measure) {
    PerfTotals totals;
    for (const ThreadResult& r : results) totals.add(*r.counters);
    const std::uint64_t all_ops = update_ops + rq_thread_ops;
    for (PerfEvent e : all_perf_events) {
      const std::string name(perf_event_name(e));
      j[name + "_source"] = std::string(perf_source_name(results[0].counters->source(e)));
      const auto v = totals.value(e);
      if (v) {
        j[name] = *v;
        j[name + "_per_op"] = all_ops ? static_cast<double>(*v) / static_cast<double>(all_ops) : 0.0;
      } else {
        j[name] = "unavailable";
        j[name + "_per_op"] = "unavailable";
      }
    }
  }

  workload.report_prefill(j);
  if (prefill_failed) {
    out.status = TrialStatus::prefill_timeout;
    j["validation"] = "FAIL";
    j["validation_error"] = "prefill did not converge before --prefill-timeout-ms";
    return out;
  }
  out.status = workload.finish(j) ? TrialStatus::ok : TrialStatus::validation_failed;
  return out;
}

}  // namespace cdsb::bench
