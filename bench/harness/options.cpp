#include "bench/harness/options.hpp"

#include "bench/core/process_allocator.hpp"
#include "bench/core/report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

namespace cdsb::bench {

const char* prefill_mode_name(PrefillMode m) {
  switch (m) {
    case PrefillMode::steady: return "steady";
    case PrefillMode::insert_only: return "insert-only";
    case PrefillMode::none: return "none";
  }
  return "?";
}

namespace {

double parse_number(const std::string& option, const std::string& text, double min, double max,
                     const std::string& allowed) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end || !std::isfinite(value))
    throw UsageError{option + ": '" + text + "' is not a number; allowed: " + allowed};
  if (value < min || value > max) throw UsageError{option + ": " + text + " is out of range; allowed: " + allowed};
  return value;
}

// Values are read as text and converted here, so every message has one shape.
struct RawOptions {
  std::string ds, threads = "1", rq_threads = "0", key_range = "1000000", insert = "10",
              delete_ = "10", rq = "0", find_or_insert = "0", assign = "0", rq_size = "100", duration_ms, ops, prefill = "steady",
              prefill_tolerance = "0.01", prefill_aging = "0.05", prefill_timeout_ms = "60000", distribution = "uniform",
              prng = "xoshiro256starstar", seed, reseed_every = "0", pin = "compact",
              latency_sample = "0", reclaimer, allocator, malloc, trials = "1", json, keys = "u64", hash, presize = "yes";
  bool list = false, reclaim_eager = false;
  std::string prefill_items, external_work, nr_replicas, nr_log_entries;  // black-box structures and queues
  std::string queue_mode, producers, enqueue, batch, items;                // queues
};

// The options of queues; refused for the other kinds.
void convert_queue(const RawOptions& raw, const StructureEntry& entry, Config& c) {
  const bool queue = runs_queue_workload(entry.kind);
  for (const auto& [option, given] : {std::pair{"--queue-mode", raw.queue_mode}, std::pair{"--producers", raw.producers},
                                      std::pair{"--enqueue", raw.enqueue}, std::pair{"--batch", raw.batch}, std::pair{"--items", raw.items}})
    if (!queue && !given.empty())
      throw UsageError{std::string(option) + ": structure '" + c.ds +
                       "' does not take it; allowed: only with queues and stacks (kind queue or stack)"};
  if (!queue) return;
  if (raw.queue_mode == "split") c.queue_mode = QueueMode::split;
  else if (raw.queue_mode == "random") c.queue_mode = QueueMode::random;
  else if (!raw.queue_mode.empty() && raw.queue_mode != "pairs")
    throw UsageError{"--queue-mode: unknown mode '" + raw.queue_mode + "'; allowed: pairs, split, random"};
  if (c.queue_mode == QueueMode::split) {
    if (c.threads < 2)
      throw UsageError{"--queue-mode split: needs a producer and a consumer, but --threads is 1; allowed: --threads 2 or more"};
    c.producers = raw.producers.empty() ? c.threads / 2
                                        : parse_integer<int>("--producers", raw.producers, 1, c.threads - 1);
  } else if (!raw.producers.empty()) {
    throw UsageError{"--producers: only split mode has producers; allowed: with --queue-mode split"};
  }
  if (c.queue_mode == QueueMode::random) {
    if (!raw.enqueue.empty()) c.enqueue_pct = parse_number("--enqueue", raw.enqueue, 1, 99, "a percentage in [1, 99]");
  } else if (!raw.enqueue.empty()) {
    throw UsageError{"--enqueue: only random mode draws each operation; allowed: with --queue-mode random"};
  }
  if (!raw.batch.empty()) c.batch = parse_integer<std::uint32_t>("--batch", raw.batch, 1, 64);
  if (!raw.items.empty()) {
    if (!raw.ops.empty() || !raw.duration_ms.empty())
      throw UsageError{"--items: a fixed number of items replaces --duration-ms and --ops; allowed: one of them"};
    if (c.queue_mode == QueueMode::random)
      throw UsageError{"--items: random mode moves no fixed number of items; allowed: --queue-mode pairs or split"};
    c.items = parse_integer<std::uint64_t>("--items", raw.items, 1, std::uint64_t{1} << 40);
  }
  // A split trial ends when its consumers have emptied the queue: an operation count would
  // stop them first and leave producers of a bounded queue waiting forever.
  if (c.ops && c.queue_mode == QueueMode::split)
    throw UsageError{"--ops: split mode ends when the consumers have emptied the queue; allowed: --items N or --duration-ms"};
  if (entry.capacity && c.queue_mode != QueueMode::split &&
      c.prefill_items.value_or(0) + static_cast<std::uint64_t>(c.threads) * c.batch > entry.capacity)
    throw UsageError{"--prefill-items: structure '" + c.ds + "' holds at most " + std::to_string(entry.capacity) +
                     " items and would block forever; allowed: prefill plus threads x batch up to that"};
}

// The options of the black-box structures (METHOD.STRUCTURE); refused for the others.
void convert_blackbox(const RawOptions& raw, const StructureEntry& entry, Config& c) {
  auto refuse = [&](const char* option, bool applies, const std::string& given, const char* which) {
    if (!applies && !given.empty())
      throw UsageError{std::string(option) + ": structure '" + c.ds + "' does not take it; allowed: only with " + which};
  };
  const bool black_box = entry.kind == StructureKind::black_box;
  refuse("--prefill-items", black_box || runs_queue_workload(entry.kind), raw.prefill_items,
         "black-box structures (kind black_box, e.g. nr.stack), queues and stacks");
  refuse("--external-work", black_box, raw.external_work, "black-box structures (kind black_box, e.g. nr.stack)");
  refuse("--nr-replicas", entry.node_replicated, raw.nr_replicas, "Node Replication structures (method nr)");
  refuse("--nr-log-entries", entry.node_replicated, raw.nr_log_entries, "Node Replication structures (method nr)");
  if (!raw.prefill_items.empty())
    c.prefill_items = parse_integer<std::uint64_t>("--prefill-items", raw.prefill_items, 0, std::uint64_t{1} << 40);
  if (!raw.external_work.empty())
    c.external_work = parse_integer<std::uint32_t>("--external-work", raw.external_work, 0, 4096);
  if (!raw.nr_replicas.empty()) c.nr_replicas = parse_integer<int>("--nr-replicas", raw.nr_replicas, 1, 1024);
  if (!raw.nr_log_entries.empty())
    c.nr_log_entries = parse_integer<std::uint64_t>("--nr-log-entries", raw.nr_log_entries, 2, std::uint64_t{1} << 30);
  // A structure with a key range of its own (the synthetic buffer: key-range entries of two
  // cache lines each).
  if (entry.max_key_range && c.key_range > entry.max_key_range)
    throw UsageError{"--key-range: " + std::to_string(c.key_range) + " is out of range for structure '" + c.ds +
                     "'; allowed: an integer in 1.." + std::to_string(entry.max_key_range)};
}

Config convert(const RawOptions& raw, const Registry& registry) {
  Config c;
  c.list = raw.list;
  if (c.list) {
    c.json_path = raw.json;  // --list --json FILE: the registry as JSON
    return c;
  }

  std::vector<std::string> names;
  for (const auto& e : registry.entries()) names.push_back(e.name);
  if (raw.ds.empty()) throw UsageError{"--ds: a structure is required; allowed: " + join(names, ", ") + " (--list describes them)"};
  const StructureEntry* entry = registry.find(raw.ds);
  if (!entry) throw UsageError{"--ds: unknown structure '" + raw.ds + "'; allowed: " + join(names, ", ")};
  c.ds = raw.ds;
  if (entry->unavailable_reason)
    if (const std::string why = entry->unavailable_reason(); !why.empty())
      throw UsageError{"--ds: structure '" + c.ds + "' cannot run on this machine: " + why + "; allowed: another structure"};

  constexpr int max_threads = 4096;
  c.threads = parse_integer<int>("--threads", raw.threads, 1, max_threads);
  c.rq_threads = parse_integer<int>("--rq-threads", raw.rq_threads, 0, max_threads);
  c.key_range = parse_integer<std::uint64_t>("--key-range", raw.key_range, 1, std::uint64_t{1} << 62);

  const std::string pct = "a percentage in [0, 100]";
  c.insert_pct = parse_number("--insert", raw.insert, 0, 100, pct);
  c.delete_pct = parse_number("--delete", raw.delete_, 0, 100, pct);
  c.rq_pct = parse_number("--rq", raw.rq, 0, 100, pct);
  c.find_or_insert_pct = parse_number("--find-or-insert", raw.find_or_insert, 0, 100, pct);
  c.assign_pct = parse_number("--assign", raw.assign, 0, 100, pct);
  const double sum = c.insert_pct + c.delete_pct + c.rq_pct + c.find_or_insert_pct + c.assign_pct;
  if (sum > 100.0 + 1e-9) {
    std::ostringstream m;
    m << "--insert/--delete/--rq/--find-or-insert/--assign: the rates sum to " << sum
      << "%; allowed: a sum of at most 100 (searches are the rest)";
    throw UsageError{m.str()};
  }
  if ((c.find_or_insert_pct > 0 || c.assign_pct > 0) && !entry->map_operations)
    throw UsageError{std::string(c.find_or_insert_pct > 0 ? "--find-or-insert" : "--assign") + ": structure '" + c.ds +
                     "' is not a map with find_or_insert; allowed: 0 for it (maps: cdsbench --list)"};
  if (c.assign_pct > 0 && !entry->map_assign)
    throw UsageError{"--assign: structure '" + c.ds + "' has no linearizable assign; allowed: 0 for it"};
  if (raw.keys == "digest") c.keys = KeyType::digest;
  else if (raw.keys == "bytes") c.keys = KeyType::bytes;
  else if (raw.keys != "u64") throw UsageError{"--keys: unknown key type '" + raw.keys + "'; allowed: u64, digest, bytes"};
  const auto built = entry->key_hashes.find(raw.keys);
  if (c.keys != KeyType::u64 && built == entry->key_hashes.end()) {
    std::vector<std::string> keys{"u64"};
    for (const auto& [k, hashes] : entry->key_hashes) keys.push_back(k);
    throw UsageError{"--keys: structure '" + c.ds + "' is not built with " + raw.keys + " keys; allowed: " + join(keys, ", ") + " for it"};
  }
  if (!raw.hash.empty()) {
    const std::vector<std::string> hashes = c.keys == KeyType::u64 ? std::vector<std::string>{"even"} : built->second;
    if (std::find(hashes.begin(), hashes.end(), raw.hash) == hashes.end())
      throw UsageError{"--hash: '" + raw.hash + "' is not built for structure '" + c.ds + "' with --keys " + raw.keys +
                       "; allowed: " + join(hashes, ", ") + (c.keys == KeyType::u64 ? " (other hashes take --keys digest)" : "")};
    c.hash = raw.hash;
  }
  c.rq_size = parse_integer<std::uint64_t>("--rq-size", raw.rq_size, 1, c.key_range);
  if ((c.rq_pct > 0 || c.rq_threads > 0) && !entry->range_queries)
    throw UsageError{std::string(c.rq_pct > 0 ? "--rq" : "--rq-threads") + ": structure '" + c.ds +
              "' has no range query; allowed: 0 for it"};
  // A structure whose erase is not thread-safe (registry.hpp: concurrent_erase) erases only
  // while no other thread runs; its steady prefill ages on one thread (set_workload.hpp).
  if (c.delete_pct > 0 && c.total_threads() > 1 && !entry->concurrent_erase)
    throw UsageError{"--delete: structure '" + c.ds + "' has no thread-safe erase, so it cannot delete while " +
                     std::to_string(c.total_threads()) + " threads run; allowed: 0, or --threads 1"};

  if (!raw.duration_ms.empty() && !raw.ops.empty())
    throw UsageError{"--duration-ms/--ops: give one of them, not both"};
  if (!raw.ops.empty())
    c.ops = parse_integer<std::uint64_t>("--ops", raw.ops, 1, std::numeric_limits<std::uint64_t>::max());
  else if (!raw.duration_ms.empty())
    c.duration_ms = parse_integer<std::uint64_t>("--duration-ms", raw.duration_ms, 1, 86'400'000);

  if (raw.prefill == "steady") c.prefill = PrefillMode::steady;
  else if (raw.prefill == "insert-only") c.prefill = PrefillMode::insert_only;
  else if (raw.prefill == "none") c.prefill = PrefillMode::none;
  else throw UsageError{"--prefill: unknown mode '" + raw.prefill + "'; allowed: steady, insert-only, none"};
  c.prefill_tolerance = parse_number("--prefill-tolerance", raw.prefill_tolerance, 0, 0.5,
                                     "a fraction of the target size in [0, 0.5]");
  c.prefill_aging = parse_number("--prefill-aging", raw.prefill_aging, 0, 1000, "a multiple of the key range in [0, 1000]");
  c.prefill_timeout_ms = parse_integer<std::uint64_t>("--prefill-timeout-ms", raw.prefill_timeout_ms, 1, 86'400'000);

  auto dist = parse_distribution(raw.distribution);
  if (auto* err = std::get_if<std::string>(&dist)) throw UsageError{*err};
  c.distribution = std::get<DistributionSpec>(dist);

  const auto prng = generator_from_name(raw.prng);
  if (!prng) {
    std::vector<std::string> gens;
    for (GeneratorKind g : all_generators()) gens.emplace_back(generator_name(g));
    throw UsageError{"--prng: unknown generator '" + raw.prng + "'; allowed: " + join(gens, ", ")};
  }
  if (!generator_available(*prng))
    throw UsageError{"--prng: " + raw.prng + " is not available on this CPU; allowed: any other generator"};
  c.prng = *prng;

  c.seed_given = !raw.seed.empty();
  if (c.seed_given)
    c.seed = parse_integer<std::uint64_t>("--seed", raw.seed, 0, std::numeric_limits<std::uint64_t>::max());
  c.reseed_every = parse_integer<std::uint64_t>("--reseed-every", raw.reseed_every, 0,
                                                std::numeric_limits<std::uint64_t>::max());

  if (raw.pin == "none") c.pin = PinMode::none;
  else if (raw.pin == "compact") c.pin = PinMode::compact;
  else if (raw.pin == "scatter") c.pin = PinMode::scatter;
  else {
    c.pin = PinMode::list;
    std::stringstream items(raw.pin);
    std::string item;
    while (std::getline(items, item, ','))
      c.pin_cpus.push_back(parse_integer<int>("--pin", item, 0, 1 << 20));
    if (c.pin_cpus.empty() || raw.pin.back() == ',')
      throw UsageError{"--pin: '" + raw.pin + "' is malformed; allowed: none, compact, scatter or a list CPU,CPU,..."};
  }

  c.latency_sample = parse_integer<std::uint32_t>("--latency-sample", raw.latency_sample, 0, 1u << 30);

  // The variant: a (reclaimer, allocator) pair this tree built (sanitizer trees build the
  // test variants only); each option defaults to the default variant's.
  const Variant& fallback = entry->default_variant();
  c.reclaimer = raw.reclaimer.empty() ? fallback.reclaimer : raw.reclaimer;
  c.allocator = raw.allocator.empty() ? fallback.allocator : raw.allocator;
  if (!entry->find_variant(c.reclaimer, c.allocator)) {
    const auto reclaimers = entry->reclaimers(), allocators = entry->allocators();
    auto known = [](const std::vector<std::string>& list, const std::string& x) {
      return std::find(list.begin(), list.end(), x) != list.end();
    };
    if (!known(reclaimers, c.reclaimer))
      throw UsageError{"--reclaimer: structure '" + c.ds + "' does not support '" + c.reclaimer + "'; allowed: " + join(reclaimers, ", ")};
    if (!known(allocators, c.allocator))
      throw UsageError{"--allocator: structure '" + c.ds + "' does not support '" + c.allocator + "'; allowed: " + join(allocators, ", ")};
    std::vector<std::string> pairs;
    for (const Variant& v : entry->variants) pairs.push_back(v.reclaimer + "/" + v.allocator);
    throw UsageError{"--reclaimer/--allocator: " + c.reclaimer + "/" + c.allocator + " is not built for structure '" + c.ds +
                     "' in this build (sanitizer builds have the test variants only); allowed: " + join(pairs, ", ")};
  }
  if (c.keys != KeyType::u64 && !(Variant{c.reclaimer, c.allocator, fallback.test} == fallback))
    throw UsageError{"--reclaimer/--allocator: structure '" + c.ds + "' has " + raw.keys + " keys in its default variant only; allowed: " +
                     fallback.reclaimer + "/" + fallback.allocator};
  c.reclaim_eager = raw.reclaim_eager;
  if (raw.presize != "yes" && raw.presize != "no")
    throw UsageError{"--presize: '" + raw.presize + "' is not a choice; allowed: yes, no"};
  c.presize = raw.presize == "yes";

  // Without --malloc the process runs on whatever serves it (glibc, or a sanitizer's).
  c.malloc = served_malloc();
  bool known_malloc = false;
  for (const auto& m : malloc_names()) known_malloc = known_malloc || m == raw.malloc;
  if (!raw.malloc.empty() && !known_malloc)
    throw UsageError{"--malloc: unknown allocator '" + raw.malloc + "'; allowed: " + join(malloc_names(), ", ")};
  if (!raw.malloc.empty() && c.malloc != raw.malloc) {
    if (c.malloc == "asan" || c.malloc == "tsan")
      throw UsageError{"--malloc: " + raw.malloc + " cannot serve a sanitizer build (" + c.malloc +
                       "'s allocator does); allowed: glibc (the default)"};
    throw UsageError{"--malloc: " + raw.malloc + " was requested but " + c.malloc +
                     " serves this process (is its library installed? scripts/install-deps installs it); allowed: " +
                     join(malloc_names(), ", ")};
  }
  c.trials = parse_integer<int>("--trials", raw.trials, 1, 100'000);
  convert_blackbox(raw, *entry, c);
  convert_queue(raw, *entry, c);

  if (!raw.json.empty()) {
    std::ofstream probe(raw.json, std::ios::app);  // fail now, not after the trials ran
    if (!probe) throw UsageError{"--json: cannot write '" + raw.json + "'; allowed: a writable file path"};
    c.json_path = raw.json;
  }
  return c;
}

}  // namespace

std::optional<std::variant<UsageError, HelpShown>> parse_with_cli11(CLI::App& app, int argc,
                                                                    const char* const* argv) {
  // --version: what a cluster's probe task runs on a node (a missing library fails it there).
  app.set_version_flag("--version", version_text(app.get_name()), "Print the program, its commit and compiler, and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return HelpShown{};
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << '\n';
    return HelpShown{};
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    for (char& ch : message)
      if (ch == '\n') ch = ' ';
    return UsageError{message + " (see --help)"};
  }
  return std::nullopt;
}

std::variant<Config, UsageError, HelpShown> parse_command_line(int argc, const char* const* argv,
                                                               const Registry& registry) {
  CLI::App app{"cdsbench: one measured trial of a concurrent set (see README.md and docs/output.md)",
               "cdsbench"};
  RawOptions raw;
  app.add_flag("--list", raw.list, "List the registered structures and exit (with --json FILE, also as JSON)");
  app.add_option("--ds", raw.ds, "Structure to measure (see --list)");
  app.add_option("--threads", raw.threads, "Update threads [1]");
  app.add_option("--rq-threads", raw.rq_threads, "Dedicated range-query threads beside them [0]");
  app.add_option("--key-range", raw.key_range, "Keys are drawn from [1, R] [1000000]");
  app.add_option("--insert", raw.insert, "Insert rate, percent [10]");
  app.add_option("--delete", raw.delete_, "Delete rate, percent [10]");
  app.add_option("--rq", raw.rq, "Range-query rate of the update threads, percent [0]");
  app.add_option("--find-or-insert", raw.find_or_insert, "Maps: find_or_insert rate (dedup's lookup), percent [0]");
  app.add_option("--assign", raw.assign, "Maps: assign rate (overwrite a present key's value), percent [0]");
  app.add_option("--rq-size", raw.rq_size, "Keys spanned by a range query [100]");
  app.add_option("--keys", raw.keys,
                 "Maps: u64 | digest (each key a 20-byte digest, as dedup's) | bytes (each key a byte string of 8 to 64 "
                 "bytes) [u64]");
  app.add_option("--hash", raw.hash, "Maps with digest keys: even | parsec3 | bytesum (see --list) [even]");
  app.add_option("--duration-ms", raw.duration_ms, "Measured phase length [1000]");
  app.add_option("--ops", raw.ops, "Run this many operations in all instead of a duration");
  app.add_option("--prefill", raw.prefill, "steady | insert-only | none [steady]");
  app.add_option("--prefill-tolerance", raw.prefill_tolerance, "Accepted size error, fraction of the target [0.01]");
  app.add_option("--prefill-aging", raw.prefill_aging,
                 "Steady prefill: updates at the configured mix after the build, times the key range [0.05]");
  app.add_option("--prefill-timeout-ms", raw.prefill_timeout_ms, "Prefill longer than this is an error [60000]");
  app.add_option("--distribution", raw.distribution,
                 "uniform | zipf:THETA | zipf-unscrambled:THETA | hotspot:HOT_PCT:OPS_PCT [uniform]");
  app.add_option("--prng", raw.prng, "Per-thread generator [xoshiro256starstar]");
  app.add_option("--seed", raw.seed, "Master seed (default: drawn, and printed)");
  app.add_option("--reseed-every", raw.reseed_every, "Reseed each generator from OpenSSL's CSPRNG every N draws [0: never]");
  app.add_option("--pin", raw.pin, "none | compact | scatter | CPU,CPU,... [compact]");
  app.add_option("--latency-sample", raw.latency_sample, "Time every Nth operation [0: off]");
  app.add_option("--reclaimer", raw.reclaimer, "Memory reclaimer (see --list)");
  app.add_option("--allocator", raw.allocator, "Allocation policy of the structure's nodes (see --list)");
  app.add_flag("--reclaim-eager", raw.reclaim_eager,
               "Reclaim as soon as the scheme allows (thresholds of 1): for sanitizer runs, not for measuring");
  app.add_option("--presize", raw.presize,
                 "Hash maps: yes: sized at construction for the keys the trial expects; no: the map's default "
                 "size, so the trial includes its growth [yes]");
  app.add_option("--malloc", raw.malloc, "The process's global allocator: glibc | jemalloc | mimalloc | tcmalloc [the one serving: glibc]");
  app.add_option("--prefill-items", raw.prefill_items,
                 "Black-box structures and queues: items added before measuring [black box: 200000, 10000 for sorted_set, "
                 "capped at --key-range; queues: 0]");
  app.add_option("--external-work", raw.external_work,
                 "Black-box structures: random private cache lines written after each operation [0]");
  app.add_option("--nr-replicas", raw.nr_replicas, "Node Replication: K virtual nodes, one replica each [one per NUMA node]");
  app.add_option("--nr-log-entries", raw.nr_log_entries, "Node Replication: log capacity, rounded up to a power of two [65536]");
  app.add_option("--queue-mode", raw.queue_mode, "Queues: pairs | split | random [pairs]");
  app.add_option("--producers", raw.producers, "Queues, split mode: threads that only enqueue, 1..threads-1 [threads/2]");
  app.add_option("--enqueue", raw.enqueue, "Queues, random mode: percentage of operations that enqueue, 1..99 [50]");
  app.add_option("--batch", raw.batch, "Queues: items per enqueue and dequeue, 1..64 [1]");
  app.add_option("--items", raw.items, "Queues: move this many items in all and time it, instead of a duration");
  app.add_option("--trials", raw.trials, "Repeat the trial N times and print the median [1]");
  app.add_option("--json", raw.json, "Also write the results as JSON to FILE");
  if (auto stop = parse_with_cli11(app, argc, argv)) {
    if (auto* help = std::get_if<HelpShown>(&*stop)) return *help;
    return std::get<UsageError>(*stop);
  }
  try {
    return convert(raw, registry);
  } catch (const UsageError& bad) {
    return UsageError{bad.message};
  }
}

}  // namespace cdsb::bench
