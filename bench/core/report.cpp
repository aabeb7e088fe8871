#include "bench/core/report.hpp"

#include <cmath>
#include <cstdio>
#include <utility>
#include <fstream>

#include <unistd.h>

namespace cdsb::bench {

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string format_value(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    char buf[64];
    if (d != 0 && std::fabs(d) < 1) {  // six significant digits, not three decimals
      std::snprintf(buf, sizeof buf, "%.6g", d);
      return buf;
    }
    std::snprintf(buf, sizeof buf, "%.3f", d);
    std::string s = buf;
    s.erase(s.find_last_not_of('0') + 1);  // 12.500 -> 12.5, 3.000 -> 3.
    if (s.back() == '.') s.pop_back();
    return s;
  }
  if (v.is_null()) return "none";
  return v.dump();
}

void print_kv(std::ostream& out, const Json& object) {
  for (const auto& [key, value] : object.items()) {
    if (value.is_object()) continue;
    if (value.is_array()) {
      std::vector<std::string> items;
      bool scalar = true;
      for (const auto& item : value) {
        scalar = scalar && !item.is_structured();
        items.push_back(format_value(item));
      }
      if (scalar) out << key << '=' << join(items, ",") << '\n';
      continue;
    }
    out << key << '=' << format_value(value) << '\n';
  }
}

bool write_file_atomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::trunc | std::ios::binary);
    out << content;
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

void put_memory(Json& j, const MemoryFigures& memory) {
  auto put = [&](const char* key, std::optional<std::uint64_t> v) {
    if (v) j[key] = *v;
    else j[key] = "unavailable";
  };
  put("rss_start_bytes", memory.start);
  put("rss_after_prefill_bytes", memory.after_prefill);
  put("rss_end_bytes", memory.end);
  put("peak_rss_bytes", memory.peak);
}

void put_latency(Json& j, Json& histograms, const std::string& op, const LatencyHistogram& merged) {
  if (merged.total() == 0) return;
  j["latency_" + op + "_samples"] = merged.total();
  for (auto [q, label] : {std::pair{0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}, {0.999, "p99_9"}})
    j["latency_" + op + "_" + label + "_ns"] = *merged.percentile(q);
  Json buckets = Json::array();
  for (int b = 0; b < LatencyHistogram::bucket_count; ++b)
    if (merged.count(b)) buckets.push_back({LatencyHistogram::lower_bound(b), LatencyHistogram::upper_bound(b), merged.count(b)});
  histograms[op] = buckets;
}

void put_counters(Json& j, const PerfTotals& totals, const ThreadCounters& sources, std::uint64_t ops) {
  for (PerfEvent e : all_perf_events) {
    const std::string name(perf_event_name(e));
    j[name + "_source"] = std::string(perf_source_name(sources.source(e)));
    if (const auto v = totals.value(e)) {
      j[name] = *v;
      j[name + "_per_op"] = ops ? static_cast<double>(*v) / static_cast<double>(ops) : 0.0;
    } else {
      j[name] = "unavailable";
      j[name + "_per_op"] = "unavailable";
    }
  }
}

void put_stats(Json& j, const StatsReport& stats) {
  for (const auto& [name, value] : stats.values) j[name] = value;
  for (const HistogramFigure& h : stats.histograms) {
    j[h.name + "_count"] = h.count;
    j[h.name + "_avg"] = h.average();
    j[h.name + "_max"] = h.max;
    Json buckets = Json::array();
    for (std::size_t b = 0; b < h.log2_buckets.size(); ++b) {
      if (!h.log2_buckets[b]) continue;
      const std::uint64_t lower = b == 0 ? 0 : std::uint64_t{1} << (b - 1);
      const std::uint64_t upper = b == 0 ? 0 : b == 64 ? UINT64_MAX : (std::uint64_t{1} << b) - 1;
      buckets.push_back({lower, upper, h.log2_buckets[b]});
    }
    j[h.name + "_log2_histogram"] = buckets;
  }
}

}  // namespace cdsb::bench
