// The set workload's validation (set_workload.hpp, `finish`), one check at a time: for each
// check (key sum, size, invariants, contains, and a map's values read and held) a broken set
// or map that only that check can catch
// (support/broken_validation_sets.hpp) fails validation with that check's message, and the
// figures of every other check agree. Removing or weakening a check fails its test.
//
// The workload runs on one OS thread playing two thread ids (prefill, then 20,000 operations),
// so every run is the same; no registry is needed (its structures are not instantiated here).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "bench/workloads/set_workload.hpp"
#include "cdsbench/platform/spin_lock.hpp"
#include "cdsbench/platform/topology.hpp"
#include "cdsbench/set/locked_std_set.hpp"
#include "support/broken_validation_sets.hpp"

namespace set_validation_test {

using namespace cdsb;
using namespace cdsb::bench;

// A trial's workload without the trial's threads: prefill, operations of tids 0 and 1 in turn,
// then the validation. Returns its report.
template <class S>
Json run_and_validate() {
  Config c;
  c.threads = 2;
  c.key_range = 4000;
  c.insert_pct = c.delete_pct = 20;
  if constexpr (HasAssign<S>) c.find_or_insert_pct = c.assign_pct = 10;
  c.seed = 7;
  static const Topology topology;
  const std::vector<int> cpus(c.total_threads(), -1);
  SetWorkload<S> w(TrialContext{c, topology, cpus, 0, c.seed});
  w.prefill_begin();
  for (int tid = 0; tid < c.threads; ++tid) w.prefill(tid, w.state(tid));
  w.prefill_correct(0, w.state(0));
  for (int i = 0; i < 20'000; ++i) w.step(i % 2, w.state(i % 2));
  Json j;
  w.finish(j);
  return j;
}

// The checks whose figures disagree, read from the report independently of its verdict.
std::set<std::string> failing_checks(const Json& j) {
  std::set<std::string> failing;
  if (j["expected_key_sum"] != j["actual_key_sum"]) failing.insert("key sum");
  if (j["expected_size"] != j["actual_size"]) failing.insert("size");
  const std::string invariants = j["invariants"];
  if (invariants != "ok" && invariants != "not provided") failing.insert("invariants");
  if (j["contains_mismatches"] != 0) failing.insert("contains");
  if (j.value("wrong_values_read", 0) != 0) failing.insert("values read");
  if (j.value("wrong_values_held", 0) != 0) failing.insert("values held");
  return failing;
}

template <class S>
void expect_caught_by(const std::string& check, const std::string& message) {
  const Json j = run_and_validate<S>();
  EXPECT_EQ(failing_checks(j), std::set<std::string>{check}) << j.dump(1);
  EXPECT_EQ(j["validation"], "FAIL");
  EXPECT_EQ(j.value("validation_error", std::string()).rfind(message, 0), 0u)
      << "the validation names another check: " << j.value("validation_error", std::string());
}

TEST(SetValidation, ASoundSetPassesEveryCheck) {
  const Json j = run_and_validate<LockedStdSet<SpinLock>>();
  EXPECT_EQ(failing_checks(j), std::set<std::string>{}) << j.dump(1);
  EXPECT_EQ(j["validation"], "PASS");
  EXPECT_GT(j["expected_size"].get<std::int64_t>(), 1000);
}

TEST(SetValidation, ASoundMapPassesEveryCheckAndRunsEveryMapOperation) {
  const Json j = run_and_validate<DedupChainingMap<>>();
  EXPECT_EQ(failing_checks(j), std::set<std::string>{}) << j.dump(1);
  EXPECT_EQ(j["validation"], "PASS");
  EXPECT_EQ(j["wrong_values_read"], 0);
  EXPECT_EQ(j["wrong_values_held"], 0);
  for (const char* op : {"find_or_insert", "assign"}) {
    EXPECT_GT(j[std::string(op) + "_attempts"].get<std::uint64_t>(), 1000u) << op;
    EXPECT_GT(j[std::string(op) + "_successes"].get<std::uint64_t>(), 100u) << op;
  }
}

TEST(SetValidation, OnlyTheValuesReadCatchAFindReturningAnotherKeysValue) {
  expect_caught_by<cdsb::testing::MixesUpValuesMap>("values read", "finds returned a value not written for their key");
}

TEST(SetValidation, OnlyTheValuesHeldCatchACorruptedStoredValue) {
  expect_caught_by<cdsb::testing::CorruptsValuesMap>("values held", "keys hold a value not written for them");
}

TEST(SetValidation, OnlyTheKeySumCatchesAMisplacedKey) {
  expect_caught_by<cdsb::testing::MisplacesKeysSet>("key sum", "key sum differs from inserted minus deleted keys");
}

TEST(SetValidation, OnlyTheSizeCatchesAnExtraKeyOfZeroSum) {
  expect_caught_by<cdsb::testing::SplitsKeysSet>("size", "size differs from successful inserts minus deletes");
}

TEST(SetValidation, OnlyTheInvariantCheckCatchesABrokenShape) {
  expect_caught_by<cdsb::testing::FailsInvariantSet>("invariants", "invariant violated: node 7");
}

TEST(SetValidation, OnlyTheContainsProbeCatchesALyingContains) {
  expect_caught_by<cdsb::testing::LyingContainsSet>("contains", "contains(");
}

}  // namespace set_validation_test
