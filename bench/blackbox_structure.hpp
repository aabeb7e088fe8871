// Registry entries for the black-box structures (METHOD.STRUCTURE): Node Replication and its
// baselines over the sequential structures of include/cdsbench/seq/, run by the black-box
// workload, recorded for the linearizability checker with the model of the structure, and
// compared operation by operation with a standard-library reference (DESIGN.md §5).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bench/blackbox_workload.hpp"
#include "bench/registry.hpp"
#include "cdsbench/nr/flat_combining.hpp"
#include "cdsbench/nr/node_replication.hpp"
#include "cdsbench/nr/rw_locked.hpp"
#include "cdsbench/nr/spin_locked.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/uniform.hpp"

namespace cdsb::bench {

// ---- standard-library references of the sequential structures ----------------------------
// Each returns, for one operation, what the structure must return, and says whether a
// structure's final contents equal its own.
template <class D>
struct Reference;

template <class Q>
struct PriorityQueueReference {
  std::multiset<std::uint64_t> items;
  seq::Answer apply(const typename Q::Op& op) {
    switch (op.code) {
      case Q::Code::insert:
        items.insert(op.value);
        return {true, op.value};
      case Q::Code::delete_min: {
        if (items.empty()) return {false, 0};
        const std::uint64_t v = *items.begin();
        items.erase(items.begin());
        return {true, v};
      }
      default:
        return items.empty() ? seq::Answer{false, 0} : seq::Answer{true, *items.begin()};
    }
  }
  template <class S>
  bool same_contents(const S& s) const {
    std::vector<std::uint64_t> got;
    s.for_each_item([&](std::uint64_t v) { got.push_back(v); });
    std::sort(got.begin(), got.end());
    return got == std::vector<std::uint64_t>(items.begin(), items.end());
  }
};
template <>
struct Reference<seq::SkipListPq> : PriorityQueueReference<seq::SkipListPq> {};
template <>
struct Reference<seq::PairingHeap> : PriorityQueueReference<seq::PairingHeap> {};

template <>
struct Reference<seq::Stack> {
  std::vector<std::uint64_t> items;  // std::stack cannot be walked for the final comparison
  seq::Answer apply(const seq::Stack::Op& op) {
    using Code = seq::Stack::Code;
    if (op.code == Code::push) {
      items.push_back(op.value);
      return {true, op.value};
    }
    if (items.empty()) return {false, 0};
    const std::uint64_t v = items.back();
    if (op.code == Code::pop) items.pop_back();
    return {true, v};
  }
  template <class S>
  bool same_contents(const S& s) const {
    std::vector<std::uint64_t> got;
    s.for_each_item([&](std::uint64_t v) { got.push_back(v); });
    return got == items;
  }
};

template <>
struct Reference<seq::SkipListDict> {
  std::map<std::uint64_t, std::uint64_t> items;
  seq::Answer apply(const seq::SkipListDict::Op& op) {
    using Code = seq::SkipListDict::Code;
    const auto it = items.find(op.key);
    switch (op.code) {
      case Code::insert:
        if (it != items.end()) return {false, it->second};
        items.emplace(op.key, op.value);
        return {true, op.value};
      case Code::erase: {
        if (it == items.end()) return {false, 0};
        const std::uint64_t v = it->second;
        items.erase(it);
        return {true, v};
      }
      default:
        return it == items.end() ? seq::Answer{false, 0} : seq::Answer{true, it->second};
    }
  }
  template <class S>
  bool same_contents(const S& s) const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> got;
    s.for_each_item([&](std::uint64_t k, std::uint64_t v) { got.emplace_back(k, v); });
    return got == std::vector<std::pair<std::uint64_t, std::uint64_t>>(items.begin(), items.end());
  }
};

template <>
struct Reference<seq::SortedSet> {
  std::map<std::uint64_t, std::int64_t> scores;
  seq::Answer apply(const seq::SortedSet::Op& op) {
    const auto it = scores.find(op.member);
    if (op.code == seq::SortedSet::Code::zincrby) {
      if (it == scores.end()) {
        scores.emplace(op.member, op.increment);
        return {true, static_cast<std::uint64_t>(op.increment)};
      }
      it->second = static_cast<std::int64_t>(static_cast<std::uint64_t>(it->second) + static_cast<std::uint64_t>(op.increment));
      return {false, static_cast<std::uint64_t>(it->second)};
    }
    if (it == scores.end()) return {false, 0};
    std::uint64_t rank = 0;  // members ordered before it by (score, member)
    for (const auto& [m, s] : scores) rank += s < it->second || (s == it->second && m < op.member);
    return {true, rank};
  }
  template <class S>
  bool same_contents(const S& s) const {
    std::vector<std::tuple<std::int64_t, std::uint64_t>> got, want;
    s.for_each_item([&](std::uint64_t m, std::int64_t score) { got.emplace_back(score, m); });
    for (const auto& [m, score] : scores) want.emplace_back(score, m);
    std::sort(want.begin(), want.end());
    return got == want;  // for_each_item walks in rank order
  }
};

// The synthetic buffer, written from its specification (seq/synthetic.hpp) with plain
// counters: which entries an operation touches, their sums and the fingerprint.
template <>
struct Reference<seq::Synthetic> {
  explicit Reference(std::uint64_t n)
      : counters(n), c(std::min<std::uint64_t>(seq::Synthetic::default_touched, n)), stride(std::max<std::uint64_t>(n / c, 1)) {}
  std::vector<std::uint64_t> counters;
  std::uint64_t c, stride, fingerprint = 0, sum = 0;
  std::int64_t count = 0;
  seq::Synthetic::Result apply(const seq::Synthetic::Op& op) {
    const std::uint64_t n = counters.size();
    const std::uint64_t start = cdsb::detail::splitmix64_mix(op.key) % n;
    seq::Synthetic::Result r;
    const bool update = op.code == seq::Synthetic::Code::update;
    for (std::uint64_t j = 0; j < c; ++j) {
      std::uint64_t& e = counters[(start + j * stride) % n];
      if (update) e += static_cast<std::uint64_t>(op.delta);
      r.touched_sum += e;
    }
    if (update) {
      fingerprint = seq::fingerprint_step(fingerprint, {op.key, static_cast<std::uint64_t>(op.delta)});
      sum += static_cast<std::uint64_t>(op.delta);
      count += op.delta > 0 ? 1 : -1;
    }
    r.fingerprint = fingerprint;
    return r;
  }
  template <class S>
  bool same_contents(const S& s) const {
    return s.fingerprint() == fingerprint && s.delta_sum() == sum && s.delta_count() == count;
  }
};

// ---- the sequential differential test of a black-box method ---------------------------
// One thread runs random adds, removes and reads on the method and on the reference; every
// result, the final contents and the method's invariant check must agree. NR runs with two
// replicas (the second has no thread, so it is caught up only when log space runs out) on a
// log of 8 entries: the run wraps the log hundreds of times and the idle replica is caught
// up on every wrap, then compared with the first.
template <class M>
std::string blackbox_differential(const DifferentialRun& run) {
  using D = typename M::structure_type;
  using Traits = BlackBox<D>;
  Config c;
  c.key_range = run.key_range;
  c.threads = 1;
  c.reclaim_eager = run.reclaim_eager;
  c.reclaimer = run.reclaimer;
  c.allocator = run.allocator;
  c.nr_replicas = 2;
  c.nr_log_entries = 8;
  c.pin = PinMode::none;
  static const Topology topology;
  const std::vector<int> cpus{-1};
  const auto method = make_method<M>(TrialContext{c, topology, cpus, 0, run.seed});
  auto reference = [&] {
    if constexpr (std::is_constructible_v<Reference<D>, std::uint64_t>) return Reference<D>(run.key_range);
    else return Reference<D>();
  }();
  Xoshiro256StarStar rng;
  rng.seed(run.seed);
  for (int i = 0; i < run.ops; ++i) {
    const int type = static_cast<int>(uniform_below(rng, 3));
    const std::uint64_t key = 1 + uniform_below(rng, run.key_range);
    const std::uint64_t random = rng.next();
    const auto op = type == bb_add ? Traits::add(key, random) : type == bb_remove ? Traits::remove(key, random) : Traits::read(key);
    const auto got = method->execute(0, op);
    const auto want = reference.apply(op);
    if (!(got == want)) {
      const HistoryEvent g = Traits::event(type, op, got), w = Traits::event(type, op, want);
      return std::string(g.op) + "(" + std::to_string(key) + ") at operation " + std::to_string(i) + " (seed " +
             std::to_string(run.seed) + "): returned " + (g.has_result ? std::to_string(g.result) : "nothing") +
             ", the reference " + (w.has_result ? std::to_string(w.result) : "nothing");
    }
  }
  const std::string invariants = method->check_invariants();
  if (!invariants.empty()) return "invariant violated: " + invariants + " (seed " + std::to_string(run.seed) + ")";
  if (!reference.same_contents(method->structure()))
    return "final contents differ from the reference (seed " + std::to_string(run.seed) + ")";
  return {};
}

// ---- the registry entry ----------------------------------------------------------------

template <class M>
StructureEntry blackbox_structure(std::string name, std::string description,
                                  std::vector<std::string> reclaimers = {"immediate"},
                                  std::vector<std::string> allocators = {"system"}) {
  using D = typename M::structure_type;
  StructureEntry e;
  e.name = std::move(name);
  e.description = std::move(description);
  e.reclaimers = std::move(reclaimers);
  e.allocators = std::move(allocators);
  e.black_box = true;
  e.node_replicated = NodeReplicatedMethod<M>;
  e.run_trial = [](const TrialContext& ctx) {
    BlackBoxWorkload<M> workload(ctx);
    return run_trial(workload, ctx);
  };
  e.model = BlackBox<D>::model;
  e.record_history = [](const TrialContext& ctx) {
    const Config& c = ctx.config;
    const std::size_t per_thread = c.ops ? *c.ops / c.threads + 1 : 1024;
    BlackBoxWorkload<M, HistoryRecorder> workload(ctx, HistoryRecorder(c.total_threads(), per_thread));
    TrialOutcome outcome = run_trial(workload, ctx);
    return RecordedHistory{std::move(outcome), workload.recorder()};
  };
  e.differential = &blackbox_differential<M>;
  return e;
}

// A black-box method written against the reclamation interface (the LF baselines),
// instantiated as the variants Vs; reclaimers and allocators listed in variant order, the
// first variant the default (as set_structure_variants in registry.hpp).
template <class... Vs>
StructureEntry blackbox_structure_variants(detail::TypeList<Vs...>, std::string name, std::string description) {
  using First = std::tuple_element_t<0, std::tuple<Vs...>>;
  using D = typename First::structure_type;
  StructureEntry e;
  e.name = std::move(name);
  e.description = std::move(description);
  auto add_unique = [](std::vector<std::string>& list, const std::string& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
  };
  (add_unique(e.reclaimers, Vs::reclaimer_type::name), ...);
  (add_unique(e.allocators, Vs::reclaimer_type::allocator_type::name), ...);
  e.layout = detail::layout_of<First>();
  e.black_box = true;
  e.run_trial = [](const TrialContext& ctx) {
    return detail::with_variant<Vs...>(ctx.config.reclaimer, ctx.config.allocator, [&]<class V>() {
      BlackBoxWorkload<V> workload(ctx);
      return run_trial(workload, ctx);
    });
  };
  e.model = BlackBox<D>::model;
  e.record_history = [](const TrialContext& ctx) {
    return detail::with_variant<Vs...>(ctx.config.reclaimer, ctx.config.allocator, [&]<class V>() {
      const Config& c = ctx.config;
      const std::size_t per_thread = c.ops ? *c.ops / c.threads + 1 : 1024;
      BlackBoxWorkload<V, HistoryRecorder> workload(ctx, HistoryRecorder(c.total_threads(), per_thread));
      TrialOutcome outcome = run_trial(workload, ctx);
      return RecordedHistory{std::move(outcome), workload.recorder()};
    });
  };
  e.differential = [](const DifferentialRun& run) {
    return detail::with_variant<Vs...>(run.reclaimer, run.allocator, [&]<class V>() { return blackbox_differential<V>(run); });
  };
  return e;
}

// The five black-box methods over one sequential structure: nr.S, sl.S, rwl.S, fc.S, fcplus.S.
template <class D>
void add_blackbox_methods(Registry& r, const std::string& structure, const std::string& what) {
  // The sequential structures free nodes at once, inside the method's critical section.
  r.add(blackbox_structure<NodeReplicated<D>>(
      "nr." + structure, what + " under Node Replication (Calciu et al., ASPLOS 2017): a replica per node, one shared log"));
  r.add(blackbox_structure<SpinLocked<D>>("sl." + structure, what + " behind one spin lock"));
  r.add(blackbox_structure<RwLocked<D>>("rwl." + structure, what + " behind one distributed readers-writer lock"));
  r.add(blackbox_structure<FlatCombining<D>>("fc." + structure, what + " under flat combining"));
  r.add(blackbox_structure<FlatCombiningRw<D>>(
      "fcplus." + structure, what + " under flat combining, reads under a readers-writer lock"));
}

// bench/registry_blackbox*.cpp (split so the instantiations compile in parallel).
void add_blackbox_queues(Registry& r);    // skiplist_pq, pairing_heap
void add_blackbox_keyed(Registry& r);     // skiplist_dict, sorted_set
void add_blackbox_lock_free(Registry& r); // lf.stack

}  // namespace cdsb::bench
