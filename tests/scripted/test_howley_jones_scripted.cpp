// The Howley-Jones tree's pending updates, scripted (architecture.md §5, "Scripted
// interleavings"). Its argument (howley_jones.hpp): an erase is linearized at its MARK (a node
// with fewer than two children) or at its relocation's key CAS (two children), and whatever is
// left to do after a MARK or after a RELOCATE flag on the successor is published in the node's
// op word: an operation whose search meets it helps it to its end and goes on, so nothing waits
// for a stalled eraser (lock-freedom), and contains answers from the op word it reads.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/howley_jones.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"  // Mutant
#include "support/scripted_checks.hpp"

namespace howley_jones_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::contents_problem;
using cdsb::testing::helped_while_parked;
using cdsb::testing::Mutant;

using Q = cdsb::testing::QuarantineAllocator;

// Keys 20, 10, 40, 30 inserted in order: 20 { 10, 40 { 30, - } }. 20 has two children and its
// successor is 30; 10 is a leaf.
template <class Tree>
void fill_20_10_40_30(Tree& t) {
  for (std::uint64_t k : {20, 10, 40, 30}) t.insert(0, k, k);
}

// erase(10) MARKed its leaf (10 has left the set) and is parked before excising it. contains(10)
// must say false; insert(10), whose search meets the marked node, must excise it, insert 10
// again and finish while the erase is parked.
template <class Tree>
std::string marked_node_is_excised_by_others() {
  Tree t(3, ReclaimOptions{.eager = true});
  fill_20_10_40_30(t);
  bool erased = false, inserted = false;
  const std::string problem = helped_while_parked(
      "hj.erase.marked", [&] { erased = t.erase(1, 10); },
      [&] { return t.contains(0, 10) ? "contains(10) found a key whose erase is linearized (its node is marked)" : ""; },
      [&] { inserted = t.insert(2, 10, 10); }, "insert(10) did not finish while the erase it must help was parked",
      [&] {
        return !inserted ? "insert(10) failed: the marked node still counted as 10"
                         : contents_problem(t, "{10 20 30 40}", " while the erase is parked");
      });
  if (!problem.empty()) return problem;
  if (!erased) return "the parked erase(10) failed";
  return contents_problem(t, "{10 20 30 40}");
}

// erase(20) flagged its successor 30 RELOCATE and is parked before installing the op on 20:
// 20 is still in the set. insert(25), whose search passes 30, must finish the relocation (20
// leaves, 30 moves up into 20's node, the old 30 is excised), then insert, while the erase is
// parked.
template <class Tree>
std::string relocation_is_finished_by_others() {
  Tree t(3, ReclaimOptions{.eager = true});
  fill_20_10_40_30(t);
  bool erased = false, inserted = false;
  const std::string problem = helped_while_parked(
      "hj.erase.relocate_flagged", [&] { erased = t.erase(1, 20); },
      [&] { return !t.contains(0, 20) ? "contains(20) missed a key whose relocation has not reached its key CAS" : ""; },
      [&] { inserted = t.insert(2, 25, 25); }, "insert(25) did not finish while the relocation it must help was parked",
      [&] { return !inserted ? "insert(25) failed" : contents_problem(t, "{10 25 30 40}", " while the erase is parked"); });
  if (!problem.empty()) return problem;
  if (!erased) return "the parked erase(20) failed";
  return contents_problem(t, "{10 25 30 40}");
}

template <class Tree>
class ScriptedHowleyJones : public ::testing::Test {};
using HowleyJonesTrees = ::testing::Types<HowleyJonesBst<NoReclaim<Q>>, HowleyJonesBst<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedHowleyJones, HowleyJonesTrees);

TYPED_TEST(ScriptedHowleyJones, AMarkedNodeIsExcisedByOthers) {
  Q::reset_leaks();
  EXPECT_EQ(marked_node_is_excised_by_others<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedHowleyJones, APendingRelocationIsFinishedByOthers) {
  Q::reset_leaks();
  EXPECT_EQ(relocation_is_finished_by_others<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bugs: contains trusts a marked node's key; help() ignores a RELOCATE flag (the
// operation that meets it restarts until the eraser is released: not lock-free).
TEST(ScriptedHowleyJonesMutants, CatchesContainsIgnoringTheMark) {
  Mutant bug("hj.contains_ignores_mark");
  EXPECT_EQ(marked_node_is_excised_by_others<HowleyJonesBst<EpochBased<Q>>>(),
            "contains(10) found a key whose erase is linearized (its node is marked)");
}

TEST(ScriptedHowleyJonesMutants, CatchesNotHelpingARelocation) {
  Mutant bug("hj.help_skips_relocate");
  EXPECT_EQ(relocation_is_finished_by_others<HowleyJonesBst<EpochBased<Q>>>(),
            "insert(25) did not finish while the relocation it must help was parked");
}

}  // namespace howley_jones_scripted_test
