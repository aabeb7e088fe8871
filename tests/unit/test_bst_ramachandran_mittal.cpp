// The Ramachandran-Mittal internal BST (set/bst/ramachandran_mittal.hpp) beyond the
// registry-wide correctness matrix: keys next to the sentinel, deletes of nodes with 0, 1 and
// 2 children (the successor being the right child itself, or deeper with a right child of its
// own), deep (unbalanced) trees, reclamation accounting under concurrent updates, and the
// algorithm's subtle case: keys that stay present while two-child deletes around them copy
// them up (successor promotion) must never be missed by contains or by an insert's seek (at
// random here; the windows themselves are scripted in tests/scripted/test_ramachandran_mittal_scripted.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/ramachandran_mittal.hpp"
#include "unit/bst_test_support.hpp"

namespace bst_ramachandran_mittal_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using namespace cdsb::test_support;

template <class Tree>
class RamachandranMittal : public ::testing::Test {
 protected:
  static ReclaimOptions eager() { return {.eager = true}; }
};

using RamachandranMittalTrees = ::testing::Types<RamachandranMittalBst<EpochBased<CountingAllocator>>,
                               RamachandranMittalBst<NoReclaim<CountingAllocator>>>;
TYPED_TEST_SUITE(RamachandranMittal, RamachandranMittalTrees);

TYPED_TEST(RamachandranMittal, EmptyTreeHasOnlyTheSentinel) {
  TypeParam tree(1, this->eager());
  EXPECT_EQ(tree.node_count(), 1u);
  EXPECT_FALSE(tree.contains(0, 1));
  EXPECT_FALSE(tree.contains(0, TypeParam::max_key));
  EXPECT_FALSE(tree.contains(0, TypeParam::max_key + 1));  // the sentinel's key
  EXPECT_FALSE(tree.erase(0, 1));
  EXPECT_FALSE(tree.erase(0, TypeParam::max_key));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
}

TYPED_TEST(RamachandranMittal, EraseOfTheOnlyKeyAndAgain) { check_the_only_key<TypeParam>(this->eager(), 1); }

// 1, the largest key allowed and its neighbour (the sentinel's key is max_key + 1), erased in
// every order.
TYPED_TEST(RamachandranMittal, KeysNextToTheSentinel) {
  using Key = typename TypeParam::key_type;
  const Key top = TypeParam::max_key;
  const std::vector<std::vector<Key>> orders{{1, top - 1, top}, {top, top - 1, 1}, {top - 1, 1, top},
                                             {top, 1, top - 1}, {1, top, top - 1}, {top - 1, top, 1}};
  for (const auto& order : orders) check_insert_then_erase_in_order<TypeParam>(this->eager(), {top, 1, top - 1}, order);
}

// Builds a tree by inserting `keys` in order, erases `victim`, and checks the set, the
// invariants, that exactly one node left the tree and that a successor was promoted iff the
// victim had two children.
template <class Tree>
void erase_from_shape(const std::vector<std::uint64_t>& keys, std::uint64_t victim, bool two_children,
                      ReclaimOptions options) {
  Tree tree(1, options);
  for (auto k : keys) ASSERT_TRUE(tree.insert(0, k, k * 10));
  const std::size_t before = tree.node_count();
  ASSERT_EQ(tree.check_invariants(), "");
  ASSERT_TRUE(tree.erase(0, victim)) << victim;
  std::vector<std::uint64_t> expected = keys;
  std::erase(expected, victim);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(keys_of(tree), expected) << "erasing " << victim;
  EXPECT_EQ(tree.check_invariants(), "") << "erasing " << victim;
  EXPECT_EQ(tree.node_count(), before - 1) << "erasing " << victim;
  EXPECT_FALSE(tree.contains(0, victim));
  for (auto k : expected) EXPECT_TRUE(tree.contains(0, k)) << k << " after erasing " << victim;
  for (auto k : expected) EXPECT_FALSE(tree.insert(0, k, 0)) << k << " after erasing " << victim;
  EXPECT_EQ(figure(tree.stats(), "promotions"), two_children ? 1u : 0u) << "erasing " << victim;
}

//            50
//        30        70
//      20  40    60  80
//     10        55     90
TYPED_TEST(RamachandranMittal, DeletesOfNodesWithZeroOneAndTwoChildren) {
  const std::vector<std::uint64_t> keys{50, 30, 70, 20, 40, 60, 80, 10, 55, 90};
  for (auto victim : keys)
    erase_from_shape<TypeParam>(keys, victim, victim == 50 || victim == 30 || victim == 70, this->eager());
}

// Two children, the successor is the victim's right child (its left edge is null): the CAS
// that unlinks it is on the victim's own, delete-flagged, right edge.
TYPED_TEST(RamachandranMittal, SuccessorIsTheRightChild) {
  erase_from_shape<TypeParam>({10, 5, 15}, 10, true, this->eager());          // successor a leaf
  erase_from_shape<TypeParam>({10, 5, 15, 20}, 10, true, this->eager());      // with a right child
  erase_from_shape<TypeParam>({10, 5, 15, 20, 17, 25}, 10, true, this->eager());
}

// Two children, the successor deeper down, with and without a right child of its own.
TYPED_TEST(RamachandranMittal, SuccessorDeeperWithARightChild) {
  erase_from_shape<TypeParam>({10, 5, 20, 15}, 10, true, this->eager());
  erase_from_shape<TypeParam>({10, 5, 20, 15, 17}, 10, true, this->eager());
  erase_from_shape<TypeParam>({10, 5, 30, 20, 15, 17, 16, 18}, 10, true, this->eager());
  // The root of the user keys deleted again and again: every delete promotes a successor.
  TypeParam tree(1, this->eager());
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 1; k <= 63; ++k) keys.push_back((k * 37) % 64);  // a bushy order
  for (auto k : keys) ASSERT_TRUE(tree.insert(0, k, k));
  for (auto k : keys) {
    ASSERT_TRUE(tree.erase(0, k));
    ASSERT_EQ(tree.check_invariants(), "") << "after erasing " << k;
  }
  EXPECT_GT(figure(tree.stats(), "promotions"), 10u);
  EXPECT_EQ(tree.node_count(), 1u);
}

// Keys in order make a path as deep as the tree is large: one-child deletes on a long path.
TYPED_TEST(RamachandranMittal, UnbalancedTreeInsertedInOrder) {
  TypeParam tree(1, this->eager());
  check_path_shaped_tree(tree, 1'000);
}

// Each key's search depth (the benchmark's shape figure) is its depth in a sequential
// unbalanced tree of the same updates (two-child erasures take the successor, Hibbard's
// way), one below the sentinel.
TYPED_TEST(RamachandranMittal, SearchDepthsMatchASequentialTree) {
  TypeParam tree(1, this->eager());
  check_search_depths(tree, ReferenceBst::Kind::internal, 1);
}

// Four threads on 16 keys (the helper's defaults) with eager reclamation: heavy helping; and
// two-child deletes (successor promotions) among the updates.
TYPED_TEST(RamachandranMittal, ConcurrentUpdatesRetireEveryRemovedNode) {
  run_concurrent_updates_and_check<TypeParam>(this->eager(), {.seed = 2000}, [](const TypeParam&, const StatsReport& stats) {
    EXPECT_GT(figure(stats, "promotions"), 100u) << "too few two-child deletes to test them";
  });
}

// The subtle case (see "contains" in the header): the multiples of 8 are inserted first and
// never deleted; two threads insert and delete the keys between them, so many deletes are of
// nodes with two children whose successor (the next key above) is a multiple of 8, which is
// copied up into the deleted node while readers look for it. Every contains of a stable key
// must return true, and every insert of one false (the update seek must find it too), however
// the key moves.
TYPED_TEST(RamachandranMittal, KeysPresentThroughoutAreFoundWhileTheyMoveUp) {
  constexpr int updaters = 2, readers = 2;
  constexpr std::uint64_t key_range = 256;
  const auto duration = std::chrono::milliseconds(600);
  TypeParam tree(updaters + readers, this->eager());
  std::vector<std::uint64_t> stable, churn;
  for (std::uint64_t k = 1; k <= key_range; ++k) (k % 8 == 0 ? stable : churn).push_back(k);
  {
    Xoshiro256StarStar rng;
    rng.seed(7);
    std::vector<std::uint64_t> order = stable;
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);  // bushy
    for (auto k : order) ASSERT_TRUE(tree.insert(0, k, k));
  }
  std::atomic<std::uint64_t> missed{0}, reader_ops{0};
  // Rounds of `duration` until the updaters have promoted enough successors (a loaded machine,
  // or a sanitizer, slows them), at most 20 rounds.
  for (int round = 0; round < 20 && figure(tree.stats(), "promotions") <= 100; ++round) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < updaters; ++t)
      workers.emplace_back([&, t, round] {
        Xoshiro256StarStar rng;
        rng.seed(100 + static_cast<std::uint64_t>(t + 10 * round));
        while (!stop.load(std::memory_order_relaxed)) {
          const std::uint64_t k = churn[rng.next() % churn.size()];
          if (rng.next() & 1) tree.insert(t, k, k);
          else tree.erase(t, k);
        }
      });
    for (int r = 0; r < readers; ++r)
      workers.emplace_back([&, tid = updaters + r] {
        Xoshiro256StarStar rng;
        rng.seed(200 + static_cast<std::uint64_t>(tid));
        std::uint64_t ops = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          const std::uint64_t k = stable[rng.next() % stable.size()];
          if (!tree.contains(tid, k)) missed.fetch_add(1);
          if (tree.insert(tid, k, k)) missed.fetch_add(1);  // it was present: must not insert
          ops += 2;
        }
        reader_ops.fetch_add(ops);
      });
    std::this_thread::sleep_for(duration);
    stop.store(true);
    for (auto& w : workers) w.join();
  }
  EXPECT_EQ(missed.load(), 0u) << "a key present throughout was missed, of " << reader_ops.load() << " lookups";
  EXPECT_GT(figure(tree.stats(), "promotions"), 100u) << "too few successor promotions to test them";
  EXPECT_EQ(tree.check_invariants(), "");
  for (auto k : stable) EXPECT_TRUE(tree.contains(0, k)) << k;
}

// The interleaving of the header's "contains" section, made frequent: one key, S = 1001, is
// promoted into N = 1000 again and again, and readers look for it while it moves. Each round
// the updater builds N with a left child and, to its right, a long left-going path ending in S
// (with a right child), so that a reader's walk from N down to S is long; then it deletes N
// (two children: S's key is copied into N and S unlinked) while the round counter says "S is
// present"; then it removes the rest. A reader that looked for S entirely inside such a
// window (the counter unchanged around its lookup) must find it. (Inserts of keys that stay
// present, which run the update seek, are checked by the test above.)
TYPED_TEST(RamachandranMittal, PromotedKeyIsFoundWhileItMovesUp) {
  constexpr int readers = 2, path = 256;
  constexpr std::uint64_t n_key = 1000, s_key = 1001;
  const auto duration = std::chrono::milliseconds(700);
  TypeParam tree(1 + readers, this->eager());
  std::vector<std::uint64_t> block{n_key, 500};
  for (std::uint64_t i = path; i > 0; --i) block.push_back(s_key + 10 * i);  // a left path, all above S
  block.push_back(s_key);      // the leftmost of N's right subtree: N's successor
  block.push_back(s_key + 1);  // S's right child, moved up when S is unlinked
  std::atomic<std::uint64_t> round{1};  // even: every key of the block but N is present
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> missed{0}, checked{0}, rounds{0};
  std::vector<std::thread> workers;
  workers.emplace_back([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      for (auto k : block) ASSERT_TRUE(tree.insert(0, k, k));
      round.fetch_add(1, std::memory_order_release);  // even
      ASSERT_TRUE(tree.erase(0, n_key));  // promotes S
      // Stay in the window until the readers have finished a few lookups (at most a while): a
      // reader preempted halfway down to S must be able to finish inside it.
      const std::uint64_t target = checked.load() + 32 * readers;
      for (int spin = 0; spin < 1000 && checked.load() < target && !stop.load(); ++spin) std::this_thread::yield();
      round.fetch_add(1, std::memory_order_release);  // odd
      for (std::size_t i = 1; i < block.size(); ++i) ASSERT_TRUE(tree.erase(0, block[i]));
      rounds.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int t = 1; t <= readers; ++t)
    workers.emplace_back([&, t] {
      std::uint64_t last_round = 0;
      int in_round = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t r1 = round.load(std::memory_order_acquire);
        if (r1 != last_round) in_round = 0;
        last_round = r1;
        if ((r1 & 1) || in_round == 32) {  // between windows, or done with this one: let the
          std::this_thread::yield();       // updater run
          continue;
        }
        const bool found = tree.contains(t, s_key);
        if (round.load(std::memory_order_acquire) != r1) continue;
        ++in_round;
        checked.fetch_add(1);
        missed.fetch_add(!found);
      }
    });
  // At least `duration` and 11 rounds (a loaded machine, or a sanitizer, slows the rounds), but
  // no more than 60 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::this_thread::sleep_for(duration);
  while (rounds.load(std::memory_order_relaxed) <= 10 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop.store(true);
  for (auto& w : workers) w.join();
  EXPECT_EQ(missed.load(), 0u) << "S was missed while it moved up, of " << checked.load() << " lookups in "
                               << rounds.load() << " rounds";
  EXPECT_GT(rounds.load(), 10u);
  EXPECT_EQ(tree.check_invariants(), "");
}

// The layout the header states (empty NodeBase for none and ebr).
TEST(RamachandranMittalLayout, NodeSize) {
  EXPECT_EQ(RamachandranMittalBst<EpochBased<SystemAllocator>>::node_bytes, 32u);
  EXPECT_EQ(RamachandranMittalBst<NoReclaim<SystemAllocator>>::node_bytes, 32u);
}

}  // namespace bst_ramachandran_mittal_test
