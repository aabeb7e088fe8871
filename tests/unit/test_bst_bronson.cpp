// The Bronson et al. AVL tree (set/bst/bronson_avl.hpp) beyond the registry-wide correctness
// matrix: keys at both ends of the key type (the tree has no sentinel keys), sorted inserts
// that must come out balanced, deletes of nodes with 0, 1 and 2 children (routing nodes, their
// revival and their later unlinking), strict AVL balance after concurrent updates, and
// reclamation accounting: every node allocated is in the tree, in limbo or freed, and teardown
// frees them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/bronson_avl.hpp"
#include "unit/bst_test_support.hpp"

namespace bst_bronson_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using namespace cdsb::test_support;

template <class Tree>
class BronsonAvlTest : public ::testing::Test {
 protected:
  static reclaim::ReclaimOptions eager() { return {.eager = true}; }
};

using BronsonTrees = ::testing::Types<BronsonAvl<EpochBased<CountingAllocator>>, BronsonAvl<NoReclaim<CountingAllocator>>>;
TYPED_TEST_SUITE(BronsonAvlTest, BronsonTrees);

// The AVL bound the issue asks for: height <= 1.45 log2(n + 2).
double avl_bound(std::uint64_t n) { return 1.45 * std::log2(static_cast<double>(n) + 2.0); }

TYPED_TEST(BronsonAvlTest, EmptyTreeHasOnlyTheRootHolder) {
  TypeParam tree(1, this->eager());
  EXPECT_EQ(tree.node_count(), 1u);
  EXPECT_EQ(tree.height(), 0);
  EXPECT_FALSE(tree.contains(0, 1));
  EXPECT_FALSE(tree.erase(0, 1));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
}

// No sentinel keys: 0, 1 and the two largest keys are ordinary keys, in every erase order.
TYPED_TEST(BronsonAvlTest, KeysAtBothEndsOfTheKeyType) {
  using Key = typename TypeParam::key_type;
  constexpr Key top = std::numeric_limits<Key>::max();
  const std::vector<std::vector<Key>> orders{{0, 1, top - 1, top}, {top, top - 1, 1, 0}, {1, top, 0, top - 1}};
  for (const auto& order : orders) check_insert_then_erase_in_order<TypeParam>(this->eager(), {top, 0, top - 1, 1}, order);
}

// Shape 4(2(1,3), 6(5,7)): no rotation. Deletes of a leaf, of a node with one child, and of
// nodes with two children (which stay as routing nodes until a repair can unlink them).
TYPED_TEST(BronsonAvlTest, DeletesOfNodesWithZeroOneAndTwoChildren) {
  TypeParam tree(1, this->eager());
  for (std::uint64_t k : {4, 2, 6, 1, 3, 5, 7}) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(figure(tree.stats(), "rotations"), 0u);
  EXPECT_EQ(tree.height(), 3);
  EXPECT_EQ(tree.node_count(), 8u);
  EXPECT_EQ(tree.check_invariants(), "");

  EXPECT_TRUE(tree.erase(0, 1));  // a leaf: unlinked at once
  EXPECT_EQ(tree.node_count(), 7u);
  EXPECT_TRUE(tree.erase(0, 2));  // one child (3): unlinked, 3 moves up
  EXPECT_EQ(tree.node_count(), 6u);
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_TRUE(tree.erase(0, 6));  // two children: a routing node
  EXPECT_EQ(tree.node_count(), 6u);
  EXPECT_FALSE(tree.contains(0, 6));
  EXPECT_FALSE(tree.erase(0, 6));
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{3, 4, 5, 7}));
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(figure(tree.stats(), "routing_nodes_unlinked"), 2u);  // 1 and 2

  EXPECT_TRUE(tree.erase(0, 4));  // the root, two children: routing too
  EXPECT_EQ(tree.node_count(), 6u);
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_TRUE(tree.erase(0, 5));  // leaves routing node 6 with one child: the repair unlinks 6
  EXPECT_EQ(tree.node_count(), 4u);
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{3, 7}));
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_TRUE(tree.erase(0, 3));  // and routing root 4 with one child
  EXPECT_EQ(tree.node_count(), 2u);
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{7}));
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_TRUE(tree.erase(0, 7));
  EXPECT_EQ(tree.node_count(), 1u);
  EXPECT_EQ(tree.check_invariants(), "");
}

// An insert of a key whose routing node is still in the tree revives that node in place.
TYPED_TEST(BronsonAvlTest, InsertRevivesARoutingNode) {
  TypeParam tree(1, this->eager());
  for (std::uint64_t k : {2, 1, 3}) ASSERT_TRUE(tree.insert(0, k, k));
  ASSERT_TRUE(tree.erase(0, 2));
  EXPECT_EQ(tree.node_count(), 4u);
  const std::uint64_t allocated = figure(tree.stats(), "nodes_allocated");
  EXPECT_TRUE(tree.insert(0, 2, 20));
  EXPECT_FALSE(tree.insert(0, 2, 21));
  EXPECT_TRUE(tree.contains(0, 2));
  EXPECT_EQ(tree.node_count(), 4u);
  EXPECT_EQ(figure(tree.stats(), "routing_nodes_revived"), 1u);
  EXPECT_EQ(figure(tree.stats(), "nodes_allocated"), allocated);  // no new node: 2's is back
  EXPECT_EQ(tree.check_invariants(), "");
}

// Sorted inserts (the degenerate case of an unbalanced tree) come out balanced; the rotations
// are counted; sorted deletes from both ends keep the tree balanced on the way down.
TYPED_TEST(BronsonAvlTest, SortedInsertsAreBalanced) {
  constexpr std::uint64_t n = 100'000;
  TypeParam tree(1, this->eager());
  for (std::uint64_t k = 1; k <= n; ++k) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_LE(tree.height(), avl_bound(n)) << "height " << tree.height();
  EXPECT_EQ(tree.height(), 17);  // a sorted AVL insertion gives a perfect tree of 2^17 - 1 >= n
  EXPECT_GE(figure(tree.stats(), "rotations"), n - 20) << "one rotation per insert, almost";
  EXPECT_EQ(figure(tree.stats(), "double_rotations"), 0u);
  const auto keys = keys_of(tree);
  ASSERT_EQ(keys.size(), n);
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(keys[i], i + 1);
  // Search depths (the benchmark's shape figure) count the root holder, then the path: the
  // root alone at depth 2, the deepest keys at 1 + the height (no routing node yet).
  const auto depths = depths_of(tree);
  ASSERT_EQ(depths.size(), n);
  std::size_t deepest = 0, at_root = 0;
  for (const auto& [k, depth] : depths) {
    deepest = std::max(deepest, depth);
    at_root += depth == 2;
  }
  EXPECT_EQ(deepest, 18u);
  EXPECT_EQ(at_root, 1u);

  // Delete the lower half in order, then the upper half from the top down.
  for (std::uint64_t k = 1; k <= n / 2; ++k) ASSERT_TRUE(tree.erase(0, k));
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_LE(tree.height(), avl_bound(n / 2));
  for (std::uint64_t k = n; k > n / 2; --k) {
    ASSERT_TRUE(tree.erase(0, k));
    if (k % 9973 == 0) {
      ASSERT_EQ(tree.check_invariants(), "") << "after erasing " << k;
    }
  }
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.node_count(), 1u);
}

TYPED_TEST(BronsonAvlTest, DescendingInsertsAreBalanced) {
  constexpr std::uint64_t n = 20'000;
  TypeParam tree(1, this->eager());
  for (std::uint64_t k = n; k >= 1; --k) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_LE(tree.height(), avl_bound(n));
  // Zig-zag inserts need double rotations: 1, n, 2, n-1, ... into a fresh tree.
  TypeParam zigzag(1, this->eager());
  for (std::uint64_t i = 0; i < n / 2; ++i) {
    ASSERT_TRUE(zigzag.insert(0, 1 + i, i));
    ASSERT_TRUE(zigzag.insert(0, n - i, i));
  }
  EXPECT_EQ(zigzag.check_invariants(), "");
  EXPECT_LE(zigzag.height(), avl_bound(n));
}

// Random keys with interleaved deletes (two-children deletes leave routing nodes, which later
// deletes and rotations must clean up), checked after every phase.
TYPED_TEST(BronsonAvlTest, RandomUpdatesKeepTheTreeStrictlyBalanced) {
  TypeParam tree(1, this->eager());
  Xoshiro256StarStar rng;
  rng.seed(42);
  std::vector<bool> in(4096, false);
  for (int phase = 0; phase < 20; ++phase) {
    for (int i = 0; i < 5000; ++i) {
      const std::uint64_t k = rng.next() % in.size();
      if (rng.next() % 2) {
        ASSERT_EQ(tree.insert(0, k, k), !in[k]);
        in[k] = true;
      } else {
        ASSERT_EQ(tree.erase(0, k), in[k]);
        in[k] = false;
      }
    }
    ASSERT_EQ(tree.check_invariants(), "") << "phase " << phase;
    const std::uint64_t size = static_cast<std::uint64_t>(std::count(in.begin(), in.end(), true));
    ASSERT_EQ(keys_of(tree).size(), size);
    // Every key has a search depth, none deeper than the tree (routing nodes count).
    const auto depths = depths_of(tree);
    ASSERT_EQ(depths.size(), size);
    for (const auto& [k, depth] : depths) ASSERT_LE(depth, 1 + static_cast<std::size_t>(tree.height())) << "key " << k;
  }
}

// Threads on a tiny key range (heavy conflicts: routing nodes, unlinks and rotations racing
// each other) with eager reclamation, then on a larger one (deep rotations). Besides the
// shared checks (the set, the tree, reclamation accounting, teardown): strict balance, every
// retired node one that was unlinked (once), and rotations where the range is large enough.
template <class Tree, class NextOp = decltype(&random_op)>
void concurrent_updates(const ConcurrentUpdates& w, ReclaimOptions options, NextOp next_op = &random_op) {
  const auto avl_checks = [&](const Tree& tree, const StatsReport& stats) {
    EXPECT_LE(tree.height(), avl_bound(tree.node_count()));
    EXPECT_EQ(figure(stats, "nodes_retired"), figure(stats, "routing_nodes_unlinked")) << "every unlinked node retired once";
    if (w.key_range > 100) {
      EXPECT_GT(figure(stats, "rotations"), 100u);
    }
  };
  run_concurrent_updates_and_check<Tree>(options, w, avl_checks, next_op);
}

TYPED_TEST(BronsonAvlTest, ConcurrentUpdatesOnATinyRangeRetireEveryRemovedNode) {
  concurrent_updates<TypeParam>({.key_range = 16, .ops_per_thread = 40'000}, this->eager());
}

TYPED_TEST(BronsonAvlTest, ConcurrentUpdatesOnALargerRangeStayBalanced) {
  for (int round = 0; round < 3; ++round) concurrent_updates<TypeParam>({.key_range = 2'000, .ops_per_thread = 40'000}, this->eager());
}

// The threads insert interleaved ascending keys (on the first pass every insert lands at the
// right edge, where rotations keep moving the nodes that searches are passing; later passes
// find them present), then erase them in ascending order (rotations at the left edge); a
// quarter of the operations are lookups. A search that followed a child without re-validating
// its parent's version (step 4 of the header's search) links keys out of order or twice, or
// misses them: with that check removed, 4 of 12 runs of this test failed on a 2-core machine
// (check_invariants: a key out of order), while the random-key tests above never did (5 runs).
Op sorted_op(Xoshiro256StarStar& rng, int t, int i, const ConcurrentUpdates& w) {
  const auto n = static_cast<std::uint64_t>(i);
  const std::uint64_t k = 1 + (n * static_cast<std::uint64_t>(w.threads) + static_cast<std::uint64_t>(t)) % w.key_range;
  const OpKind update = (n / w.key_range) % 2 ? OpKind::erase : OpKind::insert;
  return {rng.next() % 4 == 0 ? OpKind::contains : update, k};
}

TYPED_TEST(BronsonAvlTest, ConcurrentSortedUpdatesUnderRotations) {
  for (int round = 0; round < 8; ++round)
    concurrent_updates<TypeParam>({.key_range = 20'000, .ops_per_thread = 30'000}, this->eager(), &sorted_op);
}

// The size the header states (empty NodeBase for none and ebr).
TEST(BronsonAvlLayout, NodeSize) { EXPECT_EQ(BronsonAvl<EpochBased<SystemAllocator>>::node_bytes, 56u); }

}  // namespace bst_bronson_test
