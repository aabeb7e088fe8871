#include "bench/harness/cli.hpp"

#include <algorithm>
#include <iostream>
#include <new>
#include <stdexcept>
#include <sys/resource.h>

#include "bench/core/report.hpp"
#include "bench/core/thread_team.hpp"
#include "bench/harness/options.hpp"
#include "bench/harness/trial_context.hpp"
#include "cdsbench/random/seeding.hpp"

namespace cdsb::bench {

namespace {

Json config_json(const Config& c, const StructureEntry& entry, const std::vector<int>& cpus) {
  Json j;
  j["ds"] = c.ds;
  j["structure_kind"] = std::string(kind_name(entry.kind));
  j["structure_library"] = entry.library;
  j["blackbox_method"] = entry.method.empty() ? "none" : entry.method;
  j["blackbox_structure"] = entry.sequential.empty() ? "none" : entry.sequential;
  j["threads"] = c.threads;
  j["rq_threads"] = c.rq_threads;
  j["key_range"] = c.key_range;
  j["insert_pct"] = c.insert_pct;
  j["delete_pct"] = c.delete_pct;
  j["rq_pct"] = c.rq_pct;
  j["find_or_insert_pct"] = c.find_or_insert_pct;
  j["assign_pct"] = c.assign_pct;
  j["search_pct"] = c.search_pct();
  j["rq_size"] = c.rq_size;
  j["keys"] = std::string(key_type_name(c.keys));
  j["hash"] = c.hash;
  if (c.ops) {
    j["duration_ms"] = "none";
    j["ops"] = *c.ops;
  } else {
    j["duration_ms"] = c.duration_ms;
    j["ops"] = "none";
  }
  if (runs_queue_workload(entry.kind)) {
    j["queue_mode"] = std::string(queue_mode_name(c.queue_mode));
    j["producers"] = c.queue_mode == QueueMode::split ? Json(c.producers) : Json("none");
    j["enqueue_pct"] = c.queue_mode == QueueMode::random ? Json(c.enqueue_pct) : Json("none");
    j["batch"] = c.batch;
    j["items"] = c.items ? Json(*c.items) : Json("none");
    if (c.items) j["duration_ms"] = "none";
  }
  j["prefill_mode"] = prefill_mode_name(c.prefill);
  j["prefill_tolerance"] = c.prefill_tolerance;
  j["prefill_aging"] = c.prefill_aging;
  j["prefill_timeout_ms"] = c.prefill_timeout_ms;
  j["distribution"] = c.distribution.text;
  j["prng"] = std::string(generator_name(c.prng));
  j["seed"] = c.seed;
  j["seed_source"] = c.seed_given ? "given" : "drawn";
  j["reseed_every"] = c.reseed_every;
  j["pin"] = c.pin == PinMode::list ? "list" : pin_mode_name(c.pin);
  Json map = Json::array();
  for (int cpu : cpus) map.push_back(cpu >= 0 ? std::to_string(cpu) : std::string("none"));
  j["thread_cpus"] = map;
  j["latency_sample"] = c.latency_sample;
  j["reclaimer"] = c.reclaimer;
  j["allocator"] = c.allocator;
  j["reclaim_eager"] = c.reclaim_eager;
  j["presize"] = c.presize;
  j["malloc"] = c.malloc;
  j["trials"] = c.trials;
  return j;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "; digest keys, hashes: even,parsec3; bytes keys, hashes: even", or "" for 64-bit keys only.
std::string other_keys(const StructureEntry& e) {
  std::string out;
  for (const auto& [keys, hashes] : e.key_hashes) out += "; " + keys + " keys, hashes: " + join(hashes, ",");
  return out;
}

void list_structures(const Registry& registry) {
  for (const auto& e : registry.entries()) {
    std::cout << e.name << "  " << e.description << "  [kind: " << kind_name(e.kind)
              << (e.library == "cdsbench" ? "" : "; library: " + e.library)
              << "; reclaimers: " << join(e.reclaimers(), ",") << "; allocators: " << join(e.allocators(), ",")
              << "; range queries: " << (e.range_queries ? "yes" : "no")
              << (e.map_operations ? std::string("; map operations: find, find_or_insert") + (e.map_assign ? ", assign" : "") : "")
              << other_keys(e)
              << (e.make_digest_map ? "; applications' digest map, hashes: " + join(e.digest_map_hashes, ",") : "")
              << (e.make_item_queue ? "; applications' queue" : "")
              << (e.order.empty() ? "" : "; order: " + e.order + (e.native_batch ? "; native batches" : "") +
                                             (e.capacity ? "; bounded: " + std::to_string(e.capacity) + " items" : "; unbounded"))
              << (e.layout.empty() ? "" : "; " + e.layout) << "]\n";
  }
}

}  // namespace

std::string registry_json_text(const Registry& registry, bool (*keep)(const StructureEntry&)) {
  Json list = Json::array();
  auto or_null = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  for (const auto& e : registry.entries()) {
    if (keep && !keep(e)) continue;
    Json variants = Json::array();
    for (const Variant& v : e.variants) variants.push_back({{"reclaimer", v.reclaimer}, {"allocator", v.allocator}, {"test", v.test}});
    list.push_back({{"name", e.name},
                    {"description", e.description},
                    {"kind", std::string(kind_name(e.kind))},
                    {"library", e.library},
                    {"method", or_null(e.method)},
                    {"sequential", or_null(e.sequential)},
                    {"range_queries", e.range_queries},
                    {"map_operations", e.map_operations},
                    {"map_assign", e.map_assign},
                    {"key_hashes", e.key_hashes},
                    {"application_map_hashes", e.digest_map_hashes},  // make_digest_map: dedup's --map and --hash
                    {"application_queue", e.make_item_queue != nullptr},  // make_item_queue: dedup's --queue
                    {"concurrent_erase", e.concurrent_erase},
                    {"search_depths", e.search_depths},
                    {"native_batch", e.native_batch},
                    {"capacity", e.capacity},
                    {"order", or_null(e.order)},
                    {"layout", e.layout},
                    {"model", e.model},
                    {"known_violation", e.known_violation},
                    {"variants", variants}});
  }
  return Json{{"structures", list}}.dump(2) + "\n";
}

namespace {

// Hundreds of threads each open ~10 perf-event descriptors: lift the soft limit.
void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

}  // namespace

int run_cli(int argc, const char* const* argv, const Registry& registry) {
  auto parsed = parse_command_line(argc, argv, registry);
  if (std::holds_alternative<HelpShown>(parsed)) return 0;
  if (auto* err = std::get_if<UsageError>(&parsed)) {
    std::cerr << "cdsbench: error: " << err->message << '\n';
    return 2;
  }
  Config cfg = std::get<Config>(parsed);
  if (cfg.list) {
    list_structures(registry);
    if (!cfg.json_path.empty() && !write_file_atomically(cfg.json_path, registry_json_text(registry))) {
      std::cerr << "cdsbench: error: --json: writing '" << cfg.json_path << "' failed\n";
      return 1;
    }
    return 0;
  }
  raise_fd_limit();

  const Topology topology;
  std::vector<std::string> warnings;
  std::vector<int> cpus;
  try {
    cpus = plan_thread_cpus(cfg.team_setup(), topology, warnings);
  } catch (const std::invalid_argument& e) {
    std::cerr << "cdsbench: error: " << e.what() << '\n';
    return 2;
  }
  if (!cfg.seed_given) cfg.seed = draw_master_seed();
  if (cfg.reseed_every)
    warnings.push_back("--reseed-every draws from a CSPRNG: the op sequence cannot be replayed from the seed");

  const StructureEntry& entry = *registry.find(cfg.ds);
  Json doc;
  doc["config"] = config_json(cfg, entry, cpus);
  doc["machine"] = machine_json(topology);
  doc["warnings"] = warnings;
  print_kv(std::cout, doc["config"]);
  print_kv(std::cout, doc["machine"]);
  for (const auto& w : warnings) std::cout << "warning=" << w << '\n';
  std::cout.flush();

  doc["trials"] = Json::array();
  std::vector<double> throughput, ns_per_op, items_per_s;
  int failures = 0;
  for (int t = 0; t < cfg.trials; ++t) {
    // Trial t runs from seed + t, so `--seed S+t --trials 1` replays it alone.
    const TrialContext ctx{cfg, topology, cpus, t, cfg.seed + static_cast<std::uint64_t>(t), t == cfg.trials - 1};
    TrialOutcome outcome;
    try {
      outcome = entry.run_trial(ctx);
    } catch (const std::bad_alloc&) {  // thrown building the structure (its size hint), on this thread
      std::cerr << "cdsbench: error: out of memory building '" << cfg.ds << "' for --key-range " << cfg.key_range
                << "; allowed: a key range whose structure fits in this machine's memory\n";
      return 1;
    }
    print_kv(std::cout, outcome.report);
    std::cout.flush();
    doc["trials"].push_back(outcome.report);
    if (outcome.status != TrialStatus::ok) {
      ++failures;
      break;  // a failed trial is an error, never a number (P6)
    }
    throughput.push_back(outcome.report["throughput_ops_per_s"].get<double>());
    ns_per_op.push_back(outcome.report["ns_per_op_per_thread"].get<double>());
    if (outcome.report.contains("throughput_items_per_s")) items_per_s.push_back(outcome.report["throughput_items_per_s"].get<double>());
  }

  Json summary;
  summary["trials_run"] = doc["trials"].size();
  summary["validation_failures"] = failures;
  if (failures == 0) {
    summary["throughput_ops_per_s_median"] = median(throughput);
    summary["throughput_ops_per_s_min"] = *std::min_element(throughput.begin(), throughput.end());
    summary["throughput_ops_per_s_max"] = *std::max_element(throughput.begin(), throughput.end());
    summary["ns_per_op_per_thread_median"] = median(ns_per_op);
    if (!items_per_s.empty()) summary["throughput_items_per_s_median"] = median(items_per_s);
  }
  summary["result"] = failures ? "FAIL" : "PASS";
  doc["summary"] = summary;
  print_kv(std::cout, summary);

  if (!cfg.json_path.empty()) {
    if (!write_file_atomically(cfg.json_path, doc.dump(2) + "\n")) {
      std::cerr << "cdsbench: error: --json: writing '" << cfg.json_path << "' failed\n";
      return 1;
    }
  }
  return failures ? 1 : 0;
}

}  // namespace cdsb::bench
