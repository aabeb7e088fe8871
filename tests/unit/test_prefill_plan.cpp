// Steady prefill's plan (bench/workloads/prefill_plan.hpp): which keys, in which order, and
// what that order does to the shape of a BST next to inserting the same keys in arrival order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "bench/workloads/prefill_plan.hpp"

namespace prefill_plan_test {

using cdsb::bench::PrefillPlan;

PrefillPlan plan_of(std::uint64_t range, std::uint64_t target, std::uint64_t seed) {
  return PrefillPlan(range, target, seed, [](std::uint64_t) { return true; });
}

// The mean depth of the keys in an unbalanced sequential BST built by inserting them in order.
double mean_depth(const std::vector<std::uint64_t>& order) {
  struct Node {
    std::uint64_t key;
    Node *left, *right;
  };
  std::vector<Node> nodes;
  nodes.reserve(order.size());
  Node* root = nullptr;
  double sum = 0;
  for (const auto k : order) {
    Node** link = &root;
    std::size_t depth = 0;
    for (; *link; ++depth) link = k < (*link)->key ? &(*link)->left : &(*link)->right;
    *link = &nodes.emplace_back(Node{k, nullptr, nullptr});
    sum += static_cast<double>(depth);
  }
  return sum / static_cast<double>(order.size());
}

TEST(PrefillPlan, TakesExactlyTheKeysThatArriveBeforeTheTarget) {
  const std::uint64_t range = 50'000, target = 20'000;
  const PrefillPlan p = plan_of(range, target, 3);
  ASSERT_TRUE(p.complete());
  const std::set<std::uint64_t> keys(p.keys().begin(), p.keys().end());
  EXPECT_EQ(keys.size(), p.keys().size()) << "a key is planned twice";
  for (std::uint64_t k = 1; k <= range; ++k)
    ASSERT_EQ(keys.count(k), p.place_of(p.arrival(k)) < target ? 1u : 0u) << "key " << k;
  // Each key is in with probability target / range: the count is Binomial(range, 0.4).
  const double sd = std::sqrt(range * 0.4 * 0.6);
  EXPECT_LT(std::abs(static_cast<double>(keys.size()) - target), 5 * sd);
  EXPECT_NE(plan_of(range, target, 4).keys(), p.keys()) << "another seed must choose other keys";
}

TEST(PrefillPlan, ChunksCoverTheRoundsInOrder) {
  const PrefillPlan p = plan_of(200'000, 100'000, 9);
  ASSERT_TRUE(p.complete());
  const auto& keys = p.keys();
  const auto& chunks = p.chunks();
  ASSERT_FALSE(chunks.empty());
  // Round 0 is the first chunk, in arrival order; the first_round earliest arrivals.
  EXPECT_EQ(chunks[0].chunks_before, 0u);
  for (std::size_t i = chunks[0].begin + 1; i < chunks[0].end; ++i)
    EXPECT_LT(p.arrival(keys[i - 1]), p.arrival(keys[i]));
  std::size_t next = 0, round_first_chunk = 0;
  std::uint64_t latest_arrival_of_earlier_rounds = 0, latest_arrival_of_this_round = 0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    ASSERT_EQ(chunks[c].begin, next) << "chunk " << c << " leaves a gap or overlaps";
    ASSERT_LT(chunks[c].begin, chunks[c].end);
    next = chunks[c].end;
    if (chunks[c].chunks_before != round_first_chunk) {  // a new round
      ASSERT_EQ(chunks[c].chunks_before, c) << "a round must wait for every chunk before it";
      round_first_chunk = c;
      latest_arrival_of_earlier_rounds = latest_arrival_of_this_round;
    }
    for (std::size_t i = chunks[c].begin; i < chunks[c].end; ++i) {
      // Every key of a round arrives after every key of the earlier rounds...
      ASSERT_GE(p.arrival(keys[i]), latest_arrival_of_earlier_rounds);
      latest_arrival_of_this_round = std::max(latest_arrival_of_this_round, p.arrival(keys[i]));
      // ...and, after round 0, a round is in key order.
      if (c > 0 && i > chunks[round_first_chunk].begin) {
        ASSERT_LT(keys[i - 1], keys[i]);
      }
    }
    if (c > 0) {
      EXPECT_LE(chunks[c].end - chunks[c].begin, PrefillPlan::chunk_keys);
    }
  }
  EXPECT_EQ(next, keys.size());
  EXPECT_GT(p.rounds(), 50u) << "rounds add an eighth each: about log(n / 64) / log(9 / 8) of them";
}

// The claim of the plan: its order builds the BST that arrival order builds (a random BST), but
// for the few keys a round puts into the same gap, which then take key order. Measured over 16
// seeds at 2^16 keys: the plan's tree is deeper by 0.02 of a level on average (rms 0.06), where
// a random BST's mean depth itself varies by about 0.65 between trees of one size.
TEST(PrefillPlan, BuildsTheShapeOfArrivalOrder) {
  const int seeds = 16;
  double sum = 0;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const PrefillPlan p = plan_of(1 << 17, 1 << 16, seed);
    std::vector<std::uint64_t> planned;
    for (const auto& c : p.chunks())
      for (std::size_t i = c.begin; i < c.end; ++i) planned.push_back(p.keys()[i]);
    std::vector<std::uint64_t> arrival_order = planned;
    std::sort(arrival_order.begin(), arrival_order.end(),
              [&](std::uint64_t x, std::uint64_t y) { return p.arrival(x) < p.arrival(y); });
    const double by_plan = mean_depth(planned), by_arrival = mean_depth(arrival_order);
    EXPECT_NEAR(by_plan, by_arrival, 0.25) << "seed " << seed;
    sum += by_plan - by_arrival;
    // And arrival order builds a random BST: 2 (1 + 1/n) H_n - 4 levels on average.
    const double n = static_cast<double>(planned.size());
    const double expected = 2 * (1 + 1 / n) * (std::log(n) + 0.5772156649 + 1 / (2 * n)) - 4;
    EXPECT_NEAR(by_arrival, expected, 4 * 0.65) << "seed " << seed;
  }
  EXPECT_NEAR(sum / seeds, 0, 0.06) << "the plan's order must not make trees deeper or shallower";
}

TEST(PrefillPlan, EdgeSizes) {
  EXPECT_TRUE(plan_of(100, 0, 1).complete());
  EXPECT_TRUE(plan_of(100, 0, 1).keys().empty());
  const PrefillPlan all = plan_of(100, 100, 1);  // every key arrives before the range's end
  EXPECT_EQ(all.keys().size(), 100u);
  const PrefillPlan one = plan_of(1, 1, 1);
  ASSERT_EQ(one.keys().size(), 1u);
  EXPECT_EQ(one.keys()[0], 1u);
}

TEST(PrefillPlan, StopsWhenToldAndSaysSo) {
  std::uint64_t asked = 0;
  const PrefillPlan p(1 << 20, 1 << 19, 1, [&](std::uint64_t) { return ++asked < 3; });
  EXPECT_FALSE(p.complete());
  EXPECT_EQ(asked, 3u) << "the scan asks every 2^16 keys";
}

}  // namespace prefill_plan_test
