// The Ramachandran-Mittal tree's states, scripted (architecture.md §5, "Scripted
// interleavings"). Its argument (ramachandran_mittal.hpp): a walk that read a node's key before
// that key was overwritten by its successor's (a complex delete) is sent round again by its
// anchor's check, so a key that moves up is never missed; and every update that finds a flag
// in its way finishes the delete or promotion that set it (lock-freedom), so none waits for a
// stalled one. Each scenario parks an operation in one of those states; each seeded bug must
// be reported by its scenario on every run.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/ramachandran_mittal.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace ramachandran_mittal_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::contents_problem;
using cdsb::testing::helped_while_parked;
using cdsb::testing::Mutant;
using cdsb::testing::Script;

using Q = cdsb::testing::QuarantineAllocator;

// The interleaving of the header's "contains" section. A walk for S = 1001 (contains, or the
// seek of erase) is parked right after reading the key of the node where it stops (its
// `stop_pass`-th key: the sentinel's is the first), about to read the edge toward S, while the
// test's thread deletes N = 1000 (two children: S's key is copied into N and S unlinked). S is
// present throughout: released, the walk must find it. In the first shapes S is N's right child
// with no child of its own, and the walk stops at N: its next read is N's right edge, emptied by
// S's removal (a right turn onto a null edge must count as the anchor, or the check passes at the
// sentinel and S is missed); in the others S is deeper and the walk stops at S's parent 1010:
// it reads a null left edge, and its anchor N, whose key changed, sends it round again.
template <class Tree>
std::string walk_parked_while_its_key_moves_up(const std::vector<std::uint64_t>& keys, int stop_pass, bool by_erase) {
  Tree t(2, ReclaimOptions{.eager = true});
  for (std::uint64_t k : keys) t.insert(0, k, k);
  bool found = false, erased = false;
  {
    Script script;
    const auto read = script.park_at("rm.walk.key_read", 1, stop_pass);
    script.spawn(1, [&] { found = by_erase ? t.erase(1, 1001) : t.contains(1, 1001); });
    script.wait_parked(read);
    erased = t.erase(0, 1000);
    script.release(read);
    script.join(1);
  }
  const std::string op = by_erase ? "erase(1001)" : "contains(1001)";
  if (!erased) return "erase(1000) failed";
  if (!found) return op + " missed 1001 while it moved up";
  if (t.contains(0, 1001) == by_erase) return "contains(1001) after " + op + " is wrong";
  if (t.contains(0, 1000)) return "contains(1000) found an erased key";
  return t.check_invariants();
}

struct Shape {
  std::vector<std::uint64_t> keys;
  int stop_pass;  // the walk stops after its stop_pass-th key: at 1000 (2) or at 1010 (3)
};
const std::vector<Shape> shapes{{{1000, 500, 1001}, 2},
                                {{1000, 500, 1001, 1002}, 2},
                                {{1000, 500, 1010, 1001}, 3},
                                {{1000, 500, 1010, 1001, 1002}, 3}};

// erase(500), a leaf, owns its node (inject on 1000's left edge, 500's edges flagged) and is
// parked there. insert(400) needs 500's flagged left edge: it must finish the delete and then
// insert, while the erase is parked; released, the erase finds its work done and succeeds.
template <class Tree>
std::string injected_delete_is_finished_by_others() {
  Tree t(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {1000, 500, 1001}) t.insert(0, k, k);
  bool erased = false, inserted = false;
  const std::string problem = helped_while_parked(
      "rm.erase.injected", [&] { erased = t.erase(1, 500); },
      [&] { return !t.contains(0, 500) ? "contains(500) missed a key whose delete only owns its node" : ""; },
      [&] { inserted = t.insert(2, 400, 400); }, "insert(400) did not finish while the delete it must help was parked",
      [&] { return !inserted ? "insert(400) failed" : contents_problem(t, "{400 1000 1001}", " while the erase is parked"); });
  if (!problem.empty()) return problem;
  if (!erased) return "the parked erase(500) failed";
  return contents_problem(t, "{400 1000 1001}");
}

// erase(1000) (children 500 and S = 1001) copied S's key into its node and is parked before
// unlinking S: 1001 is in two nodes, 1000 in none. insert(1002) needs S's promote-flagged right
// edge: it must unlink S, then replace the old node by its copy, then insert, while the erase is
// parked.
template <class Tree>
std::string promotion_is_finished_by_others() {
  Tree t(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {1000, 500, 1001}) t.insert(0, k, k);
  bool erased = false, inserted = false;
  const std::string problem = helped_while_parked(
      "rm.erase.key_copied", [&] { erased = t.erase(1, 1000); },
      [&] {
        if (!t.contains(0, 1001)) return "contains(1001) missed the key being moved up";
        if (t.contains(0, 1000)) return "contains(1000) found a key overwritten by its successor's";
        return "";
      },
      [&] { inserted = t.insert(2, 1002, 1002); }, "insert(1002) did not finish while the promotion it must help was parked",
      [&] { return !inserted ? "insert(1002) failed" : contents_problem(t, "{500 1001 1002}", " while the erase is parked"); });
  if (!problem.empty()) return problem;
  if (!erased) return "the parked erase(1000) failed";
  return contents_problem(t, "{500 1001 1002}");
}

template <class Tree>
class ScriptedRamachandranMittal : public ::testing::Test {};
using RamachandranMittalTrees = ::testing::Types<RamachandranMittalBst<NoReclaim<Q>>, RamachandranMittalBst<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedRamachandranMittal, RamachandranMittalTrees);

TYPED_TEST(ScriptedRamachandranMittal, AWalkParkedWhileItsKeyMovesUpStillFindsIt) {
  for (const Shape& s : shapes)
    for (const bool by_erase : {false, true}) {
      Q::reset_leaks();
      EXPECT_EQ(walk_parked_while_its_key_moves_up<TypeParam>(s.keys, s.stop_pass, by_erase), "")
          << s.keys.size() << " keys, stopped at key " << s.stop_pass << (by_erase ? ", erase" : ", contains");
      EXPECT_EQ(Q::leaked(), 0);
    }
}

TYPED_TEST(ScriptedRamachandranMittal, AnInjectedDeleteIsFinishedByOthers) {
  Q::reset_leaks();
  EXPECT_EQ(injected_delete_is_finished_by_others<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedRamachandranMittal, APromotionIsFinishedByOthers) {
  Q::reset_leaks();
  EXPECT_EQ(promotion_is_finished_by_others<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bugs: a right turn onto a null edge not taken as the anchor; an insert that retries
// without helping the delete in its way; a helper that ignores a promotion.
TEST(ScriptedRamachandranMittalMutants, CatchesANullRightTurnNotTakenAsTheAnchor) {
  Mutant bug("rm.null_right_turn_not_anchor");
  EXPECT_EQ(walk_parked_while_its_key_moves_up<RamachandranMittalBst<EpochBased<Q>>>(shapes[0].keys, shapes[0].stop_pass, false),
            "contains(1001) missed 1001 while it moved up");
}

TEST(ScriptedRamachandranMittalMutants, CatchesAnInsertThatDoesNotHelp) {
  Mutant bug("rm.insert_skips_help");
  EXPECT_EQ(injected_delete_is_finished_by_others<RamachandranMittalBst<EpochBased<Q>>>(),
            "insert(400) did not finish while the delete it must help was parked");
}

TEST(ScriptedRamachandranMittalMutants, CatchesNotHelpingAPromotion) {
  Mutant bug("rm.help_skips_promotion");
  EXPECT_EQ(promotion_is_finished_by_others<RamachandranMittalBst<EpochBased<Q>>>(),
            "insert(1002) did not finish while the promotion it must help was parked");
}

}  // namespace ramachandran_mittal_scripted_test
