#include "bench/check/lincheck.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include "bench/check/checker.hpp"
#include "bench/check/history.hpp"
#include "bench/harness/options.hpp"
#include "bench/core/report.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/seeding.hpp"
#include "cdsbench/random/uniform.hpp"

namespace cdsb::bench {
namespace {

namespace fs = std::filesystem;

struct Options {
  std::string ds;
  int threads = 0;          // 0: 3 or 4, drawn per history
  int ops_per_thread = 0;   // 0: 5..50, drawn per history
  int histories = 10'000;
  int long_histories = 3;   // 4 threads x 500 operations each
  std::uint64_t key_range = 4;
  std::uint64_t seed = 0;
  std::string reclaimer, allocator;  // restrict the variants checked ("" = every test variant)
  bool split_variants = false;       // --histories per structure, shared by its variants
  int nr_replicas = 0;                // Node Replication: virtual nodes (0: NUMA nodes)
  std::string exclude;                // structures --ds selects but not to check (same syntax)
  std::string kinds, libraries, methods;  // keep only entries with these (comma-separated)
  std::uint64_t nr_log_entries = 0;   // Node Replication: log capacity (0: the default)
  std::string checker, out_dir, timeout = "10s";
  std::string keys = "all";  // u64, bytes (maps built with byte-string keys), or all: both
};

// One structure variant to check, with the keys its histories use.
struct Work {
  const StructureEntry* entry;
  Variant variant;
  KeyType keys;
};

struct Shape {
  int threads, ops_per_thread;
};

// The shape of history h, a function of its seed only, so `--seed` replays it.
Shape shape_of(const Options& o, std::uint64_t seed, bool long_history) {
  if (long_history) return {4, 500};
  Xoshiro256StarStar rng;
  rng.seed(seed);
  const int t = o.threads ? o.threads : 3 + static_cast<int>(uniform_below(rng, 2));
  const int k = o.ops_per_thread ? o.ops_per_thread : 5 + static_cast<int>(uniform_below(rng, 46));
  return {t, k};
}

// --ds: a comma-separated list of names, `all` (every sound structure) and shell patterns
// (`nr.*`, `*.stack`; sound structures only), e.g. `--ds 'fc.*,sl.stack'`. `all` and patterns
// leave out a peer with a known violation (registry.hpp) unless known_too; a name selects it.
bool selects(const std::string& spec, const StructureEntry& e, bool known_too = false) {
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == e.name) return true;
    if (e.deliberately_broken || (!known_too && !e.known_violation.empty())) continue;
    if (item == "all" || (item.find_first_of("*?[") != std::string::npos && fnmatch(item.c_str(), e.name.c_str(), 0) == 0))
      return true;
  }
  return false;
}

// Whether a comma-separated list (empty: anything) holds value.
bool listed(const std::string& list, const std::string& value) {
  if (list.empty()) return true;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ','))
    if (item == value) return true;
  return false;
}

// --kind, --library, --method: selection by the entry's data.
bool has_data(const Options& o, const StructureEntry& e) {
  return listed(o.kinds, std::string(kind_name(e.kind))) && listed(o.libraries, e.library) &&
         listed(o.methods, e.method);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Records and checks every history of one structure variant; returns 0, 1 or 3 as
// run_lincheck. Reclamation is eager (thresholds of 1), so that freed memory is reused
// within these short histories and a premature free shows as a wrong answer (or, in the
// sanitizer builds, as a report).
int check_structure(const Options& o, const StructureEntry& entry, const Variant& variant, KeyType keys,
                    const Topology& topology) {
  const std::string keys_name(key_type_name(keys));
  const fs::path dir = fs::path(o.out_dir) / entry.name / (variant.reclaimer + "-" + variant.allocator + "-" + keys_name);
  fs::create_directories(dir);
  const fs::path input = dir / "histories.jsonl";
  std::ofstream out(input, std::ios::trunc);
  out << "{\"meta\":{\"ds\":\"" << entry.name << "\",\"reclaimer\":\"" << variant.reclaimer
      << "\",\"allocator\":\"" << variant.allocator << "\",\"keys\":\"" << keys_name << "\",\"master_seed\":" << o.seed
      << "}}\n";

  const int total = o.histories + o.long_histories;
  std::vector<Shape> shapes(total);
  std::map<int, std::string> violating;  // history id -> why: invalid, or not linearizable
  const auto record_start = std::chrono::steady_clock::now();
  for (int h = 0; h < total; ++h) {
    const std::uint64_t seed = o.seed + static_cast<std::uint64_t>(h);
    const Shape shape = shapes[h] = shape_of(o, seed, h >= o.histories);
    Config c;
    c.ds = entry.name;
    c.threads = shape.threads;
    c.key_range = o.key_range;
    c.insert_pct = c.delete_pct = 100.0 / 3;
    // A map's histories hold each of its operations (find is what the rates leave).
    if (entry.model == "map") {
      c.insert_pct = c.delete_pct = c.find_or_insert_pct = 20;
      c.assign_pct = entry.map_assign ? 20 : 0;
    }
    // A structure without a thread-safe erase (registry.hpp: concurrent_erase) is checked on
    // inserts and searches (and a map's other operations).
    if (!entry.concurrent_erase) {
      c.insert_pct = entry.model == "map" ? 20 : 50;
      c.delete_pct = 0;
    }
    // A stack's history is only as hard to check as the stack is deep: the order of two
    // overlapping pushes is settled only when both are popped, so every such pair still on
    // the stack doubles the checker's search (a 4 x 500 NR history at equal rates exhausted
    // 24 GiB). More pops than pushes keep it shallow (depth d with probability ~(3/4)^d) and
    // often empty, so the search stays small and empty pops are checked too.
    if (entry.model == "stack") {
      c.insert_pct = 30;
      c.delete_pct = 40;
    }
    // A queue's (or a queue-workload stack's) small histories draw each operation at random
    // (random mode: pairs would never find the queue empty, and a history without empty
    // dequeues checks less), 40% enqueues: the checker's search doubles with each pair of
    // overlapping enqueues still queued, and at 50% a 4 x 50 history drifts 25-30 items deep
    // (a random walk) where at 40% the depth stays geometric. At 50%, on a loaded machine where
    // preemption stretches operations over dozens of others, one of 20,000 histories of
    // libcds.ms_queue took 75 ms to check alone, and one of 2,000 on CI hit the 10 s timeout.
    // Its long ones run in pairs, which keep the queue shallow: a long history of a deep queue
    // defeats the checker. A queue with native batches has every other history
    // (odd seeds: the replay line's seed says which) in batches of 3, each batch one operation
    // of the model (enqueue_batch, dequeue_batch), in pairs too: at random, batches of 3 drift
    // the queue three times as deep (114 items in one 4 x 45 history of the ring in the TSan
    // tree, whose slow operations overlap a lot), past the checker's timeout about once in
    // 300 such histories.
    if (runs_queue_workload(entry.kind)) {
      c.batch = entry.native_batch && seed % 2 ? 3 : 1;
      c.queue_mode = shape.ops_per_thread > 50 || c.batch > 1 ? QueueMode::pairs : QueueMode::random;
      c.enqueue_pct = 40;
    }
    c.ops = static_cast<std::uint64_t>(shape.threads) * shape.ops_per_thread;
    c.prefill = PrefillMode::none;
    c.pin = PinMode::none;
    c.seed = seed;
    c.reclaimer = variant.reclaimer;
    c.allocator = variant.allocator;
    c.keys = keys;
    c.reclaim_eager = true;
    c.process_figures = false;
    if (entry.node_replicated) {
      c.nr_replicas = o.nr_replicas;
      c.nr_log_entries = o.nr_log_entries;
    }
    const std::vector<int> cpus(shape.threads, -1);
    const RecordedHistory rec = entry.record_history(TrialContext{c, topology, cpus, 0, seed});
    if (rec.outcome.status != TrialStatus::ok)
      violating[h] = "validation failed: " + format_value(rec.outcome.report.value("validation_error", Json("?")));
    rec.recorder.write_jsonl(out, h);
  }
  out.close();
  const double record_s = seconds_since(record_start);

  const auto check_start = std::chrono::steady_clock::now();
  const CheckerVerdicts check = run_checker(o.checker, entry.model, input, dir, o.timeout);
  const double check_s = seconds_since(check_start);
  if (check.exit_code < 0 || check.exit_code == 2 || check.summary.empty()) {
    std::cerr << "cdsbench-lincheck: the checker failed on " << input << " (exit " << check.exit_code
              << "); run it by hand: " << o.checker << " --model " << entry.model << " --input " << input << '\n';
    return 1;
  }
  for (const int h : check.violations) {
    std::string& why = violating[h];
    why = why.empty() ? "not linearizable" : "not linearizable; " + why;
  }
  // One line per history: what it was and how to record one like it again (the schedule,
  // and so the history, may differ; the histories file keeps this one).
  const auto print_history = [&](const char* verdict, int h, const std::string& why) {
    const std::uint64_t seed = o.seed + static_cast<std::uint64_t>(h);
    std::cout << verdict << " ds=" << entry.name << " reclaimer=" << variant.reclaimer << " allocator=" << variant.allocator
              << " keys=" << keys_name << " history=" << h << " seed=" << seed << " reason=\"" << why
              << "\" replay=\"cdsbench-lincheck --ds " << entry.name << " --reclaimer " << variant.reclaimer
              << " --allocator " << variant.allocator << " --keys " << keys_name
              << " --threads " << shapes[h].threads
              << " --ops-per-thread " << shapes[h].ops_per_thread << " --key-range " << o.key_range
              << (entry.node_replicated && o.nr_replicas ? " --nr-replicas " + std::to_string(o.nr_replicas) : "")
              << (entry.node_replicated && o.nr_log_entries ? " --nr-log-entries " + std::to_string(o.nr_log_entries) : "")
              << " --histories 1 --long-histories 0 --seed " << seed << "\"\n";
  };
  constexpr std::size_t shown = 20;  // violation (and unknown) lines printed per structure
  std::size_t printed = 0;
  for (const auto& [h, why] : violating) {
    if (printed++ == shown) {
      std::cout << "... " << violating.size() - shown << " more violations not shown\n";
      break;
    }
    print_history("violation", h, why);
  }
  for (std::size_t i = 0; i < std::min(check.unknown.size(), shown); ++i)
    print_history("unknown", check.unknown[i], "the checker timed out (--timeout-per-history " + o.timeout + ")");
  for (std::size_t i = 0; i < std::min(check.visualizations.size(), shown); ++i)
    std::cout << "visualization=" << check.visualizations[i] << '\n';
  const std::size_t violations = violating.size();
  const std::size_t found_by_checker = check.violations.size();
  std::cout << "ds=" << entry.name << " reclaimer=" << variant.reclaimer << " allocator=" << variant.allocator
            << " keys=" << keys_name << " histories=" << total << " violations=" << violations
            << " not_linearizable=" << found_by_checker << " unknown=" << check.unknown.size() << " record_s=" << format_value(Json(record_s))
            << " check_s=" << format_value(Json(check_s)) << " histories_file=" << input.string() << '\n';
  if (violations) return 1;
  return check.unknown.empty() ? 0 : 3;
}

}  // namespace

int run_lincheck(int argc, const char* const* argv, const Registry& registry) {
  CLI::App app{"cdsbench-lincheck: record concurrent histories and check them for linearizability",
               "cdsbench-lincheck"};
  Options o;
  std::string seed_text;
  app.add_option("--ds", o.ds, "Structures: names, 'all' or patterns ('nr.*'), comma-separated (those with a checker model)")->required();
  app.add_option("--threads", o.threads, "Threads per history [3 or 4, drawn per history]")->check(CLI::Range(1, 64));
  app.add_option("--ops-per-thread", o.ops_per_thread, "Operations per thread [5..50, drawn]")->check(CLI::Range(1, 100000));
  app.add_option("--histories", o.histories, "Small histories per structure [10000]")->check(CLI::Range(1, 100'000'000));
  app.add_option("--long-histories", o.long_histories, "Extra histories of 4 threads x 500 operations [3]")->check(CLI::Range(0, 10000));
  app.add_option("--key-range", o.key_range, "Keys in [1, R]: tiny, so operations collide [4]")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  app.add_option("--seed", seed_text, "Master seed; history h uses seed + h [drawn, printed]");
  app.add_option("--reclaimer", o.reclaimer, "Check only this reclaimer's variants [every test variant]");
  app.add_option("--allocator", o.allocator, "Check only this allocator's variants [every test variant]");
  app.add_option("--exclude", o.exclude, "Structures to leave out of --ds: names or patterns, comma-separated");
  app.add_option("--kind", o.kinds, "Keep only structures of these kinds, comma-separated (" + kind_names() + ")");
  app.add_option("--library", o.libraries, "Keep only structures from these libraries, comma-separated (cdsbench, libcds, oneTBB)");
  app.add_option("--method", o.methods, "Keep only black-box structures of these methods, comma-separated (nr, sl, rwl, fc, fcplus, lf)");
  app.add_option("--nr-replicas", o.nr_replicas, "Node Replication structures: K virtual nodes [one per NUMA node]")
      ->check(CLI::Range(1, 1024));
  app.add_option("--nr-log-entries", o.nr_log_entries, "Node Replication structures: log capacity [65536]")
      ->check(CLI::Range(std::uint64_t{2}, std::uint64_t{1} << 30));
  app.add_option("--keys", o.keys,
                 "Keys of the histories: u64, bytes (the maps built with byte-string keys, their default variant), or all [all]");
  app.add_flag("--split-variants", o.split_variants,
               "Share --histories among a structure's variants instead of running them for each");
  app.add_option("--checker", o.checker, "The checker binary [next to this one]");
  app.add_option("--out", o.out_dir, "Directory for histories and visualisations [a fresh temporary one]");
  app.add_option("--timeout-per-history", o.timeout, "Checker time limit per history, Go duration [10s]");
  if (auto stop = parse_with_cli11(app, argc, argv)) {
    if (std::holds_alternative<HelpShown>(*stop)) return 0;
    std::cerr << "cdsbench-lincheck: error: " << std::get<UsageError>(*stop).message << '\n';
    return 2;
  }
  {
    std::stringstream kinds(o.kinds);
    std::string k;
    while (std::getline(kinds, k, ','))
      if (!parse_kind(k)) {
        std::cerr << "cdsbench-lincheck: error: --kind: unknown kind '" << k << "'; allowed: " << kind_names() << '\n';
        return 2;
      }
  }
  try {
    o.seed = seed_text.empty() ? draw_master_seed()
                               : parse_integer<std::uint64_t>("--seed", seed_text, 0, UINT64_MAX);
  } catch (const UsageError& e) {
    std::cerr << "cdsbench-lincheck: error: " << e.message << '\n';
    return 2;
  }

  std::vector<const StructureEntry*> targets;
  std::vector<std::string> names, known_violations;
  std::vector<std::string> unavailable;
  for (const auto& e : registry.entries()) {
    if (!e.record_history) continue;
    names.push_back(e.name);
    // A structure this machine cannot run (LCRQ without cmpxchg16b) is said, never run.
    if (e.unavailable_reason && !e.unavailable_reason().empty()) {
      if (selects(o.ds, e, true)) unavailable.push_back("unavailable ds=" + e.name + " not checked: " + e.unavailable_reason());
      continue;
    }
    const bool excluded = (!o.exclude.empty() && selects(o.exclude, e, true)) || !has_data(o, e);
    if (selects(o.ds, e) && !excluded) targets.push_back(&e);
    else if (!excluded && selects(o.ds, e, true))  // said (below), never skipped silently
      known_violations.push_back("known_violation ds=" + e.name + " not checked (name it in --ds to check it): " +
                                 e.known_violation);
  }
  if (targets.empty()) {
    std::cerr << "cdsbench-lincheck: error: --ds: no checkable structure '" << o.ds
              << "'; allowed: all, " << join(names, ", ") << '\n';
    return 2;
  }
  // The variants: the test variants of each structure (every reclaimer with the default
  // allocator, every allocator with the default reclaimer), or those --reclaimer/--allocator
  // pick, which must then exist for every target.
  if (o.keys != "u64" && o.keys != "bytes" && o.keys != "all") {
    std::cerr << "cdsbench-lincheck: error: --keys: unknown key type '" << o.keys << "'; allowed: u64, bytes, all\n";
    return 2;
  }
  const bool u64_keys = o.keys != "bytes", byte_keys = o.keys != "u64";
  std::vector<Work> work;
  for (const StructureEntry* e : targets) {
    const auto tested = e->test_variants();
    // Byte-string keys: the default variant, of the maps built with them.
    if (byte_keys && e->key_hashes.contains("bytes") && (o.reclaimer.empty() || o.reclaimer == e->default_variant().reclaimer) &&
        (o.allocator.empty() || o.allocator == e->default_variant().allocator))
      work.push_back({e, e->default_variant(), KeyType::bytes});
    if (!u64_keys) continue;
    if (o.reclaimer.empty() && o.allocator.empty()) {
      for (const Variant& v : tested) work.push_back({e, v, KeyType::u64});
      continue;
    }
    const Variant& fallback = e->default_variant();
    Variant v{o.reclaimer.empty() ? fallback.reclaimer : o.reclaimer, o.allocator.empty() ? fallback.allocator : o.allocator};
    const auto reclaimers = e->reclaimers(), allocators = e->allocators();
    auto has = [](const std::vector<std::string>& list, const std::string& x) {
      return std::find(list.begin(), list.end(), x) != list.end();
    };
    if (!has(reclaimers, v.reclaimer) || !has(allocators, v.allocator)) {
      if (o.ds == "all") continue;  // checks the structures that have it
      std::cerr << "cdsbench-lincheck: error: " << (has(reclaimers, v.reclaimer) ? "--allocator" : "--reclaimer")
                << ": structure '" << e->name << "' does not support '"
                << (has(reclaimers, v.reclaimer) ? v.allocator : v.reclaimer) << "'; allowed: "
                << join(has(reclaimers, v.reclaimer) ? allocators : reclaimers, ", ") << '\n';
      return 2;
    }
    // Histories are recorded for the test variants only (registry.hpp: is_test_variant).
    const auto it = std::find_if(tested.begin(), tested.end(), [&](const Variant& t) {
      return t.reclaimer == v.reclaimer && t.allocator == v.allocator;
    });
    if (it == tested.end()) {
      if (o.ds == "all") continue;
      std::vector<std::string> pairs;
      for (const Variant& t : tested) pairs.push_back(t.reclaimer + "/" + t.allocator);
      std::cerr << "cdsbench-lincheck: error: --reclaimer/--allocator: " << v.reclaimer << "/" << v.allocator
                << " is not a test variant of '" << e->name << "'; allowed: " << join(pairs, ", ") << '\n';
      return 2;
    }
    work.push_back({e, *it, KeyType::u64});
  }
  if (work.empty()) {
    std::cerr << "cdsbench-lincheck: error: " << (u64_keys ? "--reclaimer/--allocator: no structure has that variant"
                                                           : "--keys: no structure selected is built with byte-string keys")
              << '\n';
    return 2;
  }

  if (o.checker.empty())
    o.checker = checker_beside_this_program();
  if (!fs::exists(o.checker)) {
    std::cerr << "cdsbench-lincheck: error: --checker: '" << o.checker << "' does not exist; build it with make\n";
    return 2;
  }
  if (o.out_dir.empty()) {
    char tmpl[] = "/tmp/cdsbench-lincheck-XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::cerr << "cdsbench-lincheck: error: cannot create a temporary directory\n";
      return 1;
    }
    o.out_dir = tmpl;
  }
  std::cout << "seed=" << o.seed << "\nkey_range=" << o.key_range << "\nout=" << o.out_dir << '\n';
  for (const auto& line : known_violations) std::cout << line << '\n';
  for (const auto& line : unavailable) std::cout << line << '\n';

  const Topology topology;
  int status = 0;
  for (const Work& w : work) {
    Options per_variant = o;
    if (o.split_variants) {
      const auto variants = std::count_if(work.begin(), work.end(), [&](const Work& x) { return x.entry == w.entry; });
      per_variant.histories = static_cast<int>((o.histories + variants - 1) / variants);
    }
    const int s = check_structure(per_variant, *w.entry, w.variant, w.keys, topology);
    if (s == 1 || (s == 3 && status == 0)) status = s;
  }
  std::cout << "result=" << (status == 0 ? "PASS" : status == 1 ? "FAIL" : "UNKNOWN") << '\n';
  return status;
}

}  // namespace cdsb::bench
