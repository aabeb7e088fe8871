// The external BSTs (set/bst/natarajan_mittal.hpp, ellen.hpp, bst_tk.hpp) beyond the
// registry-wide correctness matrix: keys next to the sentinels, deep (unbalanced) trees, and
// reclamation accounting: after concurrent updates on a tiny key range, every node and
// descriptor ever allocated is in the tree, in limbo or freed (so every removed one was
// retired), and teardown frees them all.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/bst_tk.hpp"
#include "cdsbench/set/bst/ellen.hpp"
#include "cdsbench/set/bst/natarajan_mittal.hpp"
#include "unit/bst_test_support.hpp"

namespace bst_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using namespace cdsb::test_support;

template <class Tree>
class ExternalBst : public ::testing::Test {
 protected:
  static reclaim::ReclaimOptions eager() { return {.eager = true}; }
};

using ExternalBstTrees = ::testing::Types<NatarajanMittalBst<EpochBased<CountingAllocator>>, NatarajanMittalBst<NoReclaim<CountingAllocator>>,
                               EllenBst<EpochBased<CountingAllocator>>, EllenBst<NoReclaim<CountingAllocator>>,
                               BstTk<EpochBased<CountingAllocator>>, BstTk<NoReclaim<CountingAllocator>>>;
TYPED_TEST_SUITE(ExternalBst, ExternalBstTrees);

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
  check_the_only_key<TypeParam>(this->eager(), 2);  // a leaf and a routing node
}

// 1, the largest key allowed (just below the sentinels) and its neighbour, in every order of
// erasure.
TYPED_TEST(ExternalBst, KeysNextToTheSentinels) {
  using Key = typename TypeParam::key_type;
  const Key top = TypeParam::max_key;
  const std::vector<std::vector<Key>> orders{{1, top - 1, top}, {top, top - 1, 1}, {top - 1, 1, top}, {top, 1, top - 1}};
  for (const auto& order : orders) check_insert_then_erase_in_order<TypeParam>(this->eager(), {top, 1, top - 1}, order);
}

// Keys in order make a path as deep as the tree is large (a search is linear, so this stays
// small); erasing every other key from both ends exercises every sibling promotion.
TYPED_TEST(ExternalBst, UnbalancedTreeInsertedInOrder) {
  TypeParam tree(1, this->eager());
  check_path_shaped_tree(tree, 1'500);
}

// Each key's search depth (the benchmark's shape figure) is its leaf's depth in a sequential
// external tree of the same updates, below the sentinels: R and S in Natarajan-Mittal's tree,
// Root in Ellen et al.'s and BST-TK.
TYPED_TEST(ExternalBst, SearchDepthsMatchASequentialTree) {
  TypeParam tree(1, this->eager());
  const std::size_t sentinels_above = std::is_same_v<TypeParam, NatarajanMittalBst<typename TypeParam::reclaimer_type>> ? 2 : 1;
  check_search_depths(tree, ReferenceBst::Kind::external, sentinels_above);
}

// Four threads on 16 keys (the helper's defaults) with eager reclamation: heavy helping and
// cleanup, then every removed object retired and the set right.
TYPED_TEST(ExternalBst, ConcurrentUpdatesRetireEveryRemovedObject) {
  run_concurrent_updates_and_check<TypeParam>(this->eager());
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

}  // namespace bst_test
