// Output: every figure goes into one ordered JSON document; the key=value lines on stdout
// are printed from the same document, so the two never disagree (docs/output.md names
// every key).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/core/latency.hpp"
#include "bench/core/perf_counters.hpp"
#include "cdsbench/platform/topology.hpp"
#include "cdsbench/platform/user_stats.hpp"

namespace cdsb::bench {

using Json = nlohmann::ordered_json;

// "a, b, c": lists in messages and output lines.
std::string join(const std::vector<std::string>& items, std::string_view separator);

// A scalar as it appears after `key=`: integers exact, doubles with up to 3 decimals (or 6
// significant digits when tiny), booleans as true/false, strings verbatim.
std::string format_value(const Json& v);

// A structure's (and its reclaimer's) statistics: each counter or maximum as `name`, each
// histogram as `name_count`, `name_avg`, `name_max` and (JSON only) `name_log2_histogram`,
// a list of [lower, upper, count] for the non-empty power-of-two buckets.
void put_stats(Json& j, const StatsReport& stats);

// Writes content to path through a temporary file in the same directory, renamed over path
// when complete, so a reader never sees half a file and an interrupted write leaves the old
// one. False (and path untouched) when any step fails.
bool write_file_atomically(const std::string& path, const std::string& content);

// The process's RSS through a run's phases (P8, P11): at the start, after each named phase, at
// the end, and the run's own peak. The peak is the run's when the kernel lets it be reset at
// the start (reset_peak_rss), else unavailable: it would be the process's. Every figure is
// `unavailable` when disabled or unreadable.
class MemoryPhases {
 public:
  explicit MemoryPhases(bool enabled);
  void after(std::string phase);  // rss_after_<phase>_bytes
  void end();                     // rss_end_bytes, peak_rss_bytes
  // rss_start_bytes, rss_after_<phase>_bytes for each phase in order, rss_end_bytes, peak_rss_bytes.
  void put(Json& j) const;

 private:
  std::optional<std::uint64_t> read() const;
  bool enabled_, peak_is_runs_;
  std::optional<std::uint64_t> start_, end_, peak_;
  std::vector<std::pair<std::string, std::optional<std::uint64_t>>> after_;
};

// "PROGRAM COMMIT (COMPILER)": what --version prints.
std::string version_text(const std::string& program);

// The machine block every report starts with: machine_* (CPU model, CPUs, cores, NUMA nodes,
// packages, kernel, hostname, PMU), git_commit and compiler.
Json machine_json(const Topology& topology);

// latency_<op>_samples and its p50/p90/p99/p99_9 (ns), and the op's non-empty buckets into
// histograms[op]; nothing when no operation of the type was sampled.
void put_latency(Json& j, Json& histograms, const std::string& op, const LatencyHistogram& merged);

// Each event's total, per operation and source (`unavailable` where it has none);
// `sources` is any one thread's counters (every thread opens the same events).
void put_counters(Json& j, const PerfTotals& totals, const ThreadCounters& sources, std::uint64_t ops);

// One `key=value` line per scalar member; arrays of scalars joined by commas; nested
// objects (histograms) are left to the JSON output.
void print_kv(std::ostream& out, const Json& object);

}  // namespace cdsb::bench
