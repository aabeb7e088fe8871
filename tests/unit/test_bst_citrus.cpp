// Citrus (set/bst/citrus.hpp) beyond the registry-wide correctness matrix: keys next to the
// sentinel, degenerate (sorted) trees, deletes of nodes with no, one and two children (the
// successor being the right child, deeper, and having a right child of its own), the grace
// period that keeps a moved successor findable, and reclamation accounting: after concurrent
// updates on a tiny key range every node allocated is in the tree, in limbo or freed, and
// teardown frees them all; and the tags of empty child slots, with an insert stopped between
// its search and its lock.
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
#include "cdsbench/set/bst/citrus.hpp"
#include "unit/bst_test_support.hpp"

namespace bst_citrus_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using namespace cdsb::test_support;

template <class Tree>
class Citrus : public ::testing::Test {
 protected:
  static ReclaimOptions eager() { return {.eager = true}; }
  static std::uint64_t grace_periods(const Tree& t) { return figure(t.stats(), "grace_periods"); }
};

using CitrusTrees = ::testing::Types<CitrusBst<EpochBased<CountingAllocator>>, CitrusBst<NoReclaim<CountingAllocator>>>;
TYPED_TEST_SUITE(Citrus, CitrusTrees);

TYPED_TEST(Citrus, EmptyTreeHasOnlyTheSentinel) {
  TypeParam tree(1, this->eager());
  EXPECT_EQ(tree.node_count(), 1u);
  EXPECT_FALSE(tree.contains(0, 1));
  EXPECT_FALSE(tree.contains(0, TypeParam::max_key));
  EXPECT_FALSE(tree.contains(0, TypeParam::max_key + 1));  // the sentinel's key is no user key
  EXPECT_FALSE(tree.erase(0, 1));
  EXPECT_FALSE(tree.erase(0, TypeParam::max_key));
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
}

// Each round's insert takes the slot the erase emptied (its "no child" version changed).
TYPED_TEST(Citrus, EraseOfTheOnlyKey) { check_the_only_key<TypeParam>(this->eager(), 1); }

// 1, the largest key allowed (just below the sentinel's) and its neighbour, in every order of
// erasure; max_key as the top node exercises a two-child delete right below the sentinel.
TYPED_TEST(Citrus, KeysNextToTheSentinel) {
  using Key = typename TypeParam::key_type;
  const Key top = TypeParam::max_key;
  const std::vector<std::vector<Key>> orders{{1, top - 1, top}, {top, top - 1, 1}, {top - 1, 1, top}, {top, 1, top - 1}};
  for (const auto& order : orders)
    check_insert_then_erase_in_order<TypeParam>(this->eager(), {top - 1, 1, top}, order);  // top-1 has two children
}

// Each kind of delete on a known shape. Every erase takes exactly one node out of the tree
// (a two-child delete adds the copy and removes two), keeps every other key findable, and
// waits for a grace period exactly when the node has two children.
//
//              50
//         30          70
//       20  40      60    80
//     10   35 45      65     90
TYPED_TEST(Citrus, DeletesOfNodesWithNoneOneAndTwoChildren) {
  TypeParam tree(1, this->eager());
  std::vector<std::uint64_t> keys{50, 30, 70, 20, 40, 60, 80, 10, 35, 45, 65, 90};
  for (auto k : keys) ASSERT_TRUE(tree.insert(0, k, k * 10));
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys_of(tree), keys);
  auto erase = [&](std::uint64_t k, std::uint64_t grace_periods) {
    SCOPED_TRACE("erase " + std::to_string(k));
    const std::size_t nodes = tree.node_count();
    const std::uint64_t gp = this->grace_periods(tree);
    ASSERT_TRUE(tree.erase(0, k));
    std::erase(keys, k);
    EXPECT_EQ(keys_of(tree), keys);
    for (auto other : keys) EXPECT_TRUE(tree.contains(0, other)) << other;
    EXPECT_FALSE(tree.contains(0, k));
    EXPECT_EQ(tree.node_count(), nodes - 1);
    EXPECT_EQ(this->grace_periods(tree) - gp, grace_periods);
    EXPECT_EQ(tree.check_invariants(), "");
  };
  erase(10, 0);  // a leaf
  erase(60, 0);  // one (right) child: 65 moves up
  erase(80, 0);  // one (right) child: 90 moves up
  erase(30, 1);  // two children; successor 35 is deeper (40's left child), a leaf
  erase(50, 1);  // two children, right below the sentinel; successor 65 is 70's left child
  erase(35, 1);  // two children (20, 40); successor 40 is the right child, and 45 moves up
  erase(70, 0);  // one child (90)
  erase(65, 1);  // two children; successor 90 is the right child, a leaf
  erase(40, 1);  // two children (20, 45); successor 45 is the right child, a leaf
  erase(90, 0);  // one (left) child
  erase(45, 0);  // one (left) child
  erase(20, 0);  // the last key
  EXPECT_EQ(tree.node_count(), 1u);
}

// A successor with a right child of its own: that child moves up into the successor's slot.
TYPED_TEST(Citrus, SuccessorWithARightChild) {
  TypeParam tree(1, this->eager());
  //        10
  //      5     30
  //          20   40
  //            25
  //           22 27
  for (std::uint64_t k : {10, 5, 30, 20, 40, 25, 22, 27}) ASSERT_TRUE(tree.insert(0, k, k));
  ASSERT_TRUE(tree.erase(0, 10));  // successor 20, its right subtree 25{22,27} moves up
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{5, 20, 22, 25, 27, 30, 40}));
  EXPECT_EQ(tree.check_invariants(), "");
  ASSERT_TRUE(tree.erase(0, 20));  // now at the top again: successor 22, a leaf under 25
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{5, 22, 25, 27, 30, 40}));
  EXPECT_EQ(tree.check_invariants(), "");
  // Inserts into slots that deletes emptied.
  for (std::uint64_t k : {21, 23, 24, 26}) EXPECT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{5, 21, 22, 23, 24, 25, 26, 27, 30, 40}));
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(this->grace_periods(tree), 2u);
}

// A path as deep as the tree is large (one-child deletes along it), then a "V" of two paths,
// which makes every delete from the top a two-child one.
TYPED_TEST(Citrus, DegenerateTrees) {
  TypeParam tree(1, this->eager());
  check_path_shaped_tree(tree, 1'500);
  if (this->HasFatalFailure()) return;

  // A "V": 500, then 499 and 501, 498 and 502, ...: two paths, each as deep as half the tree.
  // Every delete from the top is then a two-child one (the successor is the right child).
  std::vector<std::uint64_t> v{500};
  for (std::uint64_t d = 1; d < 500; ++d) {
    v.push_back(500 - d);
    v.push_back(500 + d);
  }
  for (auto k : v) ASSERT_TRUE(tree.insert(0, k, k));
  EXPECT_EQ(tree.check_invariants(), "");
  const std::uint64_t gp = this->grace_periods(tree);
  for (std::uint64_t k = 500; k < 1'000; ++k) ASSERT_TRUE(tree.erase(0, k)) << k;  // always the top
  EXPECT_EQ(this->grace_periods(tree) - gp, 499u);  // all but the last, which had no right child
  for (std::uint64_t k = 1; k < 500; ++k) ASSERT_TRUE(tree.erase(0, k)) << k;
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.node_count(), 1u);
}

// Each key's search depth (the benchmark's shape figure) is its depth in a sequential
// unbalanced tree of the same updates (two-child erasures take the successor, Hibbard's
// way), one below the sentinel.
TYPED_TEST(Citrus, SearchDepthsMatchASequentialTree) {
  TypeParam tree(1, this->eager());
  check_search_depths(tree, ReferenceBst::Kind::internal, 1);
}

// The grace period at work. Each round builds a random tree of keys 1..257; two threads erase
// the even keys, and every even node with two children moves its successor, an odd key, up
// the tree (the successor of an even key k is k+1 when k+1 is below it); meanwhile two
// threads search for odd keys, which stay present all along. Every such search must succeed.
// Without the grace period (or with a read-side section that does not cover the search) a
// search that passed the successor's new place before the copy appeared would miss it below.
TYPED_TEST(Citrus, MovedSuccessorsStayFindable) {
  constexpr std::uint64_t key_range = 257;  // odd: every even key k has k+1 present
  // Rounds until 3 s have passed (at least 10, at most 200): with the readers really running
  // beside the erasers, each grace period can cost a time slice on a loaded machine.
  constexpr int min_rounds = 10, max_rounds = 200;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int round = 0;
  std::uint64_t misses = 0, grace_periods = 0;
  Xoshiro256StarStar order_rng;
  order_rng.seed(4242);
  for (; round < max_rounds && misses == 0 && (round < min_rounds || std::chrono::steady_clock::now() < deadline);
       ++round) {
    TypeParam tree(4, this->eager());
    std::vector<std::uint64_t> keys;
    for (std::uint64_t k = 1; k <= key_range; ++k) keys.push_back(k);
    for (std::size_t i = keys.size() - 1; i > 0; --i) std::swap(keys[i], keys[order_rng.next() % (i + 1)]);
    for (auto k : keys) ASSERT_TRUE(tree.insert(0, k, k));
    std::atomic<int> erasers_left{2};
    std::atomic<int> readers_started{0};  // erasers wait for both readers: the threads overlap
    std::atomic<std::uint64_t> round_misses{0};
    std::atomic<std::uint64_t> erasing[2] = {2, 4};  // the key each eraser is at
    std::vector<std::thread> workers;
    for (int t = 0; t < 2; ++t)
      workers.emplace_back([&, t] {
        // Thread t erases the even keys 2 mod 4 (t = 0) or 0 mod 4 (t = 1), in tree-insert order.
        while (readers_started.load() < 2) std::this_thread::yield();
        for (auto k : keys) {
          if (k % 4 != (t == 0 ? 2u : 0u)) continue;
          erasing[t].store(k, std::memory_order_relaxed);
          EXPECT_TRUE(tree.erase(t, k));
        }
        erasers_left.fetch_sub(1);
      });
    // Reader r searches mostly for k+1, k being the key eraser r is at: when k has two
    // children, k+1 (the next key present) is exactly the successor being moved.
    for (int t = 2; t < 4; ++t)
      workers.emplace_back([&, t] {
        Xoshiro256StarStar rng;
        rng.seed(99 + static_cast<std::uint64_t>(round * 4 + t));
        readers_started.fetch_add(1);
        while (erasers_left.load(std::memory_order_relaxed) > 0) {
          const std::uint64_t k = rng.next() % 4 ? erasing[t - 2].load(std::memory_order_relaxed) + 1
                                                 : 1 + 2 * (rng.next() % ((key_range + 1) / 2));  // odd: present
          if (!tree.contains(t, k)) round_misses.fetch_add(1);
        }
      });
    for (auto& w : workers) w.join();
    misses += round_misses.load();
    grace_periods += this->grace_periods(tree);
    EXPECT_EQ(tree.check_invariants(), "");
    for (std::uint64_t k = 1; k <= key_range; ++k) EXPECT_EQ(tree.contains(0, k), k % 2 == 1) << k;
  }
  EXPECT_EQ(misses, 0u) << "a search missed a key that was present throughout";
  EXPECT_GT(grace_periods, 20u * static_cast<unsigned>(round)) << "too few successor moves to test them";
}

// Four threads on 16 keys (the helper's defaults) with eager reclamation: each removed node,
// old successors included, retired once; and two-child deletes among the updates.
TYPED_TEST(Citrus, ConcurrentUpdatesRetireEveryRemovedNode) {
  run_concurrent_updates_and_check<TypeParam>(this->eager(), {}, [](const TypeParam&, const StatsReport& stats) {
    EXPECT_GT(figure(stats, "grace_periods"), 100u) << "too few two-child deletes to test them";
  });
}

// An allocator that stops the thread of id `paused_tid` at its next allocation until the test
// lets it go: an insert allocates its node between its search and its lock, so the test can
// run whole operations inside that window.
struct PausingAllocator {
  static constexpr const char* name = "pausing";
  static inline std::atomic<int> paused_tid{-1};
  static inline std::atomic<bool> paused{false}, go{false};
  explicit PausingAllocator(int max_threads) : inner_(max_threads) {}
  template <class T>
  void* allocate(int tid) {
    if (tid == paused_tid.load()) {
      paused_tid.store(-1);
      paused.store(true);
      while (!go.load()) std::this_thread::yield();
    }
    return inner_.allocate<T>(tid);
  }
  template <class T>
  void deallocate(int tid, void* p) noexcept {
    inner_.deallocate<T>(tid, p);
  }

 private:
  SystemAllocator inner_;
};

// The "no child" versions (the paper's tags), deterministically. An insert of 12 finds 20's
// left slot empty and stops before locking 20; meanwhile 15 is inserted there, becomes the
// successor of 10, moves up into 10's place, and 20's left slot is empty again, but now 12
// belongs left of 15, not below 20. The insert must see the slot's version changed and search
// again; one that compared "empty" only would put 12 right of 15 (the order check fails).
TEST(CitrusTags, AnInsertDoesNotUseASlotThatWasRefilledAndEmptied) {
  using Tree = CitrusBst<NoReclaim<PausingAllocator>>;
  Tree tree(2);
  for (std::uint64_t k : {10, 5, 20}) ASSERT_TRUE(tree.insert(0, k, k));  // 10 (5, 20)
  PausingAllocator::go.store(false);
  PausingAllocator::paused.store(false);
  PausingAllocator::paused_tid.store(1);
  std::thread inserter([&] { EXPECT_TRUE(tree.insert(1, 12, 12)); });
  while (!PausingAllocator::paused.load()) std::this_thread::yield();  // it saw 20's left slot empty
  EXPECT_TRUE(tree.insert(0, 15, 15));                                 // 20's left child
  EXPECT_TRUE(tree.erase(0, 10));  // two children: successor 15 moves up, 20's left slot empties
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{5, 15, 20}));
  PausingAllocator::go.store(true);
  inserter.join();
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(keys_of(tree), (std::vector<std::uint64_t>{5, 12, 15, 20}));
  EXPECT_TRUE(tree.contains(0, 12));
  EXPECT_EQ(figure(tree.stats(), "update_restarts"), 1u);
}

// The layout the header states (empty NodeBase for none and ebr).
TEST(CitrusLayout, NodeSize) {
  EXPECT_EQ(CitrusBst<EpochBased<SystemAllocator>>::node_bytes, 40u);
  EXPECT_EQ(CitrusBst<NoReclaim<SystemAllocator>>::node_bytes, 40u);
}

}  // namespace bst_citrus_test
