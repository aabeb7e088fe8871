// Output: every figure goes into one ordered JSON document; the key=value lines on stdout
// are printed from the same document, so the two never disagree (docs/output.md names
// every key).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

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

// One `key=value` line per scalar member; arrays of scalars joined by commas; nested
// objects (histograms) are left to the JSON output.
void print_kv(std::ostream& out, const Json& object);

}  // namespace cdsb::bench
