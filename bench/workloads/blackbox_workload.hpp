// The black-box workload (architecture.md §4): Node Replication's evaluation (Calciu et al.,
// ASPLOS 2017) in the one measured loop.
//
// A black-box method M (NR, SL, RWL, FC, FC+, LF) runs a structure through
// `M::execute(tid, op)`. Each operation is a generic add, remove or read, drawn
// independently per operation (P4): add with probability --insert, remove with --delete,
// read otherwise (the update ratio is insert + delete). BlackBox<D> maps them onto the
// structure as the paper's table does (one header per sequential structure, blackbox/):
//
//   structure       add                   remove                read
//   skiplist_pq     insert(key)           delete_min()          find_min()
//   pairing_heap    insert(key)           delete_min()          find_min()
//   skiplist_dict   insert(key, value)    erase(key)            find(key)
//   stack           push(key)             pop()                 top()
//   synthetic       update(key, +delta)   update(key, -delta)   read(key)
//   sorted_set      ZINCRBY(key, +delta)  ZINCRBY(key, -delta)  ZRANK(key)
//
// Keys come from the configured distribution (uniform or Zipf for the dictionary; for the
// queues and the stack they are the priorities and items); value and delta from the
// thread's generator. Optional external work: after each operation the thread writes to
// --external-work random cache lines of its own 1 MiB array (work between operations, as
// in the paper). Prefill: the paper's 200,000 items (10,000 for the sorted set; none for the
// synthetic buffer, whose entries start at zero), capped at the key range, or --prefill-items,
// added by the measuring threads themselves (P5); the dictionary's and the sorted set's
// prefill keys are distinct (a permutation of the key range), so each add succeeds.
//
// Validation (P6): a multiset checksum. Each thread adds up the items its successful adds
// put in and its successful removes took out (the item's checksum and a count); at the end
// the structure's contents must add up to the same. For NR the method's invariant check
// first brings every replica up to date and requires them all equal.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/core/report.hpp"
#include "bench/harness/make_structure.hpp"
#include "bench/harness/trial_context.hpp"
#include "bench/workloads/blackbox/common.hpp"
#include "bench/workloads/blackbox/dictionary.hpp"
#include "bench/workloads/blackbox/priority_queue.hpp"
#include "bench/workloads/blackbox/sorted_set.hpp"
#include "bench/workloads/blackbox/stack.hpp"
#include "bench/workloads/blackbox/synthetic.hpp"
#include "bench/workloads/workload.hpp"
#include "cdsbench/nr/node_replication.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/random/any_generator.hpp"
#include "cdsbench/random/distributions.hpp"
#include "cdsbench/random/feistel_permutation.hpp"
#include "cdsbench/random/reseeding.hpp"
#include "cdsbench/random/seeding.hpp"
#include "cdsbench/random/uniform.hpp"

namespace cdsb::bench {

// ---- the method: how a trial builds it and what it reports -----------------------------

template <class M>
concept NodeReplicatedMethod = requires(M& m) {
  m.replica_count();
  m.log_capacity();
  m.stats().catch_ups_by_others;
};

// Which replica each thread uses: with --nr-replicas K, K virtual nodes of consecutive
// threads (thread t on node t*K/n, so compact pinning keeps a node's threads together);
// without it, the NUMA node (hwloc) of each pinned thread's CPU, or blocks of threads over
// the NUMA nodes when threads are not pinned.
inline std::vector<int> nr_thread_nodes(const TrialContext& ctx, int& replicas) {
  const int n = ctx.config.total_threads();
  std::vector<int> nodes(n);
  if (ctx.config.nr_replicas > 0) {
    replicas = ctx.config.nr_replicas;
    for (int t = 0; t < n; ++t) nodes[t] = static_cast<int>(static_cast<long long>(t) * replicas / n);
    return nodes;
  }
  std::vector<int> numa;  // the NUMA nodes of the allowed CPUs, densely renumbered
  for (const Cpu& cpu : ctx.topology.cpus()) numa.push_back(cpu.numa_node);
  std::sort(numa.begin(), numa.end());
  numa.erase(std::unique(numa.begin(), numa.end()), numa.end());
  replicas = std::max<int>(1, static_cast<int>(numa.size()));
  for (int t = 0; t < n; ++t) {
    nodes[t] = static_cast<int>(static_cast<long long>(t) * replicas / n);
    const int cpu = t < static_cast<int>(ctx.thread_cpus.size()) ? ctx.thread_cpus[t] : -1;
    for (const Cpu& c : ctx.topology.cpus())
      if (cpu >= 0 && c.os_index == cpu)
        nodes[t] = static_cast<int>(std::lower_bound(numa.begin(), numa.end(), c.numa_node) - numa.begin());
  }
  return nodes;
}

inline constexpr std::uint64_t nr_default_log_entries = std::uint64_t{1} << 16;

// Builds method M for a trial (NR from the configuration's node map and log size).
template <class M>
std::unique_ptr<M> make_method(const TrialContext& ctx) {
  using D = typename M::structure_type;
  const Config& c = ctx.config;
  if constexpr (NodeReplicatedMethod<M>) {
    int replicas = 1;
    std::vector<int> nodes = nr_thread_nodes(ctx, replicas);
    NodeReplicationOptions options;
    options.log_entries = c.nr_log_entries ? c.nr_log_entries : nr_default_log_entries;
    return std::make_unique<M>(std::move(nodes), replicas, options, [&c] { return BlackBox<D>::make(c); });
  } else if constexpr (requires { M(c.total_threads(), BlackBox<D>::make(c)); }) {
    return std::make_unique<M>(c.total_threads(), BlackBox<D>::make(c));
  } else {
    return make_structure<M>(c.total_threads(), c.reclaim_eager);  // LF: no sequential structure
  }
}

// Everything of the black-box workload that does not depend on the method or the structure,
// compiled once (blackbox_workload.cpp): the threads' generators and counts, the prefill's
// tickets and deadline, its report, and the checksum comparison of validation.
class BlackBoxWorkloadCore {
 public:
  static constexpr int op_type_count = 3;
  static const char* op_type_name(int op) {
    static constexpr std::array names{"read", "add", "remove"};
    return names[op];
  }
  // External work: a private array of this many cache lines per thread (1 MiB).
  static constexpr std::size_t external_lines = 1 << 14;

  struct ThreadState : ThreadBasics<op_type_count> {
    using ThreadBasics<op_type_count>::ThreadBasics;
    std::uint64_t item_sum = 0;  // checksum of items added minus removed, modulo 2^64
    std::int64_t items = 0;      // items added minus removed
    std::unique_ptr<std::array<std::uint64_t, cache_line_size / 8>[]> private_lines;
  };

  // How the sequential structure is prefilled (from BlackBox<D>).
  struct PrefillRule {
    std::uint64_t paper_items;  // items the paper prefills
    bool distinct_keys;         // prefill keys must be distinct (capped at the key range)
  };

  BlackBoxWorkloadCore(const TrialContext& ctx, PrefillRule rule);

  // Items prefilled: --prefill-items, else the paper's count; capped at the key range for
  // the structures whose prefill keys must be distinct; 0 with --prefill none.
  static std::uint64_t prefill_target(const Config& c, PrefillRule rule);

  ThreadState& state(int tid) { return *states_[tid]; }
  void thread_start(int) {}
  void thread_finish(int) {}

  void prefill_begin() { deadline_.start(cfg_.prefill_timeout_ms); }
  void prefill_correct(int, ThreadState&) {}
  bool prefill_failed() const { return deadline_.timed_out(); }
  void report_prefill(Json& j) const;

 protected:
  // The next prefill item's ticket; nullopt when the target is reached or the deadline passed.
  std::optional<std::uint64_t> next_prefill_ticket(std::uint64_t iteration);
  // The expected totals from the threads' counts (and the counts' report).
  ItemTotals expected_totals(Json& j) const;
  // The validation error ("" if none) from the method's invariant check and the structure's
  // totals against the expected ones; reports all three.
  std::string compare(Json& j, const std::string& invariants, ItemTotals expected, ItemTotals actual) const;
  // Reports the verdict; true when it passed.
  static bool conclude(Json& j, const std::string& error);

  void external_work(ThreadState& st) {
    for (std::uint32_t i = 0; i < cfg_.external_work; ++i) ++st.private_lines[st.rng.next() & (external_lines - 1)][0];
  }

  const Config& cfg_;
  KeyDistribution keys_;
  FeistelPermutation prefill_keys_;
  const std::uint64_t prefill_target_;
  std::vector<Padded<ThreadState>> states_;
  alignas(false_sharing_range) std::atomic<std::uint64_t> next_ticket_{0};
  PrefillDeadline deadline_;
};

// Recorder: NoRecorder for measurement, HistoryRecorder for linearizability histories.
template <class M, class Recorder = NoRecorder>
class BlackBoxWorkload final : public BlackBoxWorkloadCore {
 public:
  using D = typename M::structure_type;
  using Traits = BlackBox<D>;
  using Op = typename Traits::Op;

  explicit BlackBoxWorkload(const TrialContext& ctx)
    requires(!Recorder::enabled)
      : BlackBoxWorkload(ctx, Recorder{}) {}

  BlackBoxWorkload(const TrialContext& ctx, Recorder recorder)
      : BlackBoxWorkloadCore(ctx, {Traits::paper_prefill, Traits::distinct_prefill}),
        recorder_(std::move(recorder)),
        method_(make_method<M>(ctx)) {}

  M& method() { return *method_; }
  const Recorder& recorder() const { return recorder_; }

  // One measured operation.
  int step(int tid, ThreadState& st) {
    const int type = st.mix.draw(st.rng.next());
    const std::uint64_t key = keys_(st.rng);
    const std::uint64_t random = st.rng.next();
    const Op op = type == bb_add ? Traits::add(key, random) : type == bb_remove ? Traits::remove(key, random) : Traits::read(key);
    std::uint64_t call_ns = 0;
    if constexpr (Recorder::enabled) call_ns = call_stamp_ns();
    const auto result = method_->execute(tid, op);
    if constexpr (Recorder::enabled) {
      HistoryEvent e = Traits::event(type, op, result);
      e.call_ns = call_ns;
      e.return_ns = return_stamp_ns();
      recorder_.record(tid, e);
    }
    keep(result);
    const ItemEffect effect = Traits::effect(type, op, result);
    st.item_sum += effect.sum;
    st.items += effect.count;
    st.count(type, effect.success);
    if (cfg_.external_work) [[unlikely]] external_work(st);
    return type;
  }

  // ---- prefill by the measuring threads (P5) ---------------------------------------------
  void prefill(int tid, ThreadState& st) {
    for (std::uint64_t i = 0;; ++i) {
      const auto ticket = next_prefill_ticket(i);
      if (!ticket) return;
      const std::uint64_t key = Traits::distinct_prefill ? 1 + prefill_keys_(*ticket) : 1 + uniform_below(st.rng, cfg_.key_range);
      const Op op = Traits::add(key, st.rng.next());
      const auto result = method_->execute(tid, op);
      const ItemEffect effect = Traits::effect(bb_add, op, result);
      st.item_sum += effect.sum;
      st.items += effect.count;
      ++st.prefill_ops;
    }
  }

  // ---- quiescent validation (P6) and the workload's figures -----------------------------
  bool finish(Json& j) {
    const ItemTotals expected = expected_totals(j);
    // The method's own check first: for NR it brings every replica up to date and compares.
    const std::string invariants = method_->check_invariants();
    const std::string error = compare(j, invariants, expected, Traits::totals(method_->structure()));
    j["structure_memory_bytes"] = method_->memory_bytes();
    if constexpr (NodeReplicatedMethod<M>) {
      const int n = cfg_.total_threads();
      j["nr_replicas"] = method_->replica_count();
      Json nodes = Json::array();
      for (int t = 0; t < n; ++t) nodes.push_back(method_->node_of(t));
      j["nr_thread_nodes"] = nodes;
      j["nr_log_entries"] = method_->log_capacity();
      j["nr_log_bytes"] = method_->log_bytes();
      j["nr_replica_bytes"] = method_->replica_bytes();
      j["nr_log_tail"] = method_->log_tail();
      j["nr_log_wraps"] = method_->log_tail() / method_->log_capacity();
      const auto s = method_->stats();
      j["nr_combines"] = s.combines;
      j["nr_avg_batch"] = s.combines ? static_cast<double>(s.combined_ops) / static_cast<double>(s.combines) : 0.0;
      j["nr_catch_ups_by_others"] = s.catch_ups_by_others;
      j["nr_log_full_waits"] = s.space_waits;
    }
    if constexpr (requires { method_->combines(); }) {
      j["fc_combines"] = method_->combines();
      j["fc_avg_batch"] = method_->combines() ? static_cast<double>(method_->combined_ops()) / static_cast<double>(method_->combines()) : 0.0;
    }
    if constexpr (requires { { method_->stats() } -> std::same_as<StatsReport>; }) put_stats(j, method_->stats());
    return conclude(j, error);
  }

 private:
  // Makes the compiler compute every result, used or not: a read whose result the
  // bookkeeping ignores (the synthetic buffer's touched sum) would otherwise be optimized
  // away behind an inlined lock, and measure nothing.
  template <class R>
  static void keep(const R& result) {
    if constexpr (requires { result.touched_sum; }) {
      asm volatile("" : : "r"(result.fingerprint), "r"(result.touched_sum));
    } else if constexpr (requires { result.integer; }) {  // the sorted set's (a rank)
      asm volatile("" : : "r"(result.integer), "r"(result.ok));
    } else {
      asm volatile("" : : "r"(result.value), "r"(result.ok));
    }
  }

  Recorder recorder_;
  std::unique_ptr<M> method_;
};

}  // namespace cdsb::bench
