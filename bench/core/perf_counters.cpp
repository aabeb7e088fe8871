#include "bench/core/perf_counters.hpp"

#include <cerrno>
#include <fstream>
#include <mutex>
#include <system_error>
#include <utility>

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cdsb::bench {
namespace {

constexpr std::size_t index_of(PerfEvent event) noexcept { return static_cast<std::size_t>(event); }

// What to do when perf may not count kernel mode (see the header).
enum class Fallback { perf_user_only, clock, rusage };

struct EventSpec {
  std::string_view name;
  std::uint32_t type;
  std::uint64_t config;
  Fallback fallback;
};

constexpr std::uint64_t cache_event(std::uint64_t cache) noexcept {
  return cache | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
}

// Indexed by PerfEvent.
constexpr std::array<EventSpec, perf_event_count> event_specs = {{
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, Fallback::perf_user_only},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, Fallback::perf_user_only},
    {"l1d_misses", PERF_TYPE_HW_CACHE, cache_event(PERF_COUNT_HW_CACHE_L1D),
     Fallback::perf_user_only},
    // The generic event rather than HW_CACHE LL: recent Intel cores have no LL read-miss
    // mapping, while cache-misses maps to LLC misses on every x86 PMU.
    {"llc_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, Fallback::perf_user_only},
    {"dtlb_misses", PERF_TYPE_HW_CACHE, cache_event(PERF_COUNT_HW_CACHE_DTLB),
     Fallback::perf_user_only},
    {"branch_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, Fallback::perf_user_only},
    {"task_clock_ns", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, Fallback::clock},
    {"page_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, Fallback::rusage},
    {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, Fallback::rusage},
    {"cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, Fallback::perf_user_only},
}};

static_assert(event_specs[index_of(PerfEvent::cpu_migrations)].config ==
                  PERF_COUNT_SW_CPU_MIGRATIONS,
              "event_specs must follow the order of PerfEvent");

// First failure per event, shared by every thread of the process.
struct UnavailableReasons {
  std::mutex mutex;
  std::array<std::string, perf_event_count> reasons;
};

UnavailableReasons& unavailable_reasons() {
  static UnavailableReasons reasons;
  return reasons;
}

void record_unavailable(PerfEvent event, std::string reason) {
  UnavailableReasons& all = unavailable_reasons();
  const std::lock_guard lock(all.mutex);
  std::string& slot = all.reasons[index_of(event)];
  if (slot.empty()) slot = std::move(reason);
}

std::string paranoid_level() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  std::string level;
  if (!(in >> level)) return "unknown";
  return level;
}

// The kernel's errno is terse; say what it usually means for perf_event_open.
std::string describe_open_error(int error) {
  std::string text = "perf_event_open: " + std::generic_category().message(error);
  switch (error) {
    case ENOENT:
    case EOPNOTSUPP:
      return text + " (event not supported by this CPU or kernel, e.g. a VM without a PMU)";
    case ENODEV:
      return text + " (no such event on this PMU)";
    case EACCES:
    case EPERM:
      return text + " (not permitted: kernel.perf_event_paranoid=" + paranoid_level() +
             ", or a seccomp filter)";
    case ENOSYS:
      return text + " (kernel built without perf events)";
    case EMFILE:
    case ENFILE:
      return text + " (one file per event and thread: raise the open-file limit)";
    default:
      return text;
  }
}

int open_counter(const EventSpec& spec, bool exclude_kernel) noexcept {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = spec.type;
  attr.config = spec.config;
  attr.disabled = 1;  // counts only between start() and stop()
  attr.exclude_kernel = exclude_kernel ? 1 : 0;
  attr.exclude_hv = 1;  // hypervisor time is not the thread's work
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  // pid 0 / cpu -1: the calling thread, on whichever CPU it runs.
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

struct Usage {
  timespec clock{};
  rusage usage{};
};

std::uint64_t to_ns(const timespec& t) noexcept {
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(t.tv_nsec);
}

}  // namespace

std::string_view perf_event_name(PerfEvent event) noexcept {
  return event_specs[index_of(event)].name;
}

std::string_view perf_source_name(PerfSource source) noexcept {
  switch (source) {
    case PerfSource::perf: return "perf";
    case PerfSource::perf_user_only: return "perf_user_only";
    case PerfSource::clock: return "clock_gettime";
    case PerfSource::rusage: return "getrusage";
    case PerfSource::unavailable: break;
  }
  return "unavailable";
}

ThreadCounters::ThreadCounters() {
  fds_.fill(-1);
  sources_.fill(PerfSource::unavailable);
  for (const PerfEvent event : all_perf_events) {
    const std::size_t i = index_of(event);
    const EventSpec& spec = event_specs[i];
    int fd = open_counter(spec, /*exclude_kernel=*/false);
    int error = fd < 0 ? errno : 0;
    const bool refused_kernel = fd < 0 && (error == EACCES || error == EPERM);
    if (fd >= 0) {
      sources_[i] = PerfSource::perf;
    } else if (spec.fallback == Fallback::clock) {
      sources_[i] = PerfSource::clock;
    } else if (spec.fallback == Fallback::rusage) {
      sources_[i] = PerfSource::rusage;
    } else if (refused_kernel) {
      fd = open_counter(spec, /*exclude_kernel=*/true);
      if (fd >= 0) {
        sources_[i] = PerfSource::perf_user_only;
      } else {
        error = errno;
      }
    }
    fds_[i] = fd;
    if (sources_[i] == PerfSource::unavailable) {
      record_unavailable(event, describe_open_error(error));
    }
    uses_clock_ = uses_clock_ || sources_[i] == PerfSource::clock;
    uses_rusage_ = uses_rusage_ || sources_[i] == PerfSource::rusage;
  }
}

ThreadCounters::~ThreadCounters() { close_all(); }

ThreadCounters::ThreadCounters(ThreadCounters&& other) noexcept
    : fds_(other.fds_),
      sources_(other.sources_),
      values_(other.values_),
      multiplexed_(other.multiplexed_),
      uses_clock_(other.uses_clock_),
      uses_rusage_(other.uses_rusage_),
      started_(other.started_),
      start_clock_(other.start_clock_),
      start_usage_(other.start_usage_) {
  other.fds_.fill(-1);
  other.sources_.fill(PerfSource::unavailable);
  other.values_.fill(std::nullopt);
  other.uses_clock_ = other.uses_rusage_ = other.started_ = false;
}

ThreadCounters& ThreadCounters::operator=(ThreadCounters&& other) noexcept {
  if (this != &other) {
    close_all();
    fds_ = other.fds_;
    other.fds_.fill(-1);
    sources_ = other.sources_;
    other.sources_.fill(PerfSource::unavailable);
    values_ = std::exchange(other.values_, {});
    multiplexed_ = other.multiplexed_;
    uses_clock_ = std::exchange(other.uses_clock_, false);
    uses_rusage_ = std::exchange(other.uses_rusage_, false);
    started_ = std::exchange(other.started_, false);
    start_clock_ = other.start_clock_;
    start_usage_ = other.start_usage_;
  }
  return *this;
}

void ThreadCounters::close_all() noexcept {
  for (int& fd : fds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

void ThreadCounters::start() noexcept {
  values_.fill(std::nullopt);
  multiplexed_.fill(false);
  for (const int fd : fds_) {
    if (fd < 0) continue;
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  }
  // Snapshots last, so they bracket the phase as tightly as the perf counters do.
  if (uses_rusage_ && getrusage(RUSAGE_THREAD, &start_usage_) != 0) uses_rusage_ = false;
  if (uses_clock_ && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start_clock_) != 0) {
    uses_clock_ = false;
  }
  started_ = true;
}

void ThreadCounters::stop() noexcept {
  // Snapshots first, mirroring start().
  timespec end_clock{};
  rusage end_usage{};
  const bool clock_ok =
      started_ && uses_clock_ && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end_clock) == 0;
  const bool rusage_ok = started_ && uses_rusage_ && getrusage(RUSAGE_THREAD, &end_usage) == 0;
  for (const int fd : fds_) {
    if (fd >= 0) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  }

  for (const PerfEvent event : all_perf_events) {
    const std::size_t i = index_of(event);
    values_[i].reset();
    multiplexed_[i] = false;
    switch (sources_[i]) {
      case PerfSource::perf:
      case PerfSource::perf_user_only: {
        // read_format TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING: value, enabled, running.
        std::array<std::uint64_t, 3> data{};
        if (::read(fds_[i], data.data(), sizeof(data)) != static_cast<ssize_t>(sizeof(data))) break;
        const auto [count, enabled, running] = data;
        if (running == 0) break;  // never scheduled: nothing was measured
        if (running < enabled) {
          multiplexed_[i] = true;
          const long double scaled = static_cast<long double>(count) * enabled / running;
          values_[i] = static_cast<std::uint64_t>(scaled + 0.5L);
        } else {
          values_[i] = count;
        }
        break;
      }
      case PerfSource::clock:
        if (clock_ok) values_[i] = to_ns(end_clock) - to_ns(start_clock_);
        break;
      case PerfSource::rusage:
        if (!rusage_ok) break;
        if (event == PerfEvent::page_faults) {
          values_[i] = static_cast<std::uint64_t>((end_usage.ru_minflt - start_usage_.ru_minflt) +
                                                  (end_usage.ru_majflt - start_usage_.ru_majflt));
        } else {
          values_[i] = static_cast<std::uint64_t>((end_usage.ru_nvcsw - start_usage_.ru_nvcsw) +
                                                  (end_usage.ru_nivcsw - start_usage_.ru_nivcsw));
        }
        break;
      case PerfSource::unavailable:
        break;
    }
  }
  started_ = false;
}

std::optional<std::uint64_t> ThreadCounters::value(PerfEvent event) const noexcept {
  return values_[index_of(event)];
}

bool ThreadCounters::multiplexed(PerfEvent event) const noexcept {
  return multiplexed_[index_of(event)];
}

PerfSource ThreadCounters::source(PerfEvent event) const noexcept {
  return sources_[index_of(event)];
}

std::string ThreadCounters::unavailable_reason(PerfEvent event) {
  UnavailableReasons& all = unavailable_reasons();
  const std::lock_guard lock(all.mutex);
  return all.reasons[index_of(event)];
}

bool hardware_events_available() noexcept {
  // User mode only: the least privilege any hardware count needs.
  const int fd =
      open_counter(event_specs[index_of(PerfEvent::instructions)], /*exclude_kernel=*/true);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

void PerfTotals::add(const ThreadCounters& counters) noexcept {
  for (const PerfEvent event : all_perf_events) {
    const std::size_t i = index_of(event);
    const std::optional<std::uint64_t> count = counters.value(event);
    if (threads == 0) {
      values[i] = count;
    } else if (values[i] && count) {
      *values[i] += *count;
    } else {
      values[i].reset();
    }
    multiplexed[i] = multiplexed[i] || counters.multiplexed(event);
  }
  ++threads;
}

}  // namespace cdsb::bench
