// The threads of a measured run, as the measurement core gives them to the harness and to the
// applications: where each thread runs (pinning, printed; oversubscription warned: P7), and a
// team of threads that start together, each pinned and counting its own events (P11), meeting
// the caller at barriers between phases.
//
// An application fills a TeamSetup from its own options, plans the CPUs once, and runs each
// measured phase with a ThreadTeam; the harness does the same from its Config
// (bench/harness/trial.hpp). Nothing here knows a structure or a registry.
#pragma once

#include <barrier>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/core/clock.hpp"
#include "bench/core/perf_counters.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/topology.hpp"

namespace cdsb::bench {

enum class PinMode { none, compact, scatter, list };
const char* pin_mode_name(PinMode);

// The measurement core's parameters for a run's threads.
struct TeamSetup {
  int threads = 1;
  PinMode pin = PinMode::compact;
  std::vector<int> pin_cpus;     // PinMode::list: one OS CPU index per thread
  bool process_figures = true;   // per-thread counters and the run's RSS; off for runs of a few
                                 // dozen operations (lincheck's histories), where they cost more
                                 // than the run and mean nothing
};

// One OS CPU index per thread (-1: not pinned). Oversubscription and odd lists become
// warnings; a list naming a CPU this process may not use, or too few CPUs, is an
// std::invalid_argument whose message says what is allowed.
std::vector<int> plan_thread_cpus(const TeamSetup& setup, const Topology& topology, std::vector<std::string>& warnings);

// What one thread measured in its measured phase, on its own cache lines.
struct alignas(false_sharing_range) ThreadFigures {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::optional<ThreadCounters> counters;  // with process_figures
  bool pinned = false;                     // false also when the plan did not pin it
};

// Threads started at once by start(body), each pinned to its planned CPU and owning its
// counters, running body(tid); body and the caller meet at sync() (a barrier of every thread
// and the caller). A thread brackets its measured phase with begin_measured(tid) and
// end_measured(tid).
class ThreadTeam {
 public:
  ThreadTeam(const Topology& topology, const std::vector<int>& cpus, bool process_figures)
      : topology_(topology), cpus_(cpus), process_figures_(process_figures), figures_(cpus.size()),
        sync_(static_cast<std::ptrdiff_t>(cpus.size()) + 1) {}

  template <class Body>
  void start(Body body) {
    threads_.reserve(cpus_.size());
    for (int tid = 0; tid < static_cast<int>(cpus_.size()); ++tid) {
      threads_.emplace_back([this, body, tid] {
        ThreadFigures& f = figures_[tid];
        if (cpus_[tid] >= 0) f.pinned = topology_.pin_current_thread(cpus_[tid]);
        if (process_figures_) f.counters.emplace();  // opened by the thread it counts
        body(tid);
      });
    }
  }
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  void sync() { sync_.arrive_and_wait(); }

  void begin_measured(int tid) noexcept {
    ThreadFigures& f = figures_[tid];
    if (f.counters) f.counters->start();
    f.start_ns = now_ns();
  }
  void end_measured(int tid) noexcept {
    ThreadFigures& f = figures_[tid];
    f.end_ns = now_ns();
    if (f.counters) f.counters->stop();
  }

  // Waits for every thread; what they wrote is then visible to the caller. A team destroyed
  // with threads not joined terminates the process (std::thread), never hangs it.
  void join() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

  // Read after join().
  const std::vector<ThreadFigures>& figures() const { return figures_; }
  // Threads planned on a CPU whose pinning failed.
  int pin_failures() const {
    int failed = 0;
    for (std::size_t tid = 0; tid < figures_.size(); ++tid) failed += cpus_[tid] >= 0 && !figures_[tid].pinned;
    return failed;
  }

 private:
  const Topology& topology_;
  const std::vector<int> cpus_;
  const bool process_figures_;
  std::vector<ThreadFigures> figures_;
  std::barrier<> sync_;
  std::vector<std::thread> threads_;
};

}  // namespace cdsb::bench
