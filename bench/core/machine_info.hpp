// What the report says about the machine a result came from, and the process's memory
// (pitfalls P8, P11: peak RSS is reported with every trial, each trial's peak its own).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cdsbench/platform/topology.hpp"

namespace cdsb::bench {

struct MachineInfo {
  std::string cpu_model;  // /proc/cpuinfo "model name", or "unknown"
  int cpus = 0;           // allowed PUs (Topology::cpus())
  int cores = 0;
  int numa_nodes = 0;
  int packages = 0;
  std::uint64_t memory_bytes = 0;  // physical memory (sysconf), 0 if unknown
  std::string kernel;     // uname -sr, e.g. "Linux 6.1.0-18-amd64"
  std::string hostname;
  bool pmu_available = false;  // hardware events can be counted (hardware_events_available())
};

MachineInfo read_machine_info(const Topology& topology);

// Resident set of this process, from /proc/self/status (VmRSS); nullopt if unreadable.
std::optional<std::uint64_t> current_rss_bytes();
// Highest resident set since start or the last reset_peak_rss() (VmHWM).
std::optional<std::uint64_t> peak_rss_bytes();
// Sets the peak to the current resident set (writes "5" to /proc/self/clear_refs, Linux
// >= 4.0), so each trial's peak is its own. False if not supported or not permitted; then
// peak_rss_bytes() keeps counting from process start and must not be read as the trial's.
bool reset_peak_rss();

}  // namespace cdsb::bench
