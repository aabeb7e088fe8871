// The correctness matrix of architecture.md §5 for every registered structure, found through the
// registry (no per-structure test code): the sequential differential test against std::map (a
// queue's and a stack's against std::deque) and a multi-threaded stress trial with exact validation. (Linearizability is checked by
// cdsbench-lincheck, run by ctest.) The deliberately broken structures must be caught.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "bench/check/differential.hpp"
#include "bench/harness/trial_context.hpp"
#include "bench/registry/registry.hpp"
#include "support/broken_sets.hpp"

namespace correctness_test {

using namespace cdsb::bench;

const Registry& registry() {
  static const Registry r = cdsb::testing::registry_with_broken_sets();
  return r;
}

// One test variant of a structure: every reclaimer with the default allocator, every
// allocator with the default reclaimer (registry.hpp's is_test_variant).
struct TestCase {
  std::string name, reclaimer, allocator;
};

std::vector<TestCase> variants(bool include_broken) {
  std::vector<TestCase> out;
  for (const auto& e : registry().entries())
    if (include_broken || !e.deliberately_broken)
      for (const Variant& v : e.test_variants()) out.push_back({e.name, v.reclaimer, v.allocator});
  return out;
}

std::string test_name(const ::testing::TestParamInfo<TestCase>& info) {
  std::string s = info.param.name + "_" + info.param.reclaimer + "_" + info.param.allocator;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class EveryStructure : public ::testing::TestWithParam<TestCase> {
 protected:
  const StructureEntry& entry() const { return *registry().find(GetParam().name); }
};

TEST_P(EveryStructure, AgreesWithStdMapSequentially) {
  const StructureEntry& e = entry();
  if (!e.differential) {
    // Only `null` has none: by design it stores nothing, so it is not a set to compare.
    ASSERT_EQ(e.name, "null");
    return;
  }
  std::string first_error;
  for (std::uint64_t seed = 1; seed <= 8 && first_error.empty(); ++seed)  // key ranges 16..128: many collisions
    first_error = e.differential({seed, 5000, seed * 16, GetParam().reclaimer, GetParam().allocator, true});
  if (e.deliberately_broken) {
    EXPECT_NE(first_error, "") << e.name << " must be caught";
  } else {
    EXPECT_EQ(first_error, "") << e.name;
  }
}

// Broken structures' trials are covered by Validation.CatchesBrokenStructures.
class EverySoundStructure : public EveryStructure {};

TEST_P(EverySoundStructure, StressTrialValidates) {
  const StructureEntry& e = entry();
  Config c;
  c.ds = e.name;
  c.threads = 4;  // more than the CPUs of the CI machines: preemption inside operations
  c.rq_threads = e.range_queries ? 1 : 0;
  c.rq_pct = e.range_queries ? 5 : 0;
  c.rq_size = 16;
  c.key_range = 256;  // high contention
  c.insert_pct = c.delete_pct = 40;
  if (!e.concurrent_erase) {
    // No thread-safe erase (tbb.concurrent_map): no deletes, so start empty on a range large
    // enough that inserts keep succeeding beside the searches.
    c.delete_pct = 0;
    c.key_range = 1 << 17;
    c.prefill = PrefillMode::none;
  }
  c.ops = 200'000;
  if (runs_queue_workload(e.kind)) {
    // Split mode through the termination protocol: 2 producers move a fixed number of items in
    // batches, 2 consumers drain them to the end.
    c.ops.reset();
    c.queue_mode = QueueMode::split;
    c.producers = 2;
    c.batch = 8;
    c.items = 200'000;
    c.prefill_items = 1000;
  }
  c.seed = 99;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  c.reclaim_eager = true;  // reclaim at once, so a use-after-free shows
#endif
  c.reclaimer = GetParam().reclaimer;
  c.allocator = GetParam().allocator;
  static const cdsb::Topology topology;
  const std::vector<int> cpus(c.total_threads(), -1);
  const TrialOutcome out = e.run_trial(TrialContext{c, topology, cpus, 0, c.seed});
  EXPECT_EQ(out.status, TrialStatus::ok) << out.report.dump(1);
  EXPECT_EQ(out.report["validation"], "PASS");
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryStructure, ::testing::ValuesIn(variants(true)), test_name);
INSTANTIATE_TEST_SUITE_P(Registry, EverySoundStructure, ::testing::ValuesIn(variants(false)), test_name);

}  // namespace correctness_test
