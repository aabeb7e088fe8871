// The sequential differential test of a black-box method (architecture.md §5): one thread runs
// random adds, removes and reads on the method and on the sequential structure's reference
// (BlackBox<D>::Reference); every result, the final contents and the method's invariant
// check must agree. NR runs with two replicas (the second has no thread, so it is caught up
// only when log space runs out) on a log of 8 entries: the run wraps the log hundreds of
// times and the idle replica is caught up on every wrap, then compared with the first.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "bench/check/differential.hpp"
#include "bench/workloads/blackbox_workload.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/uniform.hpp"

namespace cdsb::bench {

template <class M>
std::string blackbox_differential(const DifferentialRun& run) {
  using D = typename M::structure_type;
  using Traits = BlackBox<D>;
  using Reference = typename Traits::Reference;
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
    if constexpr (std::is_constructible_v<Reference, std::uint64_t>) return Reference(run.key_range);
    else return Reference();
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

}  // namespace cdsb::bench
