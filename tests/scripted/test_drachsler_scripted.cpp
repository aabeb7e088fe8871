// The logical-ordering tree's windows, scripted (architecture.md §5, "Scripted
// interleavings"). Its argument (drachsler.hpp): the tree layout is only a fast path, the
// ordering list is the truth, and a lookup whose walk a removal or relocation disturbed settles
// along the list's links (frozen ones included) into the right gap; the header's two
// deviations from the paper are what keep that true. Each scenario parks an operation inside
// one of those windows, acts from other threads, and checks what they saw; each seeded bug (the
// paper's order, or a lookup without the settle) must be reported by its scenario on every run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/drachsler.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace drachsler_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::becomes_true;
using cdsb::testing::contents_problem;
using cdsb::testing::Mutant;
using cdsb::testing::Script;

using Q = cdsb::testing::QuarantineAllocator;

template <class Tree>
std::string shape_problem(const Tree& t, const std::string& expected, const std::string& when) {
  const std::string got = t.shape();
  return got == expected ? "" : "tree layout " + got + when + ", expected " + expected;
}

// A node with two children (50) is removed while its successor S' (60) is detached from its
// old place and not yet in 50's: the tree walk for 60 misses it (it ends at 65, 60's old right
// child), and the lookup must find 60 through the list (65's pred).
template <class Tree>
std::string successor_is_found_while_relocated() {
  Tree t(2, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {50, 30, 70, 60, 65}) t.insert(0, k, k);
  if (std::string bad = shape_problem(t, "((. 30 .) 50 ((. 60 (. 65 .)) 70 .))", " before"); !bad.empty()) return bad;
  bool erased = false;
  {
    Script script;
    const auto detached = script.park_at("drachsler.erase.heir_detached", 1);
    script.spawn(1, [&] { erased = t.erase(1, 50); });
    script.wait_parked(detached);
    if (!t.contains(0, 60)) return "contains(60) missed the successor while it was relocated";
    for (std::uint64_t k : {65, 70, 30})
      if (!t.contains(0, k)) return "contains(" + std::to_string(k) + ") missed a key during the relocation";
    if (t.contains(0, 50)) return "contains(50) found a key whose erase is linearized (marked)";
    if (t.contains(0, 61)) return "contains(61) found an absent key";
    script.release(detached);
    script.join(1);
  }
  if (!erased) return "the parked erase(50) failed";
  if (std::string bad = shape_problem(t, "((. 30 .) 60 ((. 65 .) 70 .))", " after"); !bad.empty()) return bad;
  return contents_problem(t, "{30 60 65 70}");
}

// DEVIATION 1: a removed node still in the tree layout (its erase parked between the list
// unlink and the tree removal) must not hide a new node with its key. The erase keeps the gap
// (15, 30) locked until the tree removal, so an insert(20) waits; with the paper's order (the
// succ locks released first) the insert completes during the pause as the right child of 15,
// and a lookup then stops at the removed 20 and answers false.
template <class Tree>
std::string removed_node_hides_no_new_node() {
  Tree t(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {20, 10, 30, 15}) t.insert(0, k, k);
  if (std::string bad = shape_problem(t, "((. 10 (. 15 .)) 20 (. 30 .))", " before"); !bad.empty()) return bad;
  bool erased = false, inserted = false, found_after_insert = false, finished_while_parked = false;
  std::atomic<bool> done{false};
  {
    Script script;
    const auto unlinked = script.park_at("drachsler.erase.list_unlinked", 1);
    script.spawn(1, [&] { erased = t.erase(1, 20); });
    script.wait_parked(unlinked);
    if (t.contains(0, 20)) return "contains(20) found a key whose erase is linearized (marked, still in the tree)";
    script.spawn(2, [&] {
      inserted = t.insert(2, 20, 21);
      found_after_insert = t.contains(2, 20);
      done.store(true, std::memory_order_release);  // pairs with becomes_true's acquire
    });
    finished_while_parked = becomes_true(done, std::chrono::milliseconds(100));
    script.release(unlinked);
    script.join(1);
    script.join(2);
  }
  if (!erased) return "the parked erase(20) failed";
  if (!inserted) return "insert(20) after the erase failed";
  if (!found_after_insert) return "contains(20) right after a completed insert(20) missed it";
  if (finished_while_parked) return "insert(20) completed while the erase still held the gap";
  return contents_problem(t, "{10 15 20 30}");
}

// DEVIATION 2: an insert links p.succ = new before s.pred = new. A lookup whose walk ended on
// a removed node (40) comes back through its frozen pred to s (30); a fresh lookup ends at p
// (10) and goes forward. With the insert parked between its two stores both must find the
// key; with the paper's order (s.pred first) the first answers true and the later one false.
// Eager epochs: the removed node the parked lookup stands on must not be freed under it.
template <class Tree>
std::string both_sides_agree_on_a_half_listed_insert() {
  Tree t(3, ReclaimOptions{.eager = true});
  t.insert(0, 40, 40);
  bool stale_found = false, fresh_found = false, inserted = false;
  {
    Script script;
    const auto walked = script.park_at("drachsler.contains.walked", 1);
    const auto half_listed = script.park_at("drachsler.insert.half_listed", 2);
    script.spawn(1, [&] { stale_found = t.contains(1, 20); });  // its walk ends at 40
    script.wait_parked(walked);
    t.insert(0, 30, 30);
    t.insert(0, 10, 10);
    t.erase(0, 40);  // 30 moves up; 40's pred stays 30
    if (std::string bad = shape_problem(t, "((. 10 .) 30 .)", " before the insert"); !bad.empty()) return bad;
    script.spawn(2, [&] { inserted = t.insert(2, 20, 20); });  // p = 10 is its parent
    script.wait_parked(half_listed);
    script.release(walked);
    script.join(1);
    fresh_found = t.contains(0, 20);  // walk ends at 10, then forward
    script.release(half_listed);
    script.join(2);
  }
  if (!inserted) return "insert(20) failed";
  if (!stale_found) return "contains(20) through a removed node's frozen pred missed the half-listed key";
  if (!fresh_found) return "a later contains(20) from p missed a key an earlier one had found";
  if (std::string bad = shape_problem(t, "((. 10 (. 20 .)) 30 .)", " after"); !bad.empty()) return bad;
  return contents_problem(t, "{10 20 30}");
}

template <class Tree>
class ScriptedDrachsler : public ::testing::Test {};
using DrachslerTrees = ::testing::Types<DrachslerBst<NoReclaim<Q>>, DrachslerBst<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedDrachsler, DrachslerTrees);

TYPED_TEST(ScriptedDrachsler, ALookupFindsTheSuccessorWhileItIsRelocated) {
  Q::reset_leaks();
  EXPECT_EQ(successor_is_found_while_relocated<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedDrachsler, ARemovedNodeStillInTheTreeHidesNoNewNodeWithItsKey) {
  Q::reset_leaks();
  EXPECT_EQ(removed_node_hides_no_new_node<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedDrachsler, LookupsFromBothSidesAgreeOnAHalfListedInsert) {
  Q::reset_leaks();
  EXPECT_EQ(both_sides_agree_on_a_half_listed_insert<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bugs: a lookup that answers from where its walk ended; the paper's order of the
// erase's unlocks; the paper's order of the insert's two list stores.
TEST(ScriptedDrachslerMutants, CatchesALookupThatTrustsItsWalk) {
  Mutant bug("drachsler.contains_trusts_the_walk");
  EXPECT_EQ(successor_is_found_while_relocated<DrachslerBst<EpochBased<Q>>>(),
            "contains(60) missed the successor while it was relocated");
}

TEST(ScriptedDrachslerMutants, CatchesUnlockingTheGapBeforeTheTreeRemoval) {
  Mutant bug("drachsler.erase_unlocks_before_tree_removal");
  EXPECT_EQ(removed_node_hides_no_new_node<DrachslerBst<EpochBased<Q>>>(),
            "contains(20) right after a completed insert(20) missed it");
}

TEST(ScriptedDrachslerMutants, CatchesLinkingThePredFirst) {
  Mutant bug("drachsler.insert_links_pred_first");
  EXPECT_EQ(both_sides_agree_on_a_half_listed_insert<DrachslerBst<EpochBased<Q>>>(),
            "a later contains(20) from p missed a key an earlier one had found");
}

}  // namespace drachsler_scripted_test
