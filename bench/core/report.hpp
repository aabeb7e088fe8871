// Output: every figure goes into one ordered JSON document; the key=value lines on stdout
// are printed from the same document, so the two never disagree (docs/output.md names
// every key).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/core/latency.hpp"
#include "bench/core/perf_counters.hpp"
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

// The process's RSS at a run's phases (P8); each nullopt where the kernel gives none.
struct MemoryFigures {
  std::optional<std::uint64_t> start, after_prefill, end, peak;
};
// rss_start_bytes, rss_after_prefill_bytes, rss_end_bytes, peak_rss_bytes (or `unavailable`).
void put_memory(Json& j, const MemoryFigures& memory);

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
