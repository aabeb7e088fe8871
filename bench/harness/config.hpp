// The harness's configuration: every option of `cdsbench`, parsed and checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/core/thread_team.hpp"
#include "cdsbench/random/any_generator.hpp"
#include "cdsbench/random/distributions.hpp"

namespace cdsb::bench {

enum class PrefillMode { steady, insert_only, none };

// The structure's keys: the workload's 64-bit integers, or each encoded (bench/workloads/
// key_codec.hpp) as a 20-byte digest (the dedup study's keys) or a byte string of 8 to 64 bytes,
// for the maps built with such keys.
enum class KeyType { u64, digest, bytes };
constexpr std::string_view key_type_name(KeyType k) {
  return k == KeyType::digest ? "digest" : k == KeyType::bytes ? "bytes" : "u64";
}

// Queues (bench/workloads/queue_workload.hpp): pairs (each thread enqueues, then dequeues), split
// (producers only enqueue, consumers dequeue until the producers are done and the queue is
// empty), random (each operation an enqueue or a dequeue with equal probability).
enum class QueueMode { pairs, split, random };
constexpr std::string_view queue_mode_name(QueueMode m) {
  return m == QueueMode::split ? "split" : m == QueueMode::random ? "random" : "pairs";
}

struct Config {
  std::string ds;
  int threads = 1;                 // update threads
  int rq_threads = 0;              // dedicated range-query threads beside them (P10)
  std::uint64_t key_range = 1'000'000;
  double insert_pct = 10, delete_pct = 10, rq_pct = 0;  // independent rates (P4); search = rest
  double find_or_insert_pct = 0, assign_pct = 0;       // maps only (registry: map_operations)
  std::uint64_t rq_size = 100;
  KeyType keys = KeyType::u64;
  std::string hash = "even";  // other keys: the build's named hash (cdsbench/set/hash/hashes.hpp)
  std::uint64_t duration_ms = 1000;
  std::optional<std::uint64_t> ops;  // fixed op count for the update threads instead of a duration
  PrefillMode prefill = PrefillMode::steady;
  double prefill_tolerance = 0.01;   // fraction of the target size
  double prefill_aging = 0.05;       // steady: aging updates after the build, a multiple of key_range
  std::uint64_t prefill_timeout_ms = 60'000;
  DistributionSpec distribution{};
  GeneratorKind prng = GeneratorKind::xoshiro256starstar;
  std::uint64_t seed = 0;            // the master seed actually used (drawn when not given)
  bool seed_given = false;
  std::uint64_t reseed_every = 0;    // 0: never
  PinMode pin = PinMode::compact;
  std::vector<int> pin_cpus;         // PinMode::list
  std::uint32_t latency_sample = 0;  // time every Nth operation; 0: off
  std::string reclaimer;             // resolved against the registry entry
  std::string allocator;
  bool reclaim_eager = false;        // thresholds of 1: reclaim as soon as allowed (sanitizer runs)
  bool presize = true;               // hash maps: sized for the expected keys at construction (SizeHint)
  std::string malloc = "glibc";      // the process's global allocator (--malloc), as served
  // Black-box structures (METHOD.STRUCTURE, bench/blackbox_workload.hpp).
  std::optional<std::uint64_t> prefill_items;  // items added before measuring; unset: the paper's (queues: none)
  std::uint32_t external_work = 0;   // random private cache lines written after each operation
  int nr_replicas = 0;               // NR virtual nodes; 0: one per NUMA node (hwloc)
  std::uint64_t nr_log_entries = 0;  // NR log capacity; 0: the default (2^16 entries)
  // Queues and stacks (kind queue or stack: the queue workload).
  QueueMode queue_mode = QueueMode::pairs;
  int producers = 0;                   // split: the threads that only enqueue (the first ones)
  double enqueue_pct = 50;             // random: the share of operations that enqueue
  std::uint32_t batch = 1;             // items per operation (1: single-item operations)
  std::optional<std::uint64_t> items;  // fixed work: items moved in all, elapsed time measured
  int trials = 1;
  // Perf counters and RSS per trial. Off only for lincheck's histories of a few dozen
  // operations, where opening ~10 counters per thread and resetting the peak RSS cost more
  // than the history itself and mean nothing.
  bool process_figures = true;
  std::string json_path;
  bool list = false;

  int total_threads() const { return threads + rq_threads; }
  // The measurement core's view: every thread, update threads first (bench/core/thread_team.hpp).
  TeamSetup team_setup() const { return {total_threads(), pin, pin_cpus, process_figures}; }
  double search_pct() const { return 100.0 - insert_pct - delete_pct - rq_pct - find_or_insert_pct - assign_pct; }
};

const char* prefill_mode_name(PrefillMode);

}  // namespace cdsb::bench
