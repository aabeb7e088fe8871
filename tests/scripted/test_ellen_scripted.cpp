// The Ellen et al. tree's pending updates, scripted (architecture.md §5, "Scripted
// interleavings"). Its argument (ellen.hpp): an insert whose parent is IFLAGged, or a delete
// whose grandparent is DFLAGged, has published everything another thread needs to finish it;
// an operation that finds the flag in its way helps it to completion and then goes on, so no
// operation waits for a stalled one (lock-freedom). Each scenario parks the flagging operation
// right after its flag CAS, lets another operation that meets the flag run to its end, checks
// the tree it left while the flagger is still parked, then releases the flagger.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/ellen.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"  // Mutant
#include "support/scripted_checks.hpp"

namespace ellen_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::contents_problem;
using cdsb::testing::helped_while_parked;
using cdsb::testing::Mutant;

using Q = cdsb::testing::QuarantineAllocator;

// Keys 10, 20, 30 inserted in order: Root > I(max-1) > I(20){ leaf 10, I(30){ leaf 20, leaf 30 } }.
template <class Tree>
void fill(Tree& t) {
  for (std::uint64_t k : {10, 20, 30}) t.insert(0, k, k);
}

// insert(15) flagged I(20) (its leaf is 10) and is parked before its child CAS: 15 is not in
// the set yet. erase(10) meets the flag on 10's parent: it must link 15 for the insert, then
// remove 10, and finish while the insert is still parked.
template <class Tree>
std::string insert_flagged_is_helped() {
  Tree t(3, ReclaimOptions{.eager = true});
  fill(t);
  bool inserted = false, erased = false;
  const std::string problem = helped_while_parked(
      "ellen.insert.flagged", [&] { inserted = t.insert(1, 15, 15); },
      [&] { return t.contains(0, 15) ? "contains(15) found a key whose insert has not linked it" : ""; },
      [&] { erased = t.erase(2, 10); }, "erase(10) did not finish while the insert it must help was parked",
      [&] { return !erased ? "erase(10) failed" : contents_problem(t, "{15 20 30}", " while the insert is parked"); });
  if (!problem.empty()) return problem;
  if (!inserted) return "the parked insert(15) failed";
  return contents_problem(t, "{15 20 30}");
}

// erase(20) flagged I(20), the grandparent of leaf 20, and is parked before marking I(30):
// 20 is still in the set. Another erase(20) meets the flag: it must complete the parked
// delete (mark, child CAS, unflag), then find 20 gone and fail, while the first is parked.
template <class Tree>
std::string delete_flagged_is_helped() {
  Tree t(3, ReclaimOptions{.eager = true});
  fill(t);
  bool erased = false, erased_again = true;
  const std::string problem = helped_while_parked(
      "ellen.erase.flagged", [&] { erased = t.erase(1, 20); },
      [&] { return !t.contains(0, 20) ? "contains(20) missed a key whose delete is only flagged" : ""; },
      [&] { erased_again = t.erase(2, 20); }, "erase(20) did not finish while the delete it must help was parked",
      [&] {
        return erased_again ? "a second erase(20) succeeded: it did not complete the flagged delete"
                            : contents_problem(t, "{10 30}", " while the delete is parked");
      });
  if (!problem.empty()) return problem;
  if (!erased) return "the parked erase(20) failed";
  return contents_problem(t, "{10 30}");
}

template <class Tree>
class ScriptedEllen : public ::testing::Test {};
using EllenTrees = ::testing::Types<EllenBst<NoReclaim<Q>>, EllenBst<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedEllen, EllenTrees);

TYPED_TEST(ScriptedEllen, AFlaggedInsertIsHelpedToCompletion) {
  Q::reset_leaks();
  EXPECT_EQ(insert_flagged_is_helped<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedEllen, AFlaggedDeleteIsHelpedToCompletion) {
  Q::reset_leaks();
  EXPECT_EQ(delete_flagged_is_helped<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bugs: help() ignores an IFLAG, or a DFLAG; the operation that meets it spins
// until the flagger is released (it waits for a stalled thread: not lock-free).
TEST(ScriptedEllenMutants, CatchesNotHelpingAFlaggedInsert) {
  Mutant bug("ellen.help_skips_insert");
  EXPECT_EQ(insert_flagged_is_helped<EllenBst<EpochBased<Q>>>(),
            "erase(10) did not finish while the insert it must help was parked");
}

TEST(ScriptedEllenMutants, CatchesNotHelpingAFlaggedDelete) {
  Mutant bug("ellen.help_skips_delete");
  EXPECT_EQ(delete_flagged_is_helped<EllenBst<EpochBased<Q>>>(),
            "erase(20) did not finish while the delete it must help was parked");
}

}  // namespace ellen_scripted_test
