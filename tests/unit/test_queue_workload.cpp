// The queue workload (bench/workloads/queue_workload.hpp): its item accounting, each of its
// validation checks catching the broken queue made for it, its modes' ends (split consumers
// drain, --items moves exactly that many items), and the measured loop's own-end hook.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/harness/trial_context.hpp"
#include "bench/registry/registry.hpp"
#include "bench/workloads/queue_workload.hpp"
#include "cdsbench/random/generators.hpp"
#include "support/broken_sets.hpp"

namespace queue_workload_test {

using namespace cdsb::bench;

const Registry& registry() {
  static const Registry r = cdsb::testing::registry_with_broken_sets();
  return r;
}

const cdsb::Topology& topology() {
  static const cdsb::Topology t;
  return t;
}

Config queue_config(const std::string& ds, QueueMode mode, std::uint32_t batch) {
  Config c;
  c.ds = ds;
  c.threads = 4;
  c.queue_mode = mode;
  c.producers = mode == QueueMode::split ? 2 : 0;
  c.batch = batch;
  c.items = 40'000;
  if (mode == QueueMode::random) {
    c.items.reset();
    c.ops = 40'000;
  }
  c.prefill_items = 500;
  c.pin = cdsb::bench::PinMode::none;
  c.seed = 3;
  return c;
}

TrialOutcome run(const Config& c) {
  const std::vector<int> cpus(c.total_threads(), -1);
  return registry().find(c.ds)->run_trial(TrialContext{c, topology(), cpus, 0, c.seed});
}

std::uint64_t item_of_producer(int p, std::uint64_t seq) { return QueueWorkloadCore::item_of(p, seq); }

std::uint64_t figure(const Json& j, const char* key) { return j.at(key).get<std::uint64_t>(); }

// Every item is accounted for: what was prefilled and enqueued was dequeued or is left.
void expect_accounted(const Json& r, std::uint64_t prefill) {
  EXPECT_EQ(figure(r, "prefill_items"), prefill);
  EXPECT_EQ(figure(r, "items_enqueued") + prefill, figure(r, "items_dequeued") + figure(r, "items_remaining")) << r.dump(1);
}

TEST(QueueWorkload, SplitModeMovesExactlyTheItemsAskedAndDrainsTheQueue) {
  for (const std::uint32_t batch : {1u, 20u}) {
    const TrialOutcome out = run(queue_config("michael_scott_queue", QueueMode::split, batch));
    const Json& r = out.report;
    ASSERT_EQ(out.status, TrialStatus::ok) << r.dump(1);
    EXPECT_EQ(figure(r, "items_enqueued"), 40'000u);
    EXPECT_EQ(figure(r, "items_remaining"), 0u);  // the consumers drained it all, prefill included
    expect_accounted(r, 500);
    // The producers only enqueue and the consumers only dequeue.
    const auto& ops = r.at("thread_ops");
    EXPECT_EQ(ops[0].get<std::uint64_t>() + ops[1].get<std::uint64_t>(), figure(r, "enqueue_attempts"));
    EXPECT_EQ(figure(r, "enqueue_attempts"), batch == 1 ? 40'000u : 2'000u);
    EXPECT_GT(r.at("throughput_items_per_s").get<double>(), 0.0);
  }
}

TEST(QueueWorkload, PairsModeAlternatesAndLeavesThePrefill) {
  const TrialOutcome out = run(queue_config("locked_ring_queue", QueueMode::pairs, 20));
  const Json& r = out.report;
  ASSERT_EQ(out.status, TrialStatus::ok) << r.dump(1);
  EXPECT_EQ(figure(r, "items_enqueued"), 40'000u);
  EXPECT_EQ(figure(r, "enqueue_attempts"), figure(r, "dequeue_attempts"));  // whole pairs
  // Each thread dequeues after its own enqueue, so no dequeue ever finds the queue empty and
  // the queue ends as it started: the prefill's size.
  EXPECT_EQ(figure(r, "dequeue_successes"), figure(r, "dequeue_attempts"));
  EXPECT_EQ(figure(r, "items_remaining"), 500u);
  expect_accounted(r, 500);
}

TEST(QueueWorkload, RandomModeDrawsBothOperations) {
  const TrialOutcome out = run(queue_config("michael_scott_queue", QueueMode::random, 1));
  const Json& r = out.report;
  ASSERT_EQ(out.status, TrialStatus::ok) << r.dump(1);
  const double enqueues = r.at("enqueue_attempts").get<double>(), dequeues = r.at("dequeue_attempts").get<double>();
  EXPECT_EQ(enqueues + dequeues, 40'000);
  EXPECT_NEAR(enqueues / (enqueues + dequeues), 0.5, 0.02);
  expect_accounted(r, 500);
}

std::vector<std::uint64_t> replay(const ItemLog& log) {
  std::vector<std::uint64_t> out;
  log.for_each([&](std::uint64_t item) { out.push_back(item); });
  return out;
}

// The log's run-length encoding gives back exactly what was appended: runs (consecutive items,
// across appends), their ends and restarts, values that look like its markers (top bits 10 and
// 11), the wrap from UINT64_MAX to 0, and random words (several blocks' worth).
TEST(QueueWorkload, ItemLogReplaysExactlyWhatWasAppended) {
  constexpr std::uint64_t top = std::uint64_t{1} << 63;
  std::vector<std::uint64_t> items{0, 1, 2, 3, 7, 8, 8, 9, 0, 0, 1, top - 1, top, top + 1, top + 2, top | top >> 1,
                                   (top | top >> 1) + 1, UINT64_MAX - 1, UINT64_MAX, 0, 1, 5};
  for (std::uint64_t i = 0; i < 200'000; ++i) items.push_back(item_of_producer(3, i));  // a long run: one word
  cdsb::SplitMix64 rng(11);
  for (int i = 0; i < 200'000; ++i) items.push_back(rng.next() >> (rng.next() & 1 ? 0 : 40));
  ItemLog log;
  for (std::size_t at = 0; at < items.size();) {  // appends of 1 to 64 items
    const std::size_t n = std::min<std::size_t>(items.size() - at, 1 + at % 64);
    log.append(items.data() + at, n);
    at += n;
  }
  EXPECT_EQ(replay(log), items);
  EXPECT_TRUE(replay(ItemLog{}).empty());
  // A run costs nothing while it lasts: a million of a producer's items, 20 at a time, are one
  // word in one block (a plain log: 8 MB).
  ItemLog run;
  std::vector<std::uint64_t> batch(20);
  for (std::uint64_t i = 0; i < 1'000'000; i += 20) {
    for (std::uint64_t k = 0; k < 20; ++k) batch[k] = item_of_producer(2, i + k);
    run.append(batch.data(), batch.size());
  }
  EXPECT_EQ(run.bytes(), 512u << 10);
  std::uint64_t expected = item_of_producer(2, 0), replayed = 0;
  run.for_each([&](std::uint64_t item) { replayed += item == expected++; });
  EXPECT_EQ(replayed, 1'000'000u);
}

// Each validation check has a broken queue that only it catches.
TEST(QueueWorkload, ValidationCatchesEveryBrokenQueue) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"broken_queue_loses", "was lost"},
      {"broken_queue_duplicates", "was dequeued twice"},
      {"broken_queue_reorders", "left their producer's FIFO order"}};
  for (const auto& [name, reason] : cases)
    for (const QueueMode mode : {QueueMode::pairs, QueueMode::split}) {
      const TrialOutcome out = run(queue_config(name, mode, 1));
      EXPECT_EQ(out.status, TrialStatus::validation_failed) << name;
      EXPECT_NE(out.report.value("validation_error", std::string()).find(reason), std::string::npos)
          << name << ": " << out.report.dump(1);
    }
  // Its faults are only answers (an empty dequeue of a non-empty queue): every item is still
  // accounted for, and only the linearizability checker can tell (test_lincheck.py).
  const TrialOutcome stale = run(queue_config("broken_queue_stale_empty", QueueMode::pairs, 1));
  EXPECT_EQ(stale.status, TrialStatus::ok) << stale.report.dump(1);
}

}  // namespace queue_workload_test
