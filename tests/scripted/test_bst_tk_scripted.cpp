// BST-TK's optimistic update, scripted (architecture.md §5, "Scripted interleavings"). Its
// argument (bst_tk.hpp): an update searches without locks, reading each edge's version, and
// then locks only if nothing changed since; a delete leaves the removed parent's two edges
// locked for ever, so an update whose search ended at that parent can never lock it and
// starts over.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/bst_tk.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace bst_tk_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::contents_problem;
using cdsb::testing::Mutant;
using cdsb::testing::Script;

using Q = cdsb::testing::QuarantineAllocator;

// Keys 10, 20, 30 inserted in order: Root > I(max-1) > I(20){ leaf 10, I(30){ leaf 20, leaf 30 } }.
// insert(25) searched to I(30) -> leaf 20 and is parked before locking that edge; erase(20)
// removes I(30) and leaf 20 meanwhile. Released, the insert's lock must fail on the removed
// parent and the insert start over below I(20); linking 25 into I(30) would lose it.
template <class Tree>
std::string insert_into_a_removed_parent() {
  Tree t(2, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {10, 20, 30}) t.insert(0, k, k);
  bool inserted = false;
  {
    Script script;
    const auto searched = script.park_at("bsttk.insert.searched", 1);
    script.spawn(1, [&] { inserted = t.insert(1, 25, 25); });
    script.wait_parked(searched);
    if (!t.erase(0, 20)) return "erase(20) failed";
    script.release(searched);
    script.join(1);
  }
  if (!inserted) return "insert(25) failed";
  return contents_problem(t, "{10 25 30}", " after insert(25) succeeded");
}

template <class Tree>
class ScriptedBstTk : public ::testing::Test {};
using BstTkTrees = ::testing::Types<BstTk<NoReclaim<Q>>, BstTk<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedBstTk, BstTkTrees);

TYPED_TEST(ScriptedBstTk, AnInsertWhoseParentWasRemovedStartsOver) {
  Q::reset_leaks();
  EXPECT_EQ(insert_into_a_removed_parent<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: a delete hands the removed parent's edge locks back (reverted to the
// versions its search read), so the stale insert locks one and links into the removed node.
TEST(ScriptedBstTkMutants, CatchesADeleteThatUnlocksTheRemovedParent) {
  Mutant bug("bsttk.erase_unlocks_removed");
  EXPECT_EQ(insert_into_a_removed_parent<BstTk<EpochBased<Q>>>(), "keys {10 30} after insert(25) succeeded");
}

}  // namespace bst_tk_scripted_test
