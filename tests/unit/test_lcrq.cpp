// LCRQ (include/cdsbench/queue/lcrq.hpp) with tiny rings, so that the states its correctness
// rests on happen all the time: rings closing when full or when an enqueue starves, a closed
// ring's late enqueues, dequeuers moving to the next ring and retiring the old one, tail
// fixed after dequeuers overshoot an empty ring. Exact accounting and per-producer order under
// threads, with every reclaimer at eager reclamation.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cdsbench/platform/dwcas.hpp"
#include "cdsbench/queue/lcrq.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "support/queue_exchange.hpp"
#include "support/stats_figures.hpp"

namespace lcrq_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::exchange;
using cdsb::testing::figure;

TEST(Dwcas, SwapsBothWordsOrNeitherAndReportsTheCurrentOnes) {
  ASSERT_TRUE(dwcas_available());  // every x86-64 CPU this project runs on has cmpxchg16b
  DoubleWord w;
  w.lo.store(1);
  w.hi.store(2);
  std::uint64_t lo = 1, hi = 3;  // hi differs: no swap, and the current words come back
  EXPECT_FALSE(dwcas(w, lo, hi, 7, 8));
  EXPECT_EQ(lo, 1u);
  EXPECT_EQ(hi, 2u);
  EXPECT_EQ(w.lo.load(), 1u);
  EXPECT_TRUE(dwcas(w, lo, hi, 7, 8));
  EXPECT_EQ(w.lo.load(), 7u);
  EXPECT_EQ(w.hi.load(), 8u);
}

std::vector<std::uint64_t> drain(auto& q) {
  std::vector<std::uint64_t> out;
  while (const auto v = q.dequeue(0)) out.push_back(*v);
  return out;
}

TEST(Lcrq, ItemsOutliveTheirRingInOrderAcrossManyRings) {
  Lcrq<EpochBased<>, 2> q(1, ReclaimOptions{.eager = true});  // rings of 4 cells
  std::vector<std::uint64_t> want;
  for (std::uint64_t v = 1; v <= 50; ++v) {
    q.enqueue(0, v);
    want.push_back(v);
  }
  EXPECT_EQ(q.check_invariants(), "");
  std::vector<std::uint64_t> listed;
  q.for_each_item([&](std::uint64_t v) { listed.push_back(v); });
  EXPECT_EQ(listed, want);
  // 50 items in rings of 4: a ring closes when full, and the next one starts with its item.
  EXPECT_GE(figure(q.stats(), "rings_closed"), 50u / 4 - 1);
  EXPECT_GE(q.memory_bytes(), 13 * (q.ring_bytes - 1));
  EXPECT_EQ(drain(q), want);
  EXPECT_EQ(q.dequeue(0), std::nullopt);
  EXPECT_EQ(q.check_invariants(), "");
  // The rings left behind were retired.
  EXPECT_GE(figure(q.stats(), "nodes_retired"), 12u);
}

TEST(Lcrq, AnEmptyRingsOvershotTailIsFixedSoEnqueuesLandAfterIt) {
  Lcrq<HazardPointers<>, 3> q(1, ReclaimOptions{.eager = true});
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 5; ++i) EXPECT_EQ(q.dequeue(0), std::nullopt);  // head passes tail each time
    q.enqueue(0, 2 * round + 1);
    q.enqueue(0, 2 * round + 2);
    EXPECT_EQ(q.dequeue(0), 2u * round + 1);
    EXPECT_EQ(q.dequeue(0), 2u * round + 2);
  }
  EXPECT_EQ(q.check_invariants(), "");
}

template <class Q>
class LcrqThreads : public ::testing::Test {};
using TinyRings = ::testing::Types<Lcrq<EpochBased<>, 1>, Lcrq<HazardPointers<>, 1>, Lcrq<IntervalBased<>, 2>,
                                   Lcrq<NoReclaim<>, 3>, Lcrq<HazardPointers<>, 12>>;
TYPED_TEST_SUITE(LcrqThreads, TinyRings);

TYPED_TEST(LcrqThreads, EveryItemOnceInProducerOrder) {
  exchange<TypeParam>(2, 2, 20'000);
  exchange<TypeParam>(3, 1, 10'000);
  exchange<TypeParam>(1, 3, 30'000);
}

}  // namespace lcrq_test
