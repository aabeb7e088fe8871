// Topology (hwloc), per-thread perf counters and machine/memory information.
//
// Placement orders are checked on synthetic hwloc topologies, since the machines these
// tests run on are small (often 2 PUs, 1 NUMA node). Counter tests run their measured
// work in a fresh thread: counters follow the thread that opened them.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/core/machine_info.hpp"
#include "bench/core/perf_counters.hpp"
#include "cdsbench/platform/topology.hpp"

namespace platform_test {

using cdsb::Cpu;
using cdsb::Topology;
using cdsb::bench::PerfEvent;
using cdsb::bench::PerfSource;
using cdsb::bench::PerfTotals;
using cdsb::bench::ThreadCounters;

constexpr std::size_t mib = 1024 * 1024;

std::vector<int> sorted(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<int> os_indices(const Topology& topology) {
  std::vector<int> indices;
  for (const Cpu& cpu : topology.cpus()) indices.push_back(cpu.os_index);
  return indices;
}

std::map<int, Cpu> cpu_by_os_index(const Topology& topology) {
  std::map<int, Cpu> cpus;
  for (const Cpu& cpu : topology.cpus()) cpus.emplace(cpu.os_index, cpu);
  return cpus;
}

// Runs fn on a fresh thread and waits for it.
void on_fresh_thread(const std::function<void()>& fn) {
  std::thread thread(fn);
  thread.join();
}

// Fresh anonymous memory, unmapped on destruction. Huge pages are refused so that
// touching it takes one fault per base page.
class FreshMemory {
 public:
  explicit FreshMemory(std::size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    data_ = static_cast<char*>(p);
    madvise(data_, bytes_, MADV_NOHUGEPAGE);
  }
  FreshMemory(const FreshMemory&) = delete;
  FreshMemory& operator=(const FreshMemory&) = delete;
  ~FreshMemory() { munmap(data_, bytes_); }

  void touch() {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    volatile char* bytes = data_;
    for (std::size_t i = 0; i < bytes_; i += page) bytes[i] = 1;
  }

 private:
  std::size_t bytes_;
  char* data_ = nullptr;
};

std::uint64_t thread_cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Burns `ns` of this thread's CPU time (not wall time: a loaded machine must not shrink it).
std::uint64_t spin_cpu_for(std::uint64_t ns) {
  const std::uint64_t start = thread_cpu_ns();
  std::uint64_t sink = 0;
  while (thread_cpu_ns() - start < ns) {
    for (int i = 0; i < 1000; ++i) sink = sink * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  return sink;
}

// ---- Topology: the real machine ----------------------------------------------------------

TEST(Topology, RealMachineHasAllowedCpus) {
  const Topology topology;
  const std::vector<Cpu>& cpus = topology.cpus();
  ASSERT_GE(cpus.size(), 1u);
  EXPECT_GE(topology.cores(), 1);
  EXPECT_LE(topology.cores(), static_cast<int>(cpus.size()));
  EXPECT_GE(topology.numa_nodes(), 1);
  EXPECT_GE(topology.packages(), 1);
  for (const Cpu& cpu : cpus) {
    EXPECT_GE(cpu.os_index, 0);
    EXPECT_GE(cpu.core, 0);
    EXPECT_GE(cpu.numa_node, 0);
    EXPECT_GE(cpu.package, 0);
  }
  // Every allowed PU is one the process may run on.
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  ASSERT_EQ(sched_getaffinity(0, sizeof(affinity), &affinity), 0);
  for (const Cpu& cpu : cpus) EXPECT_TRUE(CPU_ISSET(cpu.os_index, &affinity)) << cpu.os_index;
}

TEST(Topology, OrdersArePermutationsOfAllowedCpus) {
  const Topology topology;
  const std::vector<int> all = os_indices(topology);
  EXPECT_EQ(topology.compact_order(), all);  // compact is hwloc's logical order
  const std::vector<int> unique_all = sorted(all);
  EXPECT_EQ(std::adjacent_find(unique_all.begin(), unique_all.end()), unique_all.end());
  EXPECT_EQ(sorted(topology.scatter_order()), unique_all);
}

TEST(Topology, PinsToEveryAllowedCpu) {
  const Topology topology;
  std::vector<std::pair<int, std::pair<bool, std::optional<int>>>> results;
  bool rejects_bogus = false;
  // A fresh thread, so the test process's main thread stays unpinned.
  on_fresh_thread([&] {
    for (const int os_index : topology.compact_order()) {
      const bool pinned = topology.pin_current_thread(os_index);
      results.push_back({os_index, {pinned, topology.current_cpu()}});
    }
    rejects_bogus = !topology.pin_current_thread(-1) && !topology.pin_current_thread(1 << 20);
  });
  for (const auto& [os_index, outcome] : results) {
    EXPECT_TRUE(outcome.first) << "pin to " << os_index;
    EXPECT_EQ(outcome.second, std::optional<int>(os_index));
  }
  EXPECT_TRUE(rejects_bogus);
}

TEST(Topology, ThreadsPinConcurrently) {
  const Topology topology;
  const std::vector<int> order = topology.scatter_order();
  const std::size_t thread_count = 2 * order.size();
  std::vector<int> pinned(thread_count, 0);
  std::vector<std::optional<int>> where(thread_count);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      pinned[t] = topology.pin_current_thread(order[t % order.size()]) ? 1 : 0;
      where[t] = topology.current_cpu();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::size_t t = 0; t < thread_count; ++t) {
    EXPECT_EQ(pinned[t], 1) << "thread " << t;
    EXPECT_EQ(where[t], std::optional<int>(order[t % order.size()])) << "thread " << t;
  }
}

TEST(Topology, CurrentCpuIsAnAllowedCpu) {
  const Topology topology;
  const std::optional<int> cpu = topology.current_cpu();
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ(cpu_by_os_index(topology).count(*cpu), 1u);
}

TEST(Topology, IsMovable) {
  Topology a("pack:2 numa:1 core:2 pu:2");
  const std::vector<int> scatter = a.scatter_order();
  Topology b(std::move(a));
  EXPECT_EQ(b.scatter_order(), scatter);
  Topology c;
  c = std::move(b);
  EXPECT_EQ(c.scatter_order(), scatter);
  EXPECT_EQ(c.packages(), 2);
}

// ---- Topology: synthetic machines --------------------------------------------------------

TEST(TopologySynthetic, RejectsInvalidDescription) {
  EXPECT_THROW(Topology("this is not a topology"), std::runtime_error);
}

TEST(TopologySynthetic, CannotPin) {
  const Topology topology("pack:1 numa:1 core:2 pu:1");
  EXPECT_FALSE(topology.pin_current_thread(0));
  EXPECT_FALSE(topology.current_cpu().has_value());
}

TEST(TopologySynthetic, TwoPackagesWithSmt) {
  const Topology topology("pack:2 numa:1 core:2 pu:2");
  EXPECT_EQ(topology.cpus().size(), 8u);
  EXPECT_EQ(topology.packages(), 2);
  EXPECT_EQ(topology.numa_nodes(), 2);
  EXPECT_EQ(topology.cores(), 4);
  EXPECT_EQ(topology.compact_order(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Core c holds PUs 2c, 2c+1; cores 0,1 on package 0. Packages alternate; each core's
  // second hyperthread only after every core has one.
  EXPECT_EQ(topology.scatter_order(), (std::vector<int>{0, 4, 2, 6, 1, 5, 3, 7}));
}

TEST(TopologySynthetic, OrdersUseOsIndices) {
  // Intel-style numbering: a core's hyperthreads are P#k and P#k+4.
  const Topology topology("pack:2 numa:1 core:2 pu:2(indexes=0,4,1,5,2,6,3,7)");
  EXPECT_EQ(topology.compact_order(), (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(topology.scatter_order(), (std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7}));
}

// Properties every scatter order must have, whatever the machine.
void expect_scatter_properties(const Topology& topology) {
  const std::vector<int> scatter = topology.scatter_order();
  const std::map<int, Cpu> cpus = cpu_by_os_index(topology);
  ASSERT_EQ(sorted(scatter), sorted(os_indices(topology)));

  const auto numa_count = static_cast<std::size_t>(topology.numa_nodes());
  std::set<int> numa_seen;
  for (std::size_t i = 0; i < numa_count; ++i) numa_seen.insert(cpus.at(scatter[i]).numa_node);
  EXPECT_EQ(numa_seen.size(), numa_count) << "the first entries must cover every NUMA node";

  const auto core_count = static_cast<std::size_t>(topology.cores());
  std::set<int> cores_seen;
  for (std::size_t i = 0; i < core_count; ++i) cores_seen.insert(cpus.at(scatter[i]).core);
  EXPECT_EQ(cores_seen.size(), core_count) << "no hyperthread sibling before every core has one";
}

TEST(TopologySynthetic, FourNumaNodesWithSmt) {
  const Topology topology("numa:4 core:3 pu:2");
  EXPECT_EQ(topology.cpus().size(), 24u);
  EXPECT_EQ(topology.numa_nodes(), 4);
  EXPECT_EQ(topology.cores(), 12);
  expect_scatter_properties(topology);
  const std::map<int, Cpu> cpus = cpu_by_os_index(topology);
  const std::vector<int> scatter = topology.scatter_order();
  // Round-robin over NUMA nodes all the way through.
  for (std::size_t i = 0; i < scatter.size(); ++i) {
    EXPECT_EQ(cpus.at(scatter[i]).numa_node, static_cast<int>(i % 4)) << "entry " << i;
  }
}

TEST(TopologySynthetic, TwoPackagesTwoNumaNodesEach) {
  const Topology topology("pack:2 numa:2 core:4 pu:2");
  EXPECT_EQ(topology.packages(), 2);
  EXPECT_EQ(topology.numa_nodes(), 4);
  EXPECT_EQ(topology.cores(), 16);
  expect_scatter_properties(topology);
  // Consecutive entries alternate packages too (the outermost level with a choice).
  const std::map<int, Cpu> cpus = cpu_by_os_index(topology);
  const std::vector<int> scatter = topology.scatter_order();
  for (std::size_t i = 1; i < scatter.size(); ++i) {
    EXPECT_NE(cpus.at(scatter[i]).package, cpus.at(scatter[i - 1]).package) << "entry " << i;
  }
}

TEST(TopologySynthetic, SpreadsOverLastLevelCaches) {
  // Two L3 caches (e.g. AMD CCXs) in one NUMA node: alternate between them.
  const Topology topology("pack:1 numa:1 l3:2 core:2 pu:1");
  EXPECT_EQ(topology.compact_order(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(topology.scatter_order(), (std::vector<int>{0, 2, 1, 3}));
}

TEST(TopologySynthetic, NoSmt) {
  const Topology topology("pack:2 numa:2 core:3 pu:1");
  expect_scatter_properties(topology);
  EXPECT_EQ(topology.cores(), 12);
}

// ---- Perf counters -----------------------------------------------------------------------

TEST(PerfCounters, EventNamesAreStable) {
  const std::vector<std::string> expected = {
      "cycles",        "instructions", "l1d_misses",       "llc_misses",    "dtlb_misses",
      "branch_misses", "task_clock_ns", "page_faults", "context_switches", "cpu_migrations"};
  ASSERT_EQ(cdsb::bench::all_perf_events.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(cdsb::bench::perf_event_name(cdsb::bench::all_perf_events[i]), expected[i]);
  }
}

TEST(PerfCounters, SoftwareEventsAreAvailable) {
  std::vector<std::pair<PerfEvent, std::pair<PerfSource, std::optional<std::uint64_t>>>> seen;
  on_fresh_thread([&] {
    ThreadCounters counters;
    counters.start();
    spin_cpu_for(1'000'000);
    counters.stop();
    for (const PerfEvent event :
         {PerfEvent::task_clock_ns, PerfEvent::page_faults, PerfEvent::context_switches,
          PerfEvent::cpu_migrations}) {
      seen.push_back({event, {counters.source(event), counters.value(event)}});
    }
  });
  for (const auto& [event, outcome] : seen) {
    const auto [source, value] = outcome;
    if (event == PerfEvent::cpu_migrations && source == PerfSource::unavailable) continue;
    EXPECT_NE(source, PerfSource::unavailable) << cdsb::bench::perf_event_name(event);
    EXPECT_TRUE(value.has_value()) << cdsb::bench::perf_event_name(event);
    EXPECT_EQ(ThreadCounters::unavailable_reason(event), "") << cdsb::bench::perf_event_name(event);
  }
}

TEST(PerfCounters, TaskClockMeasuresSpinning) {
  std::optional<std::uint64_t> task_clock;
  on_fresh_thread([&] {
    ThreadCounters counters;
    counters.start();
    spin_cpu_for(50'000'000);
    counters.stop();
    task_clock = counters.value(PerfEvent::task_clock_ns);
  });
  ASSERT_TRUE(task_clock.has_value());
  EXPECT_GE(*task_clock, 30'000'000u);
  EXPECT_LE(*task_clock, 200'000'000u);
}

TEST(PerfCounters, PageFaultsCountFreshMemory) {
  std::optional<std::uint64_t> faults;
  on_fresh_thread([&] {
    FreshMemory memory(64 * mib);
    ThreadCounters counters;
    counters.start();
    memory.touch();
    counters.stop();
    faults = counters.value(PerfEvent::page_faults);
  });
  ASSERT_TRUE(faults.has_value());
  EXPECT_GE(*faults, 1000u);
}

// Each sleep gives up the CPU once. A perf counter that may not count kernel mode reads 0
// here (switches happen in the kernel), which is why that case falls back to getrusage.
TEST(PerfCounters, ContextSwitchesCountSleeps) {
  std::optional<std::uint64_t> switches;
  on_fresh_thread([&] {
    ThreadCounters counters;
    counters.start();
    for (int i = 0; i < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    counters.stop();
    switches = counters.value(PerfEvent::context_switches);
  });
  ASSERT_TRUE(switches.has_value());
  EXPECT_GE(*switches, 10u);
}

// Decision: a counter never started (or stopped without a start) reports nullopt, not 0:
// nothing was measured, and the report must not print a number for it.
TEST(PerfCounters, NeverStartedReportsNothing) {
  ThreadCounters counters;
  for (const PerfEvent event : cdsb::bench::all_perf_events) {
    EXPECT_FALSE(counters.value(event).has_value()) << cdsb::bench::perf_event_name(event);
  }
  counters.stop();
  for (const PerfEvent event : cdsb::bench::all_perf_events) {
    EXPECT_FALSE(counters.value(event).has_value()) << cdsb::bench::perf_event_name(event);
  }
}

TEST(PerfCounters, HardwareEventsAreConsistent) {
  std::vector<std::pair<PerfEvent, std::pair<PerfSource, std::optional<std::uint64_t>>>> seen;
  on_fresh_thread([&] {
    ThreadCounters counters;
    counters.start();
    spin_cpu_for(5'000'000);
    counters.stop();
    for (const PerfEvent event : cdsb::bench::all_perf_events) {
      if (cdsb::bench::is_hardware_event(event)) {
        seen.push_back({event, {counters.source(event), counters.value(event)}});
      }
    }
  });
  for (const auto& [event, outcome] : seen) {
    const auto [source, value] = outcome;
    const std::string_view name = cdsb::bench::perf_event_name(event);
    if (source == PerfSource::unavailable) {
      EXPECT_FALSE(value.has_value()) << name;
      EXPECT_NE(ThreadCounters::unavailable_reason(event), "") << name;
    } else {
      EXPECT_TRUE(source == PerfSource::perf || source == PerfSource::perf_user_only) << name;
      if (event == PerfEvent::instructions || event == PerfEvent::cycles) {
        ASSERT_TRUE(value.has_value()) << name;
        EXPECT_GT(*value, 0u) << name;
      }
    }
  }
  const PerfSource instructions =
      seen[static_cast<std::size_t>(PerfEvent::instructions)].second.first;
  EXPECT_EQ(cdsb::bench::hardware_events_available(), instructions != PerfSource::unavailable);
}

TEST(PerfCounters, TotalsSumThreadsAndNulloptIsSticky) {
  std::optional<std::uint64_t> first, second;
  PerfTotals totals;
  EXPECT_FALSE(totals.value(PerfEvent::task_clock_ns).has_value());
  for (std::optional<std::uint64_t>* out : {&first, &second}) {
    on_fresh_thread([&] {
      ThreadCounters counters;
      counters.start();
      spin_cpu_for(2'000'000);
      counters.stop();
      *out = counters.value(PerfEvent::task_clock_ns);
      totals.add(counters);
    });
  }
  ASSERT_TRUE(first && second);
  EXPECT_EQ(totals.threads, 2);
  EXPECT_EQ(totals.value(PerfEvent::task_clock_ns), *first + *second);

  const ThreadCounters never_started;
  totals.add(never_started);
  EXPECT_EQ(totals.threads, 3);
  EXPECT_FALSE(totals.value(PerfEvent::task_clock_ns).has_value());
}

TEST(PerfCounters, IsMovable) {
  std::optional<std::uint64_t> moved_value, moved_from_value;
  on_fresh_thread([&] {
    ThreadCounters original;
    ThreadCounters moved(std::move(original));
    moved.start();
    spin_cpu_for(1'000'000);
    moved.stop();
    moved_value = moved.value(PerfEvent::task_clock_ns);
    moved_from_value = original.value(PerfEvent::task_clock_ns);  // NOLINT(bugprone-use-after-move)
    ThreadCounters assigned;
    assigned = std::move(moved);
    EXPECT_EQ(assigned.value(PerfEvent::task_clock_ns), moved_value);
  });
  EXPECT_TRUE(moved_value.has_value());
  EXPECT_FALSE(moved_from_value.has_value());
}

// Not a check: shows in the test log what this machine can count and why not.
TEST(PerfCounters, ReportWhatThisMachineCounts) {
  on_fresh_thread([] {
    ThreadCounters counters;
    counters.start();
    spin_cpu_for(1'000'000);
    counters.stop();
    for (const PerfEvent event : cdsb::bench::all_perf_events) {
      std::cout << "  " << cdsb::bench::perf_event_name(event) << ": "
                << cdsb::bench::perf_source_name(counters.source(event));
      if (const auto value = counters.value(event)) std::cout << " = " << *value;
      const std::string reason = ThreadCounters::unavailable_reason(event);
      if (!reason.empty()) std::cout << " [" << reason << "]";
      std::cout << '\n';
    }
  });
}

// ---- Machine info and memory -------------------------------------------------------------

TEST(MachineInfo, DescribesThisMachine) {
  const Topology topology;
  const cdsb::bench::MachineInfo info = cdsb::bench::read_machine_info(topology);
  EXPECT_GE(info.cpus, 1);
  EXPECT_EQ(info.cpus, static_cast<int>(topology.cpus().size()));
  EXPECT_GE(info.cores, 1);
  EXPECT_GE(info.numa_nodes, 1);
  EXPECT_GE(info.packages, 1);
  EXPECT_FALSE(info.cpu_model.empty());
  EXPECT_EQ(info.kernel.rfind("Linux ", 0), 0u) << info.kernel;
  EXPECT_GT(info.kernel.size(), 6u);
  EXPECT_EQ(info.pmu_available, cdsb::bench::hardware_events_available());
}

TEST(MachineInfo, RssFollowsTouchedMemory) {
  const std::optional<std::uint64_t> before = cdsb::bench::current_rss_bytes();
  ASSERT_TRUE(before.has_value());
  std::optional<std::uint64_t> touched, peak_touched;
  {
    FreshMemory memory(64 * mib);
    memory.touch();
    touched = cdsb::bench::current_rss_bytes();
    peak_touched = cdsb::bench::peak_rss_bytes();
  }
  ASSERT_TRUE(touched && peak_touched);
  EXPECT_GE(*touched, *before + 32 * mib);
  EXPECT_GE(*peak_touched, *touched);

  // The 64 MiB are unmapped again; a reset must drop the peak to about the current RSS.
  if (!cdsb::bench::reset_peak_rss()) GTEST_SKIP() << "/proc/self/clear_refs not writable";
  const std::optional<std::uint64_t> peak = cdsb::bench::peak_rss_bytes();
  const std::optional<std::uint64_t> current = cdsb::bench::current_rss_bytes();
  ASSERT_TRUE(peak && current);
  EXPECT_LE(*peak, *current + 16 * mib);
  EXPECT_GE(*peak + 16 * mib, *current);
  EXPECT_LE(*peak + 32 * mib, *peak_touched);
}

}  // namespace platform_test
