// The harness: op selection, per-thread streams, prefill, validation, thread placement,
// latency histograms and the command line's checks.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness/cli.hpp"
#include "bench/core/latency.hpp"
#include "bench/harness/options.hpp"
#include "bench/harness/trial.hpp"
#include "bench/registry/register.hpp"  // the reclaimer lists
#include "bench/registry/registry.hpp"
#include "bench/core/report.hpp"
#include "bench/workloads/set_workload.hpp"
#include "cdsbench/set/locked_std_set.hpp"
#include "support/broken_sets.hpp"

namespace harness_test {

using namespace cdsb;
using namespace cdsb::bench;
using TestSet = LockedStdSet<SpinLock>;

const Topology& topology() {
  static const Topology t;
  return t;
}

struct Trial {
  Config cfg;
  std::vector<int> cpus;
  explicit Trial(Config c) : cfg(std::move(c)), cpus(cfg.total_threads(), -1) {}
  TrialContext context(std::uint64_t seed = 7) const { return {cfg, topology(), cpus, 0, seed}; }
};

Config small_config(int threads, double ins, double del) {
  Config c;
  c.ds = "locked_std_set";
  c.threads = threads;
  c.key_range = 4000;
  c.insert_pct = ins;
  c.delete_pct = del;
  c.ops = 20000;
  c.seed = 7;
  return c;
}

TEST(OpMix, DrawsEachTypeAtItsRate) {
  const OpMix mix = OpMix::from_percent(10, 20, 5);
  Xoshiro256StarStar rng;
  rng.seed(3);
  constexpr int n = 1'000'000;
  std::array<int, 4> counts{};
  for (int i = 0; i < n; ++i) ++counts[mix.draw(rng.next())];
  const std::array<double, 4> p{0.65, 0.10, 0.20, 0.05};  // search, insert, delete, rq
  for (int op = 0; op < 4; ++op) {
    const double sigma = std::sqrt(p[op] * (1 - p[op]) / n);
    EXPECT_NEAR(counts[op] / double(n), p[op], 5 * sigma) << "op " << op;
  }
}

// A map's mix: the two map types after the set's three, each at its rate.
TEST(OpMix, DrawsTheMapTypesAtTheirRates) {
  const OpMix mix = OpMix::from_percent(10, 20, 0, 15, 25);
  Xoshiro256StarStar rng;
  rng.seed(5);
  constexpr int n = 1'000'000;
  std::array<int, 6> counts{};
  for (int i = 0; i < n; ++i) ++counts[mix.draw<5>(rng.next())];
  // search, insert, delete, rq, find_or_insert, assign
  const std::array<double, 6> p{0.30, 0.10, 0.20, 0.0, 0.15, 0.25};
  for (int op = 0; op < 6; ++op) {
    const double sigma = std::sqrt(p[op] * (1 - p[op]) / n);
    EXPECT_NEAR(counts[op] / double(n), p[op], 5 * sigma + 1e-9) << "op " << op;
  }
  EXPECT_EQ(OpMix::from_percent(0, 0, 0, 100, 0).draw<5>(UINT64_MAX), op_find_or_insert);
  EXPECT_EQ(OpMix::from_percent(0, 0, 0, 0, 100).draw<5>(UINT64_MAX), op_assign);
  EXPECT_EQ(OpMix::from_percent(0, 0, 0, 0, 100).draw<5>(0), op_assign);
}

TEST(OpMix, ExtremeRatesAreExact) {
  Xoshiro256StarStar rng;
  rng.seed(4);
  const OpMix all_insert = OpMix::from_percent(100, 0, 0), all_search = OpMix::from_percent(0, 0, 0),
              all_rq = OpMix::from_percent(0, 0, 100);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t r = rng.next();
    ASSERT_EQ(all_insert.draw(r), op_insert);
    ASSERT_EQ(all_search.draw(r), op_read);
    ASSERT_EQ(all_rq.draw(r), op_range_query);
  }
  EXPECT_EQ(all_insert.draw(UINT64_MAX), op_insert);
  EXPECT_EQ(all_search.draw(0), op_read);
}

std::vector<std::pair<int, std::uint64_t>> first_draws(SetWorkload<TestSet>& w, int tid, int n) {
  std::vector<std::pair<int, std::uint64_t>> out;
  for (int i = 0; i < n; ++i) out.push_back(w.draw(w.state(tid)));
  return out;
}

TEST(Streams, EachThreadHasItsOwnStreamAndTheSeedReplaysIt) {
  Config c = small_config(4, 30, 30);
  c.key_range = 1ull << 40;  // collisions of keys between streams would be suspicious
  Trial t(c);
  SetWorkload<TestSet> a(t.context(11)), b(t.context(11)), other(t.context(12));
  std::vector<std::vector<std::pair<int, std::uint64_t>>> streams;
  for (int tid = 0; tid < 4; ++tid) {
    const auto sa = first_draws(a, tid, 1000);
    EXPECT_EQ(sa, first_draws(b, tid, 1000)) << "same seed must replay thread " << tid;
    EXPECT_NE(sa, first_draws(other, tid, 1000)) << "another seed must differ";
    streams.push_back(sa);
  }
  // P2: no two threads repeat each other's keys.
  std::set<std::uint64_t> keys;
  for (const auto& s : streams)
    for (const auto& [op, key] : s) keys.insert(key);
  EXPECT_EQ(keys.size(), 4000u);
}

struct PrefillCase {
  int threads;
  double ins, del;
  PrefillMode mode;
};

class Prefill : public ::testing::TestWithParam<PrefillCase> {};

TEST_P(Prefill, ConvergesToTheSteadyStateSizeAndValidates) {
  const PrefillCase pc = GetParam();
  Config c = small_config(pc.threads, pc.ins, pc.del);
  c.prefill = pc.mode;
  Trial t(c);
  SetWorkload<TestSet> w(t.context());
  const TrialOutcome out = run_trial(w, t.context());
  const Json& r = out.report;
  ASSERT_EQ(out.status, TrialStatus::ok) << r.dump(1);
  const double fraction = pc.ins + pc.del > 0 ? pc.ins / (pc.ins + pc.del) : 0.5;
  const auto target = static_cast<std::int64_t>(c.key_range * fraction + 0.5);
  EXPECT_EQ(r["prefill_target_size"].get<std::int64_t>(), target);
  const auto tolerance = static_cast<std::int64_t>(c.prefill_tolerance * target);
  EXPECT_LE(std::llabs(r["prefill_size"].get<std::int64_t>() - target), tolerance);
  EXPECT_TRUE(r["prefill_converged"].get<bool>());
  EXPECT_EQ(r["validation"], "PASS");
  EXPECT_EQ(r["total_ops"].get<std::uint64_t>(), 20000u);
  if (pc.mode == PrefillMode::steady) {
    // The plan's keys were inserted, then the aging updates ran (plus thread 0's correction).
    const PrefillPlan plan(c.key_range, target, thread_seed(r["trial_seed"].get<std::uint64_t>(), -3),
                           [](std::uint64_t) { return true; });
    const auto aging = static_cast<std::uint64_t>(c.prefill_aging * c.key_range);
    EXPECT_EQ(r["prefill_aging_updates"].get<std::uint64_t>(), aging);
    EXPECT_GE(r["prefill_ops"].get<std::uint64_t>(), plan.keys().size() + aging);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ratios, Prefill,
    ::testing::Values(PrefillCase{1, 10, 10, PrefillMode::steady}, PrefillCase{2, 30, 10, PrefillMode::steady},
                      PrefillCase{2, 10, 40, PrefillMode::steady}, PrefillCase{3, 0, 0, PrefillMode::steady},
                      PrefillCase{2, 25, 0, PrefillMode::steady},
                      // more threads than the 2 CPUs of these machines
                      PrefillCase{8, 20, 20, PrefillMode::steady}, PrefillCase{8, 50, 10, PrefillMode::insert_only},
                      PrefillCase{1, 10, 10, PrefillMode::insert_only}));

TEST(Prefill, NoneLeavesTheSetEmpty) {
  Config c = small_config(2, 10, 10);
  c.prefill = PrefillMode::none;
  Trial t(c);
  SetWorkload<TestSet> w(t.context());
  const TrialOutcome out = run_trial(w, t.context());
  EXPECT_EQ(out.report["prefill_size"], 0);
  EXPECT_EQ(out.report["prefill_ops"], 0);
  EXPECT_EQ(out.status, TrialStatus::ok);
}

TEST(Prefill, TimeoutIsAnErrorThatReportsTheSizeReached) {
  Config c = small_config(2, 10, 10);
  c.key_range = 50'000'000;  // far more than 1 ms of inserts
  c.prefill_timeout_ms = 1;
  Trial t(c);
  SetWorkload<TestSet> w(t.context());
  const TrialOutcome out = run_trial(w, t.context());
  EXPECT_EQ(out.status, TrialStatus::prefill_timeout);
  EXPECT_EQ(out.report["validation"], "FAIL");
  EXPECT_FALSE(out.report["prefill_converged"].get<bool>());
  EXPECT_LT(out.report["prefill_size"].get<std::int64_t>(), out.report["prefill_target_size"].get<std::int64_t>());
  EXPECT_EQ(out.report["total_ops"], 0);
}

// Each deliberately broken structure must fail validation, with the reason named.
TEST(Validation, CatchesBrokenStructures) {
  const Registry registry = cdsb::testing::registry_with_broken_sets();
  const std::vector<std::pair<std::string, std::string>> cases{
      {"broken_drops_inserts", "size differs"},
      {"broken_lying_contains", "disagrees with the set's contents"},
      {"broken_invariant", "invariant violated"}};
  for (const auto& [name, reason] : cases) {
    Config c = small_config(2, 20, 20);
    c.ds = name;
    Trial t(c);
    const TrialOutcome out = registry.find(name)->run_trial(t.context());
    EXPECT_EQ(out.status, TrialStatus::validation_failed) << name;
    EXPECT_EQ(out.report["validation"], "FAIL") << name;
    EXPECT_NE(out.report["validation_error"].get<std::string>().find(reason), std::string::npos)
        << name << ": " << out.report["validation_error"];
  }
}

TEST(Validation, CatchesLyingContainsOnALargeKeyRangeBySampling) {
  const Registry registry = cdsb::testing::registry_with_broken_sets();
  Config c = small_config(2, 20, 20);
  c.ds = "broken_lying_contains";
  c.key_range = 1ull << 24;  // too many keys to probe them all
  c.prefill = PrefillMode::none;
  c.ops = 200000;
  Trial t(c);
  const TrialOutcome out = registry.find(c.ds)->run_trial(t.context());
  EXPECT_EQ(out.status, TrialStatus::validation_failed);
  EXPECT_LT(out.report["contains_probes"].get<std::uint64_t>(), c.key_range);
  EXPECT_GT(out.report["contains_mismatches"].get<std::uint64_t>(), 0u);
}

TEST(Trial, NullMeasuresTheHarnessAndValidatesEmpty) {
  Config c = small_config(2, 20, 20);
  c.ds = "null";
  c.ops.reset();
  c.duration_ms = 50;
  Trial t(c);
  const TrialOutcome out = builtin_registry().find("null")->run_trial(t.context());
  EXPECT_EQ(out.status, TrialStatus::ok);
  EXPECT_EQ(out.report["prefill_size"], 0);
  EXPECT_GT(out.report["total_ops"].get<std::uint64_t>(), 1000u);
  EXPECT_EQ(out.report["insert_successes"], 0);
  EXPECT_GT(out.report["insert_attempts"].get<std::uint64_t>(), 0u);
}

TEST(Trial, RangeQueryThreadsRunOnlyRangeQueries) {
  Config c = small_config(2, 25, 25);
  c.ops.reset();
  c.duration_ms = 200;  // a duration: with --ops the update threads may finish before a
                        // descheduled range-query thread ever runs
  c.rq_threads = 1;
  c.rq_size = 64;
  c.latency_sample = 1;  // every operation: under load a starved thread may run only a few
  Trial t(c);
  SetWorkload<TestSet> w(t.context());
  const TrialOutcome out = run_trial(w, t.context());
  const Json& r = out.report;
  ASSERT_EQ(out.status, TrialStatus::ok) << r.dump(1);
  const auto rq_ops = r["rq_thread_ops"].get<std::uint64_t>();
  EXPECT_GT(rq_ops, 0u);
  EXPECT_EQ(r["range_query_attempts"].get<std::uint64_t>(), rq_ops) << "update threads have --rq 0";
  EXPECT_EQ(r["total_ops"].get<std::uint64_t>() + rq_ops,
            r["search_attempts"].get<std::uint64_t>() + r["insert_attempts"].get<std::uint64_t>() +
                r["delete_attempts"].get<std::uint64_t>() + rq_ops);
  EXPECT_GT(r["range_query_keys_returned"].get<std::uint64_t>(), 0u);
  // Every operation timed, each under its own type (the range-query threads' too).
  EXPECT_EQ(r.value("latency_range_query_samples", std::uint64_t{0}), rq_ops);
  for (const char* op : {"search", "insert", "delete"}) {
    const auto attempts = r[std::string(op) + "_attempts"].get<std::uint64_t>();
    EXPECT_EQ(r.value("latency_" + std::string(op) + "_samples", std::uint64_t{0}), attempts) << op;
    if (attempts) {
      EXPECT_LE(r["latency_" + std::string(op) + "_p50_ns"].get<double>(),
                r["latency_" + std::string(op) + "_p99_9_ns"].get<double>());
    }
  }
}

TEST(Trial, WithOpsTheUpdateThreadsRunExactlyThatManyAndStopTheRangeQueryThreads) {
  Config c = small_config(2, 25, 25);
  c.rq_threads = 1;  // runs until the update threads are done, however long that is
  Trial t(c);
  SetWorkload<TestSet> w(t.context());
  const TrialOutcome out = run_trial(w, t.context());
  ASSERT_EQ(out.status, TrialStatus::ok);
  EXPECT_EQ(out.report["total_ops"], 20000);
  EXPECT_EQ(out.report["thread_ops"][0].get<std::uint64_t>() + out.report["thread_ops"][1].get<std::uint64_t>(), 20000u);
}

TEST(Trial, SoftwareCountersAreReportedPerOperation) {
  Config c = small_config(1, 10, 10);
  Trial t(c);
  SetWorkload<TestSet> w(t.context());
  const Json r = run_trial(w, t.context()).report;
  ASSERT_TRUE(r["task_clock_ns"].is_number()) << r["task_clock_ns"];
  EXPECT_GT(r["task_clock_ns_per_op"].get<double>(), 0.0);
  // Hardware events are either counted or say so; never a made-up number.
  EXPECT_TRUE(r["cycles"].is_number() || r["cycles"] == "unavailable");
}

TEST(LatencyHistogram, BucketsTileTheLineAndPercentilesAreWithinTheirWidth) {
  for (std::uint64_t v : {0ull, 1ull, 15ull, 16ull, 17ull, 31ull, 32ull, 1000ull, 123456789ull, 1ull << 40}) {
    const int b = LatencyHistogram::bucket_of(v);
    EXPECT_LE(LatencyHistogram::lower_bound(b), v);
    EXPECT_GT(LatencyHistogram::upper_bound(b), v);
  }
  for (int b = 0; b + 1 < LatencyHistogram::bucket_count - 1; ++b)
    ASSERT_EQ(LatencyHistogram::upper_bound(b), LatencyHistogram::lower_bound(b + 1)) << b;
  LatencyHistogram h;
  EXPECT_FALSE(h.percentile(0.5).has_value());
  for (std::uint64_t v = 1; v <= 10000; ++v) h.record(v);
  EXPECT_NEAR(*h.percentile(0.5), 5000, 5000 / 16.0);
  EXPECT_NEAR(*h.percentile(0.99), 9900, 9900 / 16.0);
}

TEST(ThreadPlacement, CompactWrapsAndWarnsWhenOversubscribed) {
  Config c;
  c.threads = static_cast<int>(topology().cpus().size()) + 1;
  std::vector<std::string> warnings;
  const auto plan = plan_thread_cpus(c.team_setup(), topology(), warnings);
  ASSERT_EQ(plan.size(), std::size_t(c.threads));
  EXPECT_EQ(plan.front(), plan.back());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("oversubscribed"), std::string::npos);
}

TEST(ThreadPlacement, ListMustNameUsableCpusForEveryThread) {
  Config c;
  c.threads = 2;
  c.pin = PinMode::list;
  c.pin_cpus = {topology().cpus()[0].os_index};
  std::vector<std::string> warnings;
  EXPECT_THROW(plan_thread_cpus(c.team_setup(), topology(), warnings), std::invalid_argument);
  c.pin_cpus = {topology().cpus()[0].os_index, 100000};
  EXPECT_THROW(plan_thread_cpus(c.team_setup(), topology(), warnings), std::invalid_argument);
  c.pin_cpus = {topology().cpus()[0].os_index, topology().cpus()[0].os_index};
  EXPECT_EQ(plan_thread_cpus(c.team_setup(), topology(), warnings), c.pin_cpus);
}

std::string usage_error(std::vector<const char*> args) {
  args.insert(args.begin(), "cdsbench");
  auto r = parse_command_line(static_cast<int>(args.size()), args.data(), builtin_registry());
  auto* e = std::get_if<UsageError>(&r);
  return e ? e->message : "";
}

TEST(CommandLine, RejectsBadValuesNamingTheOption) {
  EXPECT_NE(usage_error({"--ds", "nope"}).find("--ds: unknown structure 'nope'"), std::string::npos);
  EXPECT_NE(usage_error({"--ds", "null", "--threads", "0"}).find("--threads"), std::string::npos);
  EXPECT_NE(usage_error({"--ds", "null", "--insert", "60", "--delete", "50"}).find("sum to 110"), std::string::npos);
  EXPECT_NE(usage_error({"--ds", "null", "--key-range", "0"}).find("--key-range"), std::string::npos);
  EXPECT_NE(usage_error({"--ds", "null", "--duration-ms", "5", "--ops", "5"}).find("not both"), std::string::npos);
  EXPECT_NE(usage_error({"--ds", "null", "--reclaimer", "rcu"}).find("allowed: none, ebr, hp, ibr"), std::string::npos);
#if CDSBENCH_TEST_VARIANTS_ONLY  // the sanitizer trees build `none` only where it is the default (registry.hpp)
  const std::string none_refused = usage_error({"--ds", "lazy_list", "--reclaimer", "none"});
  EXPECT_TRUE(none_refused.ends_with("allowed: ebr")) << none_refused;
#else
  EXPECT_NE(usage_error({"--ds", "lazy_list", "--reclaimer", "hp"}).find("allowed: ebr, none"), std::string::npos);
#endif
  EXPECT_NE(usage_error({"--ds", "null", "--malloc", "hoard"}).find("allowed: glibc, jemalloc, mimalloc, tcmalloc"),
            std::string::npos);
  EXPECT_EQ(usage_error({"--ds", "null", "--insert", "50", "--delete", "50"}), "");
}

// A (reclaimer, allocator) pair whose names both exist but that this build did not
// instantiate (sanitizer trees build the test variants only) is a usage error naming the
// pairs that exist, not an exception from deep inside the trial.
TEST(CommandLine, RefusesAVariantThatIsNotBuilt) {
  Registry registry;
  StructureEntry e = *builtin_registry().find("harris_michael_list");
  e.name = "partial_list";
  // hp and pool are both built, but not together (the same in every tree: only names are parsed).
  e.variants = {{"ebr", "system", true}, {"ebr", "pool", true}, {"hp", "system", true}};
  registry.add(e);
  std::vector<const char*> args{"cdsbench", "--ds", "partial_list", "--reclaimer", "hp", "--allocator", "pool"};
  auto r = parse_command_line(static_cast<int>(args.size()), args.data(), registry);
  const auto* err = std::get_if<UsageError>(&r);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->message.rfind("--reclaimer/--allocator: hp/pool is not built for structure 'partial_list'", 0), 0u)
      << err->message;
  EXPECT_NE(err->message.find("allowed: ebr/system,"), std::string::npos) << err->message;
  args[6] = "system";  // a pair that is built
  r = parse_command_line(static_cast<int>(args.size()), args.data(), registry);
  EXPECT_TRUE(std::holds_alternative<Config>(r));
}

// The named reclaimer sets are derived from each reclaimer's own property, and a structure's
// test variants are exactly what is_test_variant says of its variants.
static_assert(std::is_same_v<WholeOperationReclaimers, ReclaimerList<reclaim::EpochBased, reclaim::NoReclaim>>);
TEST(Registry, TestVariantsAreTheDefaultRowAndColumn) {
  const Registry registry = builtin_registry();
  for (const StructureEntry& e : registry.entries()) {
    ASSERT_FALSE(e.variants.empty()) << e.name;
    const Variant& d = e.default_variant();
    EXPECT_TRUE(d.test) << e.name;
    for (const Variant& v : e.variants) {
      EXPECT_EQ(v.test, is_test_variant(v.reclaimer, v.allocator, d.reclaimer, d.allocator)) << e.name;
      EXPECT_EQ(e.find_variant(v.reclaimer, v.allocator), &v) << e.name << " lists " << v.reclaimer << "/" << v.allocator << " twice";
    }
    EXPECT_EQ(e.kind == StructureKind::black_box, !e.method.empty() && !e.sequential.empty()) << e.name;
  }
  const StructureEntry& list = *registry.find("harris_michael_list");
#if CDSBENCH_TEST_VARIANTS_ONLY  // the system allocator only, and no `none`: it never frees (registry.hpp)
  EXPECT_EQ(list.reclaimers(), (std::vector<std::string>{"ebr", "hp", "ibr"}));
  EXPECT_EQ(list.variants.size(), 3u);
#else
  EXPECT_EQ(list.reclaimers(), (std::vector<std::string>{"ebr", "hp", "ibr", "none"}));
  EXPECT_EQ(list.variants.size(), 16u);  // 4 reclaimers x 4 allocation policies
#endif
}

TEST(CommandLine, DefaultsAreTheDocumentedOnes) {
  std::vector<const char*> args{"cdsbench", "--ds", "locked_std_set"};
  auto r = parse_command_line(static_cast<int>(args.size()), args.data(), builtin_registry());
  const Config& c = std::get<Config>(r);
  EXPECT_EQ(c.threads, 1);
  EXPECT_EQ(c.key_range, 1'000'000u);
  EXPECT_EQ(c.prefill, PrefillMode::steady);
  EXPECT_EQ(c.pin, PinMode::compact);
  EXPECT_EQ(c.prng, GeneratorKind::xoshiro256starstar);
  EXPECT_EQ(c.reclaimer, "immediate");
  EXPECT_FALSE(c.seed_given);
}

TEST(Report, FormatsNumbersExactlyAndReadably) {
  EXPECT_EQ(format_value(Json(std::uint64_t{18446744073709551615ull})), "18446744073709551615");
  EXPECT_EQ(format_value(Json(12.5)), "12.5");
  EXPECT_EQ(format_value(Json(3.0)), "3");
  EXPECT_EQ(format_value(Json(12345678.25)), "12345678.25");
  EXPECT_EQ(format_value(Json(0.0001234)), "0.0001234");
  EXPECT_EQ(format_value(Json(0.00206527133140672)), "0.00206527");  // a per-op rate keeps its digits
  EXPECT_EQ(format_value(Json(0.5)), "0.5");
  EXPECT_EQ(format_value(Json("unavailable")), "unavailable");
  EXPECT_EQ(format_value(Json(true)), "true");
}

}  // namespace harness_test
