// The measurement core as an application uses it (bench/core/): a thread team's phases and
// figures, and the RSS of named phases, without the registry or the harness's Config.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "bench/core/report.hpp"
#include "bench/core/thread_team.hpp"

namespace cdsb::bench {
namespace measure_test {

const Topology& topology() {
  static const Topology t;
  return t;
}

TEST(ThreadTeam, PhasesMeetTheCallerAndFiguresAreEachThreadsOwn) {
  constexpr int n = 3;
  const std::vector<int> cpus(n, -1);
  ThreadTeam team(topology(), cpus, true);
  std::vector<int> written(n, 0);
  std::atomic<int> seen_by_all{0};
  team.start([&](int tid) {
    written[tid] = tid + 1;
    team.sync();  // 1: every thread wrote
    int sum = 0;
    for (int v : written) sum += v;
    if (sum == 6) seen_by_all.fetch_add(1, std::memory_order_relaxed);
    team.sync();  // 2: every thread read
    team.begin_measured(tid);
    volatile int spin = 0;
    for (int i = 0; i < 100000; ++i) spin = spin + 1;
    team.end_measured(tid);
  });
  team.sync();
  team.sync();
  team.join();
  EXPECT_EQ(seen_by_all.load(), n);  // the barrier ordered every write before every read
  EXPECT_EQ(team.pin_failures(), 0);
  for (const ThreadFigures& f : team.figures()) {
    EXPECT_FALSE(f.pinned);  // planned unpinned
    EXPECT_LE(f.start_ns, f.end_ns);
    EXPECT_GT(f.start_ns, 0u);
    ASSERT_TRUE(f.counters.has_value());
    // CPU time is always countable (perf, or clock_gettime where there is no perf).
    EXPECT_TRUE(f.counters->value(PerfEvent::task_clock_ns).has_value());
  }
}

TEST(ThreadTeam, WithoutProcessFiguresNoCountersAreOpened) {
  const std::vector<int> cpus(2, -1);
  ThreadTeam team(topology(), cpus, false);
  team.start([&](int tid) {
    team.begin_measured(tid);
    team.end_measured(tid);
  });
  team.join();
  for (const ThreadFigures& f : team.figures()) EXPECT_FALSE(f.counters.has_value());
}

TEST(MemoryPhases, NamesEachPhaseInOrderAndSeesMemoryGrow) {
  MemoryPhases memory(true);
  constexpr std::size_t bytes = 64u << 20;
  auto block = std::make_unique<char[]>(bytes);
  for (std::size_t i = 0; i < bytes; i += 4096) block[i] = 1;  // touch every page
  memory.after("load");
  memory.after("run");
  memory.end();
  Json j;
  memory.put(j);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"rss_start_bytes", "rss_after_load_bytes", "rss_after_run_bytes",
                                            "rss_end_bytes", "peak_rss_bytes"}));
  ASSERT_TRUE(j["rss_start_bytes"].is_number());  // /proc/self/status is readable here
  EXPECT_GE(j["rss_after_load_bytes"].get<std::uint64_t>(), j["rss_start_bytes"].get<std::uint64_t>() + bytes / 2);
}

TEST(MemoryPhases, DisabledFiguresAreUnavailableNotZero) {
  MemoryPhases memory(false);
  memory.after("load");
  memory.end();
  Json j;
  memory.put(j);
  for (const auto& item : j.items()) EXPECT_EQ(item.value(), "unavailable") << item.key();
}

}  // namespace measure_test
}  // namespace cdsb::bench
