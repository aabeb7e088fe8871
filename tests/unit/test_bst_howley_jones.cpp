// The Howley-Jones internal BST (set/bst/howley_jones.hpp) beyond the registry-wide
// correctness matrix: keys next to the root sentinel and the top of the key space, deep
// (degenerate) trees, erasure of nodes with no, one and two children (relocations, with the
// successor next to or far below the node), a sequential differential run, keys that must
// stay visible to contains while relocations move them up, and reclamation accounting: after
// concurrent updates on a tiny key range every node and descriptor ever allocated is in the
// tree, in limbo or freed, and teardown frees them all.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cdsbench/platform/pause.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/howley_jones.hpp"
#include "unit/bst_test_support.hpp"

namespace bst_howley_jones_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using namespace cdsb::test_support;

template <class Tree>
class HowleyJonesBstTest : public ::testing::Test {
 protected:
  static ReclaimOptions eager() { return {.eager = true}; }
};

using HowleyJonesTrees = ::testing::Types<HowleyJonesBst<EpochBased<CountingAllocator>>, HowleyJonesBst<NoReclaim<CountingAllocator>>>;
TYPED_TEST_SUITE(HowleyJonesBstTest, HowleyJonesTrees);

template <class Tree>
void insert_all(Tree& tree, const std::vector<std::uint64_t>& keys) {
  for (std::uint64_t k : keys) ASSERT_TRUE(tree.insert(0, k, k)) << k;
}

TYPED_TEST(HowleyJonesBstTest, EmptyTreeHasOnlyTheRoot) {
  TypeParam tree(1, this->eager());
  EXPECT_EQ(tree.node_count(), 1u);
  EXPECT_FALSE(tree.contains(0, 0));  // the root's key, never a user key
  EXPECT_FALSE(tree.contains(0, 1));
  EXPECT_FALSE(tree.contains(0, TypeParam::max_key));
  EXPECT_FALSE(tree.erase(0, 1));
  EXPECT_FALSE(tree.erase(0, TypeParam::max_key));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
}

// After the first erase the root's right link is a stamped null, not the initial one: the
// next round's insert must work on it.
TYPED_TEST(HowleyJonesBstTest, EraseOfTheOnlyKeyAndAgain) { check_the_only_key<TypeParam>(this->eager(), 1); }

// 1 (just above the root's key), the largest key, its neighbour, in every order of erasure.
TYPED_TEST(HowleyJonesBstTest, KeysNextToTheSentinelAndTheTop) {
  using Key = typename TypeParam::key_type;
  const Key top = TypeParam::max_key, low = TypeParam::min_key;
  ASSERT_EQ(low, 1u);
  const std::vector<std::vector<Key>> orders{{low, top - 1, top}, {top, top - 1, low}, {top - 1, low, top}, {top, low, top - 1}};
  for (const auto& order : orders)
    check_insert_then_erase_in_order<TypeParam>(this->eager(), {top - 1, low, top}, order);  // top-1 has two children
}

// Erasing a node with no child, one child (either side) and two children, where the
// successor is the right child itself (its parent is the node being erased: the paper's
// "predOp = FLAG(op, NONE)" case) or deep in the right subtree, with or without a right child
// of its own.
TYPED_TEST(HowleyJonesBstTest, EraseNodesWithZeroOneAndTwoChildren) {
  struct Case {
    const char* what;
    std::vector<std::uint64_t> build;  // insertion order fixes the shape
    std::uint64_t erase;
  };
  const std::vector<Case> cases{
      {"leaf", {50, 30, 70}, 30},
      {"only a left child", {50, 30, 20}, 30},
      {"only a right child", {50, 30, 40}, 30},
      {"two children, successor is the right child", {50, 30, 70, 60, 80}, 50},
      {"two children, successor is the right child with a right child", {50, 30, 70, 80}, 50},
      {"two children, successor deep and a leaf", {50, 30, 70, 60, 55, 80}, 50},
      {"two children, successor deep with a right child", {50, 30, 70, 60, 55, 57, 80}, 50},
      {"two children below the top", {50, 30, 20, 40, 35, 45, 70}, 30},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TypeParam tree(1, this->eager());
    insert_all(tree, c.build);
    std::set<std::uint64_t> model(c.build.begin(), c.build.end());
    ASSERT_EQ(tree.check_invariants(), "");
    EXPECT_TRUE(tree.erase(0, c.erase));
    model.erase(c.erase);
    EXPECT_FALSE(tree.contains(0, c.erase));
    EXPECT_EQ(keys_of(tree), std::vector<std::uint64_t>(model.begin(), model.end()));
    EXPECT_EQ(tree.node_count(), model.size() + 1);  // the relocated successor's node is gone
    EXPECT_EQ(tree.check_invariants(), "");
    for (std::uint64_t k : model) EXPECT_TRUE(tree.contains(0, k)) << k;
    // Then the rest, root-first (every erase of a node with two children is a relocation).
    for (std::uint64_t k : c.build) {
      if (!model.count(k)) continue;
      EXPECT_TRUE(tree.erase(0, k)) << k;
      model.erase(k);
      EXPECT_EQ(keys_of(tree), std::vector<std::uint64_t>(model.begin(), model.end()));
      EXPECT_EQ(tree.check_invariants(), "");
    }
    EXPECT_EQ(tree.node_count(), 1u);
  }
}

// Sorted insertions make a path as deep as the tree is large; erasing every other key, then
// the rest, exercises excision along it.
TYPED_TEST(HowleyJonesBstTest, DegenerateTreesFromSortedKeys) {
  TypeParam tree(1, this->eager());
  check_path_shaped_tree(tree, 1'000);
}

// Against std::set, one thread, on a key range small enough for many two-children erasures.
TYPED_TEST(HowleyJonesBstTest, SequentialDifferential) {
  TypeParam tree(1, this->eager());
  check_against_std_set(tree, 60'000, 5'000);
}

// Each key's search depth (the benchmark's shape figure) is its depth in a sequential
// unbalanced tree of the same updates (two-child erasures take the successor, Hibbard's
// way), one below the sentinel.
TYPED_TEST(HowleyJonesBstTest, SearchDepthsMatchASequentialTree) {
  TypeParam tree(1, this->eager());
  check_search_depths(tree, ReferenceBst::Kind::internal, 1);
}

// Odd keys are inserted once and never erased; updaters churn the even keys around them, so
// erasures of nodes with two children keep relocating odd successors up the tree. contains
// must never miss an odd key (the light traversal's lastRight check and its relocated-MARK
// fallback) nor find an even key that was never inserted (multiples of 4 plus 2 stay out).
TYPED_TEST(HowleyJonesBstTest, RelocatedKeysStayVisible) {
  constexpr int updaters = 3, readers = 2;
  constexpr std::uint64_t key_range = 64;
  TypeParam tree(updaters + readers, this->eager());
  for (std::uint64_t k = 1; k <= key_range; k += 2) ASSERT_TRUE(tree.insert(0, k, k));
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> misses{0}, phantoms{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < updaters; ++t)
    threads.emplace_back([&, t] {
      Xoshiro256StarStar rng;
      rng.seed(7 + static_cast<std::uint64_t>(t));
      for (int i = 0; i < 30'000; ++i) {
        const std::uint64_t k = 4 * (rng.next() % (key_range / 4)) + 4;  // multiples of 4 only
        if (rng.next() & 1) tree.insert(t, k, k);
        else tree.erase(t, k);
      }
    });
  for (int r = 0; r < readers; ++r)
    threads.emplace_back([&, tid = updaters + r] {
      Xoshiro256StarStar rng;
      rng.seed(100 + static_cast<std::uint64_t>(tid));
      while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t k = 1 + rng.next() % key_range;
        const bool found = tree.contains(tid, k);
        if (k % 2 == 1 && !found) misses.fetch_add(1);
        if (k % 4 == 2 && found) phantoms.fetch_add(1);
      }
    });
  for (int t = 0; t < updaters; ++t) threads[t].join();
  stop = true;
  for (int r = 0; r < readers; ++r) threads[updaters + r].join();
  EXPECT_EQ(misses.load(), 0u) << "contains missed a key that was in the set throughout";
  EXPECT_EQ(phantoms.load(), 0u) << "contains found a key that was never inserted";
  EXPECT_EQ(tree.check_invariants(), "");
  for (std::uint64_t k = 1; k <= key_range; k += 2) EXPECT_TRUE(tree.contains(0, k)) << k;
}

// The race the light contains must get right, made frequent: a node D with a long left spine
// below its right child, the successor at the spine's bottom. Each erase of D's key relocates
// the bottom key into D and excises its old node; a reader that read D's old key, turned right
// and walked down the spine then meets a marked (relocated) node or a null where the key was.
// Readers look up the key being relocated while its own erase has not begun: it is in the set
// throughout, so contains must say so (the lastRight check and the relocated-MARK fallback).
TYPED_TEST(HowleyJonesBstTest, KeyRelocatedAboveAReaderStaysVisible) {
  constexpr int readers = 2;
  constexpr std::uint64_t d = 1'000, bottom_last = 2'400;
  TypeParam tree(1 + readers, this->eager());
  ASSERT_TRUE(tree.insert(0, d, d));
  ASSERT_TRUE(tree.insert(0, 1, 1));                                              // D has two children
  for (std::uint64_t k = bottom_last; k > d; --k) ASSERT_TRUE(tree.insert(0, k, k));  // the spine
  std::atomic<std::uint64_t> erasing{d};  // the key the writer erases now (or will next)
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> misses{0}, checks{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (std::uint64_t j = d; j < bottom_last; ++j) {
      erasing.store(j);
      // Let the readers start lookups of j + 1 first, so that they walk the spine with us (a
      // bounded spin: on a loaded machine the readers may not run at all).
      for (std::uint64_t c = checks.load(), spins = 0; checks.load() < c + readers && spins < 20'000; ++spins) cpu_relax();
      EXPECT_TRUE(tree.erase(0, j)) << j;  // relocates j + 1 into D
    }
    stop = true;
  });
  for (int r = 0; r < readers; ++r)
    threads.emplace_back([&, tid = 1 + r] {
      while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t j = erasing.load();
        const bool found = tree.contains(tid, j + 1);
        // j + 1 was in the set throughout unless its own erase began meanwhile.
        if (!found && erasing.load() == j) misses.fetch_add(1);
        checks.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(misses.load(), 0u) << "contains missed a key while it was being relocated (of " << checks.load() << ")";
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{1, bottom_last}));
  EXPECT_EQ(tree.check_invariants(), "");
}

// The other direction: a key once erased (and never inserted again) must stay gone for every
// contains that starts afterwards, although relocations leave a stale copy of a successor's
// key in its old node until that node is excised (the light traversal must not trust it).
// Bushy trees (keys inserted in shuffled order) so that most erasures relocate.
TYPED_TEST(HowleyJonesBstTest, ErasedKeysStayGone) {
  constexpr int erasers = 2, readers = 2, rounds = 20;
  constexpr std::uint64_t n = 512;
  std::uint64_t phantoms = 0;
  for (int round = 0; round < rounds; ++round) {
    TypeParam tree(erasers + readers, this->eager());
    Xoshiro256StarStar rng;
    rng.seed(500 + static_cast<std::uint64_t>(round));
    std::vector<std::uint64_t> keys(n);
    for (std::uint64_t i = 0; i < n; ++i) keys[i] = i + 1;
    for (std::uint64_t i = n - 1; i > 0; --i) std::swap(keys[i], keys[rng.next() % (i + 1)]);
    insert_all(tree, keys);
    std::vector<std::atomic<bool>> erased(n + 1);
    std::atomic<int> erasers_left{erasers};
    std::atomic<std::uint64_t> seen{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < erasers; ++t)
      threads.emplace_back([&, t] {
        for (std::uint64_t i = static_cast<std::uint64_t>(t); i < n; i += erasers) {
          if (tree.erase(t, keys[i])) erased[keys[i]].store(true, std::memory_order_release);
        }
        erasers_left.fetch_sub(1);
      });
    for (int r = 0; r < readers; ++r)
      threads.emplace_back([&, tid = erasers + r] {
        Xoshiro256StarStar local;
        local.seed(900 + static_cast<std::uint64_t>(tid) + 10 * static_cast<std::uint64_t>(round));
        while (erasers_left.load() > 0) {
          const std::uint64_t k = 1 + local.next() % n;
          const bool gone = erased[k].load(std::memory_order_acquire);
          if (gone && tree.contains(tid, k)) seen.fetch_add(1);
        }
      });
    for (auto& th : threads) th.join();
    phantoms += seen.load();
    EXPECT_TRUE(keys_of(tree).empty());
    EXPECT_EQ(tree.check_invariants(), "");
    EXPECT_EQ(tree.node_count(), 1u);
  }
  EXPECT_EQ(phantoms, 0u) << "contains found keys after their erase had returned";
}

// Four threads on 16 keys (the helper's defaults) with eager reclamation: heavy helping,
// relocations and excisions. The accounting covers both descriptor types too: they come from
// the same allocator and are counted as nodes, and at quiescence no op word holds one, so the
// tree holds nodes only and every descriptor is in limbo or freed.
TYPED_TEST(HowleyJonesBstTest, ConcurrentUpdatesRetireEveryRemovedObject) {
  run_concurrent_updates_and_check<TypeParam>(this->eager());
}

// The layout the header states: a 32-byte node, descriptors in other size classes of glibc
// malloc (chunk = request + 8 rounded up to 16, at least 32) and of jemalloc.
TEST(HowleyJonesBstLayout, NodeAndDescriptorSizes) {
  using Tree = HowleyJonesBst<EpochBased<SystemAllocator>>;
  EXPECT_EQ(Tree::node_bytes, 32u);
  EXPECT_EQ(Tree::descriptor_bytes, 16u);
  EXPECT_EQ(Tree::relocate_descriptor_bytes, 48u);
  using cdsb::detail::howley_jones::glibc_chunk;
  EXPECT_EQ(glibc_chunk(Tree::node_bytes), 48u);
  EXPECT_EQ(glibc_chunk(Tree::descriptor_bytes), 32u);
  EXPECT_EQ(glibc_chunk(Tree::relocate_descriptor_bytes), 64u);
}

}  // namespace bst_howley_jones_test
