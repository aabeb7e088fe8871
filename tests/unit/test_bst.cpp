// The external BSTs (set/bst/natarajan_mittal.hpp, ellen.hpp, bst_tk.hpp) beyond the
// registry-wide correctness matrix: keys next to the sentinels, deep (unbalanced) trees, and
// reclamation accounting: after concurrent updates on a tiny key range, every node and
// descriptor ever allocated is in the tree, in limbo or freed (so every removed one was
// retired), and teardown frees them all.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/bst_tk.hpp"
#include "cdsbench/set/bst/ellen.hpp"
#include "cdsbench/set/bst/natarajan_mittal.hpp"
#include "unit/bst_test_support.hpp"

namespace {

using namespace cdsb;
using namespace cdsb::reclaim;
using namespace cdsb::test_support;

template <class Tree>
class ExternalBst : public ::testing::Test {
 protected:
  static reclaim::ReclaimOptions eager() { return {.eager = true}; }
};

using Trees = ::testing::Types<NatarajanMittalBst<EpochBased<CountingAllocator>>, NatarajanMittalBst<NoReclaim<CountingAllocator>>,
                               EllenBst<EpochBased<CountingAllocator>>, EllenBst<NoReclaim<CountingAllocator>>,
                               BstTk<EpochBased<CountingAllocator>>, BstTk<NoReclaim<CountingAllocator>>>;
TYPED_TEST_SUITE(ExternalBst, Trees);

TYPED_TEST(ExternalBst, EmptyTreeHasOnlySentinels) {
  TypeParam tree(1, this->eager());
  const std::size_t sentinels = tree.node_count();
  EXPECT_FALSE(tree.contains(0, 1));
  EXPECT_FALSE(tree.contains(0, TypeParam::max_key));
  EXPECT_FALSE(tree.erase(0, 1));
  EXPECT_FALSE(tree.erase(0, TypeParam::max_key));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.node_count(), sentinels);
}

TYPED_TEST(ExternalBst, EraseOfTheOnlyKey) {
  TypeParam tree(1, this->eager());
  const std::size_t sentinels = tree.node_count();
  EXPECT_TRUE(tree.insert(0, 7, 70));
  EXPECT_FALSE(tree.insert(0, 7, 71));
  EXPECT_TRUE(tree.contains(0, 7));
  EXPECT_FALSE(tree.contains(0, 6));
  EXPECT_FALSE(tree.contains(0, 8));
  EXPECT_EQ(keys_of(tree), std::vector<std::uint64_t>{7});
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.node_count(), sentinels + 2);  // one leaf, one routing node
  EXPECT_TRUE(tree.erase(0, 7));
  EXPECT_FALSE(tree.erase(0, 7));
  EXPECT_FALSE(tree.contains(0, 7));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.node_count(), sentinels);
  // And again: the tree is back in its initial shape.
  EXPECT_TRUE(tree.insert(0, 7, 72));
  EXPECT_TRUE(tree.contains(0, 7));
  EXPECT_EQ(tree.check_invariants(), "");
}

// 1, the largest key allowed (just below the sentinels) and its neighbour, in every order of
// erasure.
TYPED_TEST(ExternalBst, KeysNextToTheSentinels) {
  using Key = typename TypeParam::key_type;
  const Key top = TypeParam::max_key;
  const std::vector<std::vector<Key>> orders{{1, top - 1, top}, {top, top - 1, 1}, {top - 1, 1, top}, {top, 1, top - 1}};
  for (const auto& order : orders) {
    TypeParam tree(1, this->eager());
    for (Key k : {top, Key{1}, top - 1}) EXPECT_TRUE(tree.insert(0, k, k));
    EXPECT_EQ(keys_of(tree), (std::vector<Key>{1, top - 1, top}));
    EXPECT_EQ(tree.check_invariants(), "");
    std::vector<Key> left{1, top - 1, top};
    for (Key k : order) {
      EXPECT_TRUE(tree.contains(0, k));
      EXPECT_TRUE(tree.erase(0, k));
      EXPECT_FALSE(tree.contains(0, k));
      std::erase(left, k);
      EXPECT_EQ(keys_of(tree), left);
      EXPECT_EQ(tree.check_invariants(), "");
    }
  }
}

// Keys in order make a path as deep as the tree is large (a search is linear, so this stays
// small); erasing every other key from both ends exercises every sibling promotion.
TYPED_TEST(ExternalBst, UnbalancedTreeInsertedInOrder) {
  constexpr std::uint64_t n = 1'500;
  TypeParam tree(1, this->eager());
  const std::size_t sentinels = tree.node_count();
  for (std::uint64_t k = 1; k <= n; ++k) ASSERT_TRUE(tree.insert(0, k, k));
  for (std::uint64_t k = 2 * n; k > n; --k) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(tree.check_invariants(), "");
  const auto keys = keys_of(tree);
  ASSERT_EQ(keys.size(), 2 * n);
  for (std::uint64_t i = 0; i < 2 * n; ++i) ASSERT_EQ(keys[i], i + 1);
  for (std::uint64_t k = 1; k <= 2 * n; k += 2) ASSERT_TRUE(tree.erase(0, k));
  for (std::uint64_t k = 2 * n; k >= 2; k -= 2) ASSERT_TRUE(tree.erase(0, k));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.node_count(), sentinels);
}

// Four threads on 16 keys with eager reclamation: heavy helping and cleanup. Afterwards the
// set agrees with the threads' successful updates, the tree is sound, every object allocated
// is in the tree, in limbo or freed (nothing removed was left unretired, nothing retired
// twice: ASan would see the double free), and teardown frees everything.
TYPED_TEST(ExternalBst, ConcurrentUpdatesRetireEveryRemovedObject) {
  constexpr int threads = 4;
  constexpr std::uint64_t key_range = 16;
  constexpr int ops_per_thread = 40'000;
  const std::int64_t live_before = live_objects.load();
  {
    TypeParam tree(threads, this->eager());
    std::vector<std::vector<std::int64_t>> net(threads, std::vector<std::int64_t>(key_range + 1, 0));
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        Xoshiro256StarStar rng;
        rng.seed(1000 + static_cast<std::uint64_t>(t));
        for (int i = 0; i < ops_per_thread; ++i) {
          const std::uint64_t k = 1 + rng.next() % key_range;
          switch (rng.next() % 3) {
            case 0: net[t][k] += tree.insert(t, k, k); break;
            case 1: net[t][k] -= tree.erase(t, k); break;
            default: (void)tree.contains(t, k);
          }
        }
      });
    for (auto& w : workers) w.join();

    EXPECT_EQ(tree.check_invariants(), "");
    std::vector<std::uint64_t> expected;
    for (std::uint64_t k = 1; k <= key_range; ++k) {
      std::int64_t sum = 0;
      for (int t = 0; t < threads; ++t) sum += net[t][k];
      ASSERT_TRUE(sum == 0 || sum == 1) << "key " << k << ": net " << sum;
      if (sum) expected.push_back(k);
      EXPECT_EQ(tree.contains(0, k), sum == 1) << "key " << k;
    }
    EXPECT_EQ(keys_of(tree), expected);

    const StatsReport stats = tree.stats();
    const std::uint64_t allocated = figure(stats, "nodes_allocated"), freed = figure(stats, "nodes_freed");
    const std::uint64_t retired = figure(stats, "nodes_retired"), limbo = figure(stats, "nodes_in_limbo");
    EXPECT_GT(retired, 1000u);
    EXPECT_EQ(allocated - freed, tree.node_count() + limbo)
        << "allocated " << allocated << ", freed " << freed << ", retired " << retired << ", in limbo " << limbo;
    EXPECT_EQ(live_objects.load() - live_before, static_cast<std::int64_t>(allocated - freed));
    if (std::string(TypeParam::reclaimer_type::name) == "ebr") {
      EXPECT_GT(freed, 0u) << "ebr reclaimed nothing during the run";
    }
  }
  EXPECT_EQ(live_objects.load(), live_before) << "teardown left objects allocated";
}

// The sizes the study's layout rules give (empty NodeBase for none and ebr).
TEST(ExternalBstLayout, NodeAndDescriptorSizes) {
  using Ebr = EpochBased<SystemAllocator>;
  EXPECT_EQ(NatarajanMittalBst<Ebr>::node_bytes, 32u);
  EXPECT_EQ(EllenBst<Ebr>::node_bytes, 32u);
  EXPECT_EQ(EllenBst<Ebr>::leaf_bytes, 16u);
  EXPECT_EQ(EllenBst<Ebr>::descriptor_bytes, 40u);
  EXPECT_EQ(BstTk<Ebr>::node_bytes, 32u);
  EXPECT_EQ(BstTk<Ebr>::leaf_bytes, 16u);
}

}  // namespace
