// The wait-free queue (include/cdsbench/queue/wait_free_queue.hpp) with tiny segments and one
// fast-path try, so that its slow paths, its helping and its segment reclamation run all the
// time: exact accounting and per-producer order under threads, segments freed as the queue
// moves on, and the slow paths' requests completed and committed in order.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "cdsbench/queue/wait_free_queue.hpp"
#include "support/queue_exchange.hpp"
#include "support/stats_figures.hpp"

namespace wait_free_queue_test {

using namespace cdsb;
using cdsb::testing::exchange;
using cdsb::testing::figure;

std::vector<std::uint64_t> drain(auto& q) {
  std::vector<std::uint64_t> out;
  while (const auto v = q.dequeue(0)) out.push_back(*v);
  return out;
}

TEST(WaitFreeQueue, ItemsInOrderAcrossManySegmentsWhichAreFreedBehindTheHead) {
  WaitFreeQueue<1> q(1);  // segments of 2 cells
  const std::size_t one_segment = q.memory_bytes();
  std::vector<std::uint64_t> want;
  for (std::uint64_t v = 0; v < 100; ++v) {
    q.enqueue(0, v);
    want.push_back(v);
  }
  std::vector<std::uint64_t> listed;
  q.for_each_item([&](std::uint64_t v) { listed.push_back(v); });
  EXPECT_EQ(listed, want);
  EXPECT_GE(q.memory_bytes(), 50 * q.segment_bytes);
  EXPECT_EQ(drain(q), want);
  EXPECT_EQ(q.check_invariants(), "");
  // 50 segments passed; all but the cleanup lag's and the head's were freed.
  EXPECT_GE(figure(q.stats(), "segments_freed"), 45u);
  EXPECT_LE(q.memory_bytes(), one_segment + 5 * q.segment_bytes);
  EXPECT_EQ(figure(q.stats(), "slow_enqueues"), 0u);
}

// An empty dequeue marks its cell unusable, so the enqueue that draws that index next fails
// there: with one fast try it publishes a request and claims a later cell, and the value comes
// out in order all the same.
TEST(WaitFreeQueue, AnEnqueueAfterEmptyDequeuesTakesItsSlowPathAndStaysInOrder) {
  WaitFreeQueue<2, 1> q(2);
  for (std::uint64_t round = 0; round < 200; ++round) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(q.dequeue(1), std::nullopt);
    q.enqueue(0, 2 * round);
    q.enqueue(0, 2 * round + 1);
    EXPECT_EQ(q.dequeue(1), 2 * round);
    EXPECT_EQ(q.dequeue(1), 2 * round + 1);
  }
  EXPECT_GE(figure(q.stats(), "slow_enqueues"), 200u);
  EXPECT_EQ(q.check_invariants(), "");
}

// Every thread enqueues then dequeues: each dequeue finds a value or an empty queue, and no
// item is lost or doubled; the dequeuers race the enqueuers for the same cells all the time.
template <class Q>
void pairs(int threads, std::uint64_t per_thread) {
  Q q(threads);
  std::vector<std::vector<std::uint64_t>> got(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < per_thread; ++i) {
        q.enqueue(t, (std::uint64_t(t) << 32) | i);
        if (const auto v = q.dequeue(t)) got[t].push_back(*v);
      }
    });
  for (auto& w : workers) w.join();
  std::set<std::uint64_t> seen;
  std::size_t total = 0;
  for (const auto& items : got) {
    for (const std::uint64_t v : items) seen.insert(v);
    total += items.size();
  }
  for (const std::uint64_t v : drain(q)) {
    seen.insert(v);
    ++total;
  }
  EXPECT_EQ(total, threads * per_thread);
  EXPECT_EQ(seen.size(), total) << "an item dequeued twice";
  EXPECT_EQ(q.check_invariants(), "");
}

template <class Q>
class WaitFreeQueueThreads : public ::testing::Test {};
using Shapes = ::testing::Types<WaitFreeQueue<1, 1>, WaitFreeQueue<2, 1>, WaitFreeQueue<4, 2>, WaitFreeQueue<10, 10>>;
TYPED_TEST_SUITE(WaitFreeQueueThreads, Shapes);

// P producers, C consumers (support/queue_exchange.hpp), and the segments freed as it went.
TYPED_TEST(WaitFreeQueueThreads, EveryItemOnceInProducerOrder) {
  const auto freed_some = [](const TypeParam& q) { EXPECT_GT(figure(q.stats(), "segments_freed"), 0u); };
  exchange<TypeParam>(2, 2, 20'000, freed_some);
  exchange<TypeParam>(3, 1, 10'000, freed_some);
  exchange<TypeParam>(1, 3, 30'000, freed_some);
}

TYPED_TEST(WaitFreeQueueThreads, PairsLoseAndDoubleNothing) { pairs<TypeParam>(4, 20'000); }

}  // namespace wait_free_queue_test
