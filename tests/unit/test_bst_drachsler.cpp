// The logical-ordering tree (set/bst/drachsler.hpp) beyond the registry-wide correctness
// matrix: keys next to both sentinels, sorted (degenerate) inserts and deletes, removals of
// nodes with zero, one and two children (checked against the exact tree layout: a node with
// two children is replaced by its successor), lookups that must never miss a key that stays
// present while the tree is rebuilt around it, and reclamation accounting (every node ever
// allocated is in the tree, in limbo or freed; teardown frees all). The windows of its
// correctness argument are scripted in tests/scripted/test_drachsler_scripted.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/drachsler.hpp"
#include "unit/bst_test_support.hpp"

namespace bst_drachsler_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using namespace cdsb::test_support;

template <class Tree>
class DrachslerBstTest : public ::testing::Test {
 protected:
  static reclaim::ReclaimOptions eager() { return {.eager = true}; }
};

using DrachslerTrees = ::testing::Types<DrachslerBst<EpochBased<CountingAllocator>>, DrachslerBst<NoReclaim<CountingAllocator>>>;
TYPED_TEST_SUITE(DrachslerBstTest, DrachslerTrees);

TYPED_TEST(DrachslerBstTest, EmptyTreeHasOnlySentinels) {
  TypeParam tree(1, this->eager());
  EXPECT_EQ(tree.node_count(), 2u);  // Head and Root
  EXPECT_EQ(tree.height(), 0u);
  EXPECT_EQ(tree.shape(), ".");
  for (auto k : {TypeParam::min_key, TypeParam::max_key}) {
    EXPECT_FALSE(tree.contains(0, k));
    EXPECT_FALSE(tree.erase(0, k));
  }
  EXPECT_FALSE(tree.contains(0, 0));  // the sentinels' keys are never user keys
  EXPECT_FALSE(tree.contains(0, TypeParam::max_key + 1));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
}

// min_key and max_key sit next to Head and Root in the list and in the tree (the first
// insert goes below Root; a key below every other one is placed as its successor's left
// child, never as Head's child), erased in every order.
TYPED_TEST(DrachslerBstTest, KeysNextToTheSentinels) {
  using Key = typename TypeParam::key_type;
  const Key lo = TypeParam::min_key, hi = TypeParam::max_key;
  const std::vector<std::vector<Key>> insert_orders{{lo, hi, lo + 1, hi - 1}, {hi, lo, hi - 1, lo + 1}, {lo + 1, hi - 1, lo, hi}};
  const std::vector<std::vector<Key>> erase_orders{{lo, hi, lo + 1, hi - 1}, {hi - 1, lo + 1, hi, lo}, {lo + 1, lo, hi, hi - 1}};
  for (const auto& inserts : insert_orders)
    for (const auto& erases : erase_orders) check_insert_then_erase_in_order<TypeParam>(this->eager(), inserts, erases);
}

// Sorted inserts make the tree a path (height = size: the unbalanced tree of the paper);
// erasing from both ends and the middle exercises every removal kind on it.
TYPED_TEST(DrachslerBstTest, SortedInsertsAndDeletes) {
  constexpr std::uint64_t n = 1'500;
  TypeParam tree(1, this->eager());
  for (std::uint64_t k = 1; k <= n; ++k) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(tree.height(), n);
  for (std::uint64_t k = 2 * n; k > n; --k) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(tree.height(), 2 * n);  // 1 .. n, then 2n and down to n+1 to its left
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.size(), 2 * n);
  for (std::uint64_t k = 1; k <= 2 * n; ++k) ASSERT_TRUE(tree.contains(0, k)) << k;
  for (std::uint64_t k = 1; k <= 2 * n; k += 2) ASSERT_TRUE(tree.erase(0, k));
  EXPECT_EQ(tree.check_invariants(), "");
  for (std::uint64_t k = 1; k <= 2 * n; ++k) ASSERT_EQ(tree.contains(0, k), k % 2 == 0) << k;
  for (std::uint64_t k = 2 * n; k >= 2; k -= 2) ASSERT_TRUE(tree.erase(0, k));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.node_count(), 2u);
}

// Removals against the exact layout: a leaf goes; a node with one child is replaced by it;
// a node with two children is replaced by its successor, moved up either from right below
// (the successor is its right child and keeps its own right subtree) or from deeper (its
// place goes to its right subtree).
TYPED_TEST(DrachslerBstTest, RemovalOfNodesWithZeroOneAndTwoChildren) {
  TypeParam tree(1, this->eager());
  for (int k : {50, 30, 70, 20, 40, 60, 80, 35, 45, 65}) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(tree.shape(), "(((. 20 .) 30 ((. 35 .) 40 (. 45 .))) 50 ((. 60 (. 65 .)) 70 (. 80 .)))");
  struct Step {
    int key;
    const char* shape;
  };
  const std::vector<Step> steps{
      {20, "((. 30 ((. 35 .) 40 (. 45 .))) 50 ((. 60 (. 65 .)) 70 (. 80 .)))"},  // a leaf
      {60, "((. 30 ((. 35 .) 40 (. 45 .))) 50 ((. 65 .) 70 (. 80 .)))"},         // its right child moves up
      {40, "((. 30 ((. 35 .) 45 .)) 50 ((. 65 .) 70 (. 80 .)))"},                // two: successor = right child
      {30, "(((. 35 .) 45 .) 50 ((. 65 .) 70 (. 80 .)))"},                       // one: right child
      {45, "((. 35 .) 50 ((. 65 .) 70 (. 80 .)))"},                              // one: left child
      {50, "((. 35 .) 65 (. 70 (. 80 .)))"},                                     // two: successor from deeper
      {65, "((. 35 .) 70 (. 80 .))"},                                            // two: successor = right child
      {70, "((. 35 .) 80 .)"},
      {80, "(. 35 .)"},
      {35, "."},
  };
  for (const Step& step : steps) {
    ASSERT_TRUE(tree.erase(0, step.key)) << step.key;
    EXPECT_EQ(tree.shape(), step.shape) << "after erasing " << step.key;
    EXPECT_EQ(tree.check_invariants(), "") << "after erasing " << step.key;
    EXPECT_FALSE(tree.contains(0, step.key));
  }
  // The successor comes from deeper and has a right child of its own, which takes its place.
  for (int k : {50, 30, 70, 60, 65, 62}) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(tree.shape(), "((. 30 .) 50 ((. 60 ((. 62 .) 65 .)) 70 .))");
  ASSERT_TRUE(tree.erase(0, 50));
  EXPECT_EQ(tree.shape(), "((. 30 .) 60 (((. 62 .) 65 .) 70 .))");
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{30, 60, 62, 65, 70}));
}

// Random single-threaded updates against std::set, the invariants checked as we go: many
// shapes, many relocations.
TYPED_TEST(DrachslerBstTest, SequentialDifferential) {
  TypeParam tree(1, this->eager());
  check_against_std_set(tree, 20'000, 97);
  EXPECT_EQ(tree.node_count(), keys_of(tree).size() + 2);  // and Head and Root
}

// Each key's search depth (the benchmark's shape figure) is its depth in a sequential
// unbalanced tree of the same updates (two-child erasures take the successor, Hibbard's
// way), one below the sentinel.
TYPED_TEST(DrachslerBstTest, SearchDepthsMatchASequentialTree) {
  TypeParam tree(1, this->eager());
  check_search_depths(tree, ReferenceBst::Kind::internal, 1);
}

// Four threads on 16 keys (the helper's defaults) with eager reclamation: the succ-lock gaps
// and the tree locks are fought over, relocations are frequent.
TYPED_TEST(DrachslerBstTest, ConcurrentUpdatesRetireEveryRemovedNode) {
  run_concurrent_updates_and_check<TypeParam>(this->eager(), {.seed = 2000});
}

// Lookups while the tree is rebuilt around them: keys 4i stay present throughout, keys
// 4i+3 are never inserted, keys 4i+1 and 4i+2 are inserted and erased at random (so nodes around
// the stable ones are removed with two children and their successors relocated, and walks
// end on removed nodes). A lookup must find every stable key and no absent one, however
// its tree walk was disturbed: the settle along pred/succ must repair it.
TYPED_TEST(DrachslerBstTest, LookupsNeverMissAStableKeyWhileTheTreeChanges) {
  constexpr std::uint64_t key_range = 128;
  constexpr int updaters = 2, readers = 2;
  constexpr int ops_per_updater = 60'000;
  TypeParam tree(updaters + readers, this->eager());
  Xoshiro256StarStar fill;
  fill.seed(7);
  for (int i = 0; i < 1000; ++i) {  // a random shape, so stable keys sit at every depth
    const std::uint64_t k = 4 * (fill.next() % (key_range / 4)) + 1 + fill.next() % 2;
    tree.insert(0, k, k);
  }
  for (std::uint64_t k = 4; k <= key_range; k += 4) tree.insert(0, k, k);
  // The updaters go on until the readers have looked up enough keys while they ran: on a
  // loaded machine the readers may otherwise not run at all before the updates are done.
  constexpr std::uint64_t min_lookups = 20'000;
  std::atomic<int> updaters_left{updaters};
  std::atomic<std::uint64_t> misses{0}, phantoms{0}, lookups{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < updaters; ++t)
    threads.emplace_back([&, t] {
      Xoshiro256StarStar rng;
      rng.seed(3000 + static_cast<std::uint64_t>(t));
      for (int i = 0; i < ops_per_updater || lookups.load(std::memory_order_relaxed) < min_lookups; ++i) {
        const std::uint64_t k = 4 * (rng.next() % (key_range / 4)) + 1 + rng.next() % 2;
        if (rng.next() % 2) tree.insert(t, k, k);
        else tree.erase(t, k);
      }
      updaters_left.fetch_sub(1);
    });
  for (int t = updaters; t < updaters + readers; ++t)
    threads.emplace_back([&, t] {
      Xoshiro256StarStar rng;
      rng.seed(4000 + static_cast<std::uint64_t>(t));
      while (updaters_left.load() > 0) {
        const std::uint64_t k = 1 + rng.next() % key_range;
        if (k % 4 == 0 && !tree.contains(t, k)) misses.fetch_add(1);
        if (k % 4 == 3 && tree.contains(t, k)) phantoms.fetch_add(1);
        lookups.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(misses.load(), 0u) << "a lookup missed a key that was present throughout";
  EXPECT_EQ(phantoms.load(), 0u) << "a lookup found a key that was never inserted";
  EXPECT_EQ(tree.check_invariants(), "");
  for (std::uint64_t k = 4; k <= key_range; k += 4) EXPECT_TRUE(tree.contains(0, k));
}

// The layout the header states (empty NodeBase for none and ebr).
TEST(DrachslerBstLayout, NodeSize) {
  EXPECT_EQ(DrachslerBst<EpochBased<SystemAllocator>>::node_bytes, 64u);
  EXPECT_EQ(DrachslerBst<NoReclaim<SystemAllocator>>::node_bytes, 64u);
}

}  // namespace bst_drachsler_test
