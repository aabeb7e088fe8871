// Per-thread hardware and software event counts over a measured phase (Linux
// perf_event_open), reported next to throughput so a result can be explained.
//
// Each measuring thread owns one ThreadCounters: built, started and stopped *on that
// thread* (the counters follow the thread that opened them, pid = 0 / cpu = -1, and the
// fallbacks below read the calling thread's own usage). Each event is its own counter,
// not a group: a group is scheduled all-or-nothing, so one event the PMU cannot fit would
// silence the rest. When the PMU has fewer counters than events the kernel multiplexes;
// counts are then scaled by time_enabled / time_running and flagged as multiplexed.
//
// Privilege: an event first opens counting user + kernel mode. Where that is refused
// (kernel.perf_event_paranoid >= 2 without CAP_PERFMON), it falls back:
//   - hardware events and cpu_migrations: perf counting user mode only (source
//     perf_user_only). Migrations are charged without register state, so they still count
//     in full;
//   - task_clock_ns: CLOCK_THREAD_CPUTIME_ID; page_faults and context_switches:
//     getrusage(RUSAGE_THREAD). A user-only perf counter would under-count these (faults
//     taken in kernel mode) or read 0 (a context switch always happens in the kernel).
// The same fallbacks serve where perf_event_open is missing altogether (a seccomp filter).
// An event nothing can count is unavailable: value() is nullopt and unavailable_reason()
// says why; the report prints `unavailable`, never a number (architecture.md §4).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include <sys/resource.h>

namespace cdsb::bench {

enum class PerfEvent {
  cycles,
  instructions,
  l1d_misses,     // L1 data-cache read misses
  llc_misses,     // the kernel's generic "cache-misses": last-level cache misses on x86
  dtlb_misses,    // data-TLB read misses
  branch_misses,
  task_clock_ns,  // CPU time of the thread
  page_faults,
  context_switches,
  cpu_migrations,
};

inline constexpr std::array all_perf_events = {
    PerfEvent::cycles,        PerfEvent::instructions,     PerfEvent::l1d_misses,
    PerfEvent::llc_misses,    PerfEvent::dtlb_misses,      PerfEvent::branch_misses,
    PerfEvent::task_clock_ns, PerfEvent::page_faults,      PerfEvent::context_switches,
    PerfEvent::cpu_migrations,
};
inline constexpr std::size_t perf_event_count = all_perf_events.size();

// Stable names for the report: "cycles", "instructions", ..., "cpu_migrations".
std::string_view perf_event_name(PerfEvent event) noexcept;

// True for events only a PMU can count (cycles .. branch_misses).
constexpr bool is_hardware_event(PerfEvent event) noexcept {
  return static_cast<int>(event) <= static_cast<int>(PerfEvent::branch_misses);
}

// Where a ThreadCounters gets an event from.
enum class PerfSource {
  unavailable,
  perf,            // perf_event_open, user + kernel mode
  perf_user_only,  // perf_event_open, kernel mode excluded (not permitted)
  clock,           // clock_gettime(CLOCK_THREAD_CPUTIME_ID)
  rusage,          // getrusage(RUSAGE_THREAD)
};
// "unavailable", "perf", "perf_user_only", "clock_gettime", "getrusage".
std::string_view perf_source_name(PerfSource source) noexcept;

class ThreadCounters {
 public:
  // Opens every event for the calling thread, disabled. An event that cannot be opened
  // (no PMU, not permitted, too many open files, ...) is unavailable, not an error.
  ThreadCounters();
  ~ThreadCounters();
  ThreadCounters(ThreadCounters&& other) noexcept;
  ThreadCounters& operator=(ThreadCounters&& other) noexcept;
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;

  // Resets and enables every counter; call on the owning thread right before its measured
  // phase. Forgets the values of an earlier phase.
  void start() noexcept;
  // Disables every counter and reads it; call on the owning thread right after the phase.
  void stop() noexcept;

  // The count of the last start()..stop() phase, scaled if multiplexed. nullopt if the
  // event is unavailable, if no phase has been completed (a counter never started is "not
  // measured", not 0), or if the kernel never got to schedule the counter in the phase.
  std::optional<std::uint64_t> value(PerfEvent event) const noexcept;
  // True if the last phase's count was scaled up from part of the phase (an estimate).
  bool multiplexed(PerfEvent event) const noexcept;
  PerfSource source(PerfEvent event) const noexcept;

  // Why the event was unavailable to the first ThreadCounters in this process that could
  // not count it, e.g. "perf_event_open: No such file or directory (...)"; "" if every
  // ThreadCounters so far could count it. Thread-safe.
  static std::string unavailable_reason(PerfEvent event);

 private:
  void close_all() noexcept;

  std::array<int, perf_event_count> fds_{};
  std::array<PerfSource, perf_event_count> sources_{};
  std::array<std::optional<std::uint64_t>, perf_event_count> values_{};
  std::array<bool, perf_event_count> multiplexed_{};
  bool uses_clock_ = false;
  bool uses_rusage_ = false;
  bool started_ = false;
  timespec start_clock_{};
  rusage start_usage_{};
};

// Whether this process can count hardware events on its own threads (a PMU exists and
// perf_event_open is permitted at least for user mode). Opens and closes one counter.
bool hardware_events_available() noexcept;

// Sum over the measuring threads. An event is available only if every thread counted it:
// a sum with a thread missing would be a wrong number, so nullopt is sticky.
struct PerfTotals {
  std::array<std::optional<std::uint64_t>, perf_event_count> values{};
  std::array<bool, perf_event_count> multiplexed{};  // some thread's count was scaled
  int threads = 0;

  void add(const ThreadCounters& counters) noexcept;
  std::optional<std::uint64_t> value(PerfEvent event) const noexcept {
    return values[static_cast<std::size_t>(event)];
  }
};

}  // namespace cdsb::bench
