// The Natarajan-Mittal tree's pending delete, scripted (architecture.md §5, "Scripted
// interleavings"). Its argument (natarajan_mittal.hpp): once a delete has flagged the edge to
// its leaf, the leaf is still in the set (the ancestor CAS is the delete's linearization) but
// can no longer be replaced; an update that finds the flagged edge in its way does the
// delete's cleanup (tag the sibling edge, swing the ancestor's edge) and then goes on, so it
// never waits for the stalled delete.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/natarajan_mittal.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"  // Mutant
#include "support/scripted_checks.hpp"

namespace natarajan_mittal_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::contents_problem;
using cdsb::testing::helped_while_parked;
using cdsb::testing::Mutant;

using Q = cdsb::testing::QuarantineAllocator;

// Keys 10, 20, 30 inserted in order: S > I(max-2) > I(20){ leaf 10, I(30){ leaf 20, leaf 30 } }.
// erase(20) flagged the edge I(30) -> leaf 20 and is parked: nothing tagged, nothing unlinked.
// 20 is still present (contains finds it, insert(20) fails). insert(25) needs that very edge:
// it must remove 20 for the delete (moving leaf 30 up) and then insert, while the delete is
// still parked; released, the delete finds its leaf gone and succeeds.
template <class Tree>
std::string flagged_edge_is_cleaned_up() {
  Tree t(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {10, 20, 30}) t.insert(0, k, k);
  bool erased = false, inserted = false;
  const std::string problem = helped_while_parked(
      "nm.erase.flagged", [&] { erased = t.erase(1, 20); },
      [&] {
        if (!t.contains(0, 20)) return "contains(20) missed a key whose delete has only flagged its edge";
        if (t.insert(0, 20, 21)) return "insert(20) succeeded while 20 is present (flagged)";
        return "";
      },
      [&] { inserted = t.insert(2, 25, 25); }, "insert(25) did not finish while the delete it must help was parked",
      [&] { return !inserted ? "insert(25) failed" : contents_problem(t, "{10 25 30}", " while the delete is parked"); });
  if (!problem.empty()) return problem;
  if (!erased) return "the parked erase(20) failed";
  return contents_problem(t, "{10 25 30}");
}

// The same delete parked one step later, in cleanup: its leaf's edge flagged and the edge to
// keep (I(30) -> leaf 30) tagged, the ancestor CAS not done. 20 is still present. insert(35)
// needs the tagged edge: it must finish the cleanup (moving leaf 30 up), then insert, while the
// delete is parked; released, the delete's ancestor CAS fails and it finds its leaf gone.
template <class Tree>
std::string tagged_edge_is_cleaned_up() {
  Tree t(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {10, 20, 30}) t.insert(0, k, k);
  bool erased = false, inserted = false;
  const std::string problem = helped_while_parked(
      "nm.cleanup.tagged", [&] { erased = t.erase(1, 20); },
      [&] {
        if (!t.contains(0, 20)) return "contains(20) missed a key whose delete has not unlinked it";
        if (!t.contains(0, 30)) return "contains(30) missed a key below a tagged edge";
        return "";
      },
      [&] { inserted = t.insert(2, 35, 35); }, "insert(35) did not finish while the delete it must help was parked",
      [&] { return !inserted ? "insert(35) failed" : contents_problem(t, "{10 30 35}", " while the delete is parked"); });
  if (!problem.empty()) return problem;
  if (!erased) return "the parked erase(20) failed";
  return contents_problem(t, "{10 30 35}");
}

template <class Tree>
class ScriptedNatarajanMittal : public ::testing::Test {};
using NatarajanMittalTrees = ::testing::Types<NatarajanMittalBst<NoReclaim<Q>>, NatarajanMittalBst<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedNatarajanMittal, NatarajanMittalTrees);

TYPED_TEST(ScriptedNatarajanMittal, AFlaggedEdgeIsCleanedUpByTheUpdateItBlocks) {
  Q::reset_leaks();
  EXPECT_EQ(flagged_edge_is_cleaned_up<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedNatarajanMittal, ATaggedEdgeIsCleanedUpByTheUpdateItBlocks) {
  Q::reset_leaks();
  EXPECT_EQ(tagged_edge_is_cleaned_up<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: an insert whose CAS failed on a flagged (or tagged) edge retries without cleaning it
// up, so it spins until the delete is released. The system allocator, not the quarantine:
// each spin allocates and frees an internal node.
TEST(ScriptedNatarajanMittalMutants, CatchesAnInsertThatDoesNotHelp) {
  Mutant bug("nm.insert_skips_help");
  EXPECT_EQ(flagged_edge_is_cleaned_up<NatarajanMittalBst<EpochBased<>>>(),
            "insert(25) did not finish while the delete it must help was parked");
  EXPECT_EQ(tagged_edge_is_cleaned_up<NatarajanMittalBst<EpochBased<>>>(),
            "insert(35) did not finish while the delete it must help was parked");
}

}  // namespace natarajan_mittal_scripted_test
