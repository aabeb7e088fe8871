// The lists' states that their correctness arguments name, scripted (architecture.md §5,
// "Scripted interleavings"): a node marked but not yet unlinked (logically deleted: absent to
// every other operation), and an update that found its position and has not yet linked or
// locked it (its CAS or its validation must notice a neighbour removed meanwhile). Each
// scenario returns its first violation ("" when there is none); with a seeded bug switched on
// (CDSB_MUTANT) the same scenario must report it, on every run.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/list/harris_michael.hpp"
#include "cdsbench/set/list/lazy.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace lists_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::figure;
using cdsb::testing::keys_of;
using cdsb::testing::Mutant;
using cdsb::testing::QuarantineAllocator;
using cdsb::testing::Script;

using Q = QuarantineAllocator;

// ---- Harris-Michael -----------------------------------------------------------------------

// An erase of 20 is parked between marking node 20 and unlinking it. To everyone else 20 is
// absent: contains misses it (and, as every traversal does, unlinks and retires it), erase
// fails, insert succeeds with a new node. The parked erase then still succeeds, and the marked
// node was retired exactly once (by the helper, not again by the eraser).
template <class List>
std::string hm_marked_node_is_absent() {
  List list(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {10, 20, 30}) list.insert(0, k, k);
  bool erased = false;
  {
    Script script;
    const auto marked = script.park_at("hm.erase.marked", 1);
    script.spawn(1, [&] { erased = list.erase(1, 20); });
    script.wait_parked(marked);
    if (list.contains(0, 20)) return "contains(20) found a marked node";
    if (list.erase(0, 20)) return "erase(20) succeeded on a marked node";
    if (!list.insert(0, 20, 21)) return "insert(20) failed beside a marked node";
    if (!list.contains(0, 20)) return "contains(20) missed the node inserted after the marked one";
    script.release(marked);
    script.join(1);
  }
  if (!erased) return "the parked erase(20) failed";
  if (keys_of(list) != "{10 20 30}") return "keys " + keys_of(list);
  if (const std::string bad = list.check_invariants(); !bad.empty()) return "invariants: " + bad;
  if (const std::uint64_t n = figure(list.stats(), "nodes_retired"); n != 1)
    return "the marked node was retired " + std::to_string(n) + " times";
  return "";
}

// An insert of 15 found its place (after 10, before 20) and is parked before its CAS; 10 is
// erased meanwhile. The mark in 10's link must fail the CAS, and the insert retry after head.
template <class List>
std::string hm_insert_after_a_removed_predecessor() {
  List list(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {10, 20}) list.insert(0, k, k);
  bool inserted = false;
  {
    Script script;
    const auto located = script.park_at("hm.insert.located", 1);
    script.spawn(1, [&] { inserted = list.insert(1, 15, 15); });
    script.wait_parked(located);
    if (!list.erase(0, 10)) return "erase(10) failed";
    script.release(located);
    script.join(1);
  }
  if (!inserted) return "insert(15) failed";
  if (keys_of(list) != "{15 20}") return "keys " + keys_of(list);
  if (const std::string bad = list.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

template <class List>
class ScriptedHarrisMichael : public ::testing::Test {};
using HarrisMichaelLists =
    ::testing::Types<HarrisMichaelList<NoReclaim<Q>>, HarrisMichaelList<EpochBased<Q>>,
                     HarrisMichaelList<HazardPointers<Q>>, HarrisMichaelList<IntervalBased<Q>>>;
TYPED_TEST_SUITE(ScriptedHarrisMichael, HarrisMichaelLists);

TYPED_TEST(ScriptedHarrisMichael, AMarkedNodeIsAbsentToEveryOtherOperation) {
  Q::reset_leaks();
  EXPECT_EQ(hm_marked_node_is_absent<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedHarrisMichael, AnInsertWhosePredecessorIsRemovedRetries) {
  Q::reset_leaks();
  EXPECT_EQ(hm_insert_after_a_removed_predecessor<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: a traversal that takes a marked node for a live one.
TEST(ScriptedHarrisMichaelMutants, CatchesAFindThatIgnoresTheMark) {
  Mutant bug("hm.find_ignores_mark");
  EXPECT_EQ(hm_marked_node_is_absent<HarrisMichaelList<EpochBased<Q>>>(), "contains(20) found a marked node");
}

// ---- lazy list ----------------------------------------------------------------------------

// An erase of 20 is parked between marking node 20 and unlinking it, holding the locks of 10
// and 20. contains (lock-free) must see the mark and answer false. An insert of 20 that found
// the marked node (parked there, then let go to wait for the locks) must, once the erase
// completes, fail its validation, retry and succeed.
template <class List>
std::string lazy_marked_node_is_absent() {
  List list(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {10, 20, 30}) list.insert(0, k, k);
  bool erased = false, reinserted = false;
  {
    Script script;
    const auto marked = script.park_at("lazy.erase.marked", 1);
    const auto located = script.park_at("lazy.insert.located", 2);
    script.spawn(1, [&] { erased = list.erase(1, 20); });
    script.wait_parked(marked);
    if (list.contains(0, 20)) return "contains(20) found a marked node";
    if (!list.contains(0, 10) || !list.contains(0, 30)) return "contains missed a neighbour of the marked node";
    script.spawn(2, [&] { reinserted = list.insert(2, 20, 21); });
    script.wait_parked(located);  // its traversal stopped at the marked node
    script.release(located);      // now it waits for the eraser's locks
    script.release(marked);
    script.join(1);
    script.join(2);
  }
  if (!erased) return "the parked erase(20) failed";
  if (!reinserted) return "insert(20) took the marked node for a present key";
  if (keys_of(list) != "{10 20 30}") return "keys " + keys_of(list);
  if (const std::string bad = list.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

// An insert of 15 found 10 and 20 without locks and is parked before locking them; 10 is
// erased meanwhile (marked and unlinked: its link still points to 20). Validation under the
// locks must see 10 marked and retry; linking 15 after 10 would lose it.
template <class List>
std::string lazy_insert_after_a_removed_predecessor() {
  List list(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {10, 20}) list.insert(0, k, k);
  bool inserted = false;
  {
    Script script;
    const auto located = script.park_at("lazy.insert.located", 1);
    script.spawn(1, [&] { inserted = list.insert(1, 15, 15); });
    script.wait_parked(located);
    if (!list.erase(0, 10)) return "erase(10) failed";
    script.release(located);
    script.join(1);
  }
  if (!inserted) return "insert(15) failed";
  if (keys_of(list) != "{15 20}") return "keys " + keys_of(list) + " after insert(15) succeeded";
  if (const std::string bad = list.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

template <class List>
class ScriptedLazy : public ::testing::Test {};
using LazyLists = ::testing::Types<LazyList<NoReclaim<Q>>, LazyList<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedLazy, LazyLists);

TYPED_TEST(ScriptedLazy, AMarkedNodeIsAbsentToContainsAndToAnInsertThatFoundIt) {
  Q::reset_leaks();
  EXPECT_EQ(lazy_marked_node_is_absent<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedLazy, AnInsertWhosePredecessorIsRemovedRevalidates) {
  Q::reset_leaks();
  EXPECT_EQ(lazy_insert_after_a_removed_predecessor<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The broken lists: the lazy list with `contains` ignoring the mark (the bug lincheck's small
// histories almost never show), and with validation ignoring the marks.
TEST(ScriptedLazyMutants, CatchesAContainsThatIgnoresTheMark) {
  Mutant bug("lazy.contains_ignores_mark");
  EXPECT_EQ(lazy_marked_node_is_absent<LazyList<EpochBased<Q>>>(), "contains(20) found a marked node");
}

TEST(ScriptedLazyMutants, CatchesAValidationThatIgnoresTheMarks) {
  Mutant bug("lazy.validate_ignores_marks");
  EXPECT_EQ(lazy_insert_after_a_removed_predecessor<LazyList<EpochBased<Q>>>(),
            "keys {20} after insert(15) succeeded");
}

}  // namespace lists_scripted_test
