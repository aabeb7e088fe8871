// The elimination stack's collision slot, scripted (architecture.md §5, "Scripted
// interleavings"). Its argument (elimination_stack.hpp): while a slot holds a push's node only a
// pop can change it, and while it holds `taken` only that push can; so a push whose withdrawing
// CAS fails knows a pop has its item, and a pop reads a node only after its CAS took it.
//
// Each scenario starts the same way: stack {1}; a push of 5 (actor 1) is parked before its CAS
// on the head, the test's thread pushes 2, and the push, its CAS failed, offers its node in the
// collision slot (one slot: three threads) and is parked there, waiting.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "cdsbench/queue/elimination_stack.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "support/item_checks.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace elimination_stack_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::figure;
using cdsb::testing::items_of;
using cdsb::testing::Mutant;
using cdsb::testing::Script;
using cdsb::testing::show;

using Q = cdsb::testing::QuarantineAllocator;

// Brings actor 1's push of 5 to its offer (see the file's comment); returns the breakpoint it
// waits at.
template <class Stack>
Script::Breakpoint offer_five(Script& script, Stack& s) {
  // The push and the pops must meet: with more slots they could draw different ones.
  if (s.collision_slots() != 1) throw std::logic_error("the scenarios need one collision slot");
  s.push(0, 1);
  const auto loaded = script.park_at("elimination.push.loaded", 1);
  const auto offered = script.park_at("elimination.push.offered", 1);
  script.spawn(1, [&s] { s.push(1, 5); });
  script.wait_parked(loaded);
  s.push(0, 2);
  script.release(loaded);
  script.wait_parked(offered);
  return offered;
}

// What is left and the figures, once every actor has finished.
template <class Stack>
std::string check_end(const Stack& s, const std::string& items, std::uint64_t eliminated) {
  if (items_of(s) != items) return "items " + items_of(s) + ", not " + items;
  if (const std::uint64_t n = figure(s.stats(), "eliminated_pairs"); n != eliminated)
    return std::to_string(n) + " eliminated pairs, not " + std::to_string(eliminated);
  if (figure(s.stats(), "elimination_offers") != 1) return "not one offer";
  if (const std::string bad = s.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

// A pop whose CAS on the head fails (the test's thread pushes 3 under it) takes the waiting
// offer: it returns 5, the push returns without touching the head, and 5 is nowhere else.
template <class Stack>
std::string a_pop_takes_the_offer() {
  Stack s(3, ReclaimOptions{.eager = true});
  std::optional<std::uint64_t> popped;
  {
    Script script;
    const auto offered = offer_five(script, s);
    const auto pop_loaded = script.park_at("elimination.pop.loaded", 2);
    script.spawn(2, [&] { popped = s.pop(2); });
    script.wait_parked(pop_loaded);
    s.push(0, 3);
    script.release(pop_loaded);
    script.join(2);
    script.release(offered);
    script.join(1);
  }
  if (popped != 5u) return "the pop returned " + show(popped) + ", not the offered 5";
  return check_end(s, "{1 2 3}", 1);
}

// No pop comes: the push withdraws its offer and pushes on the head.
template <class Stack>
std::string an_offer_nobody_takes_is_withdrawn() {
  Stack s(3, ReclaimOptions{.eager = true});
  {
    Script script;
    const auto offered = offer_five(script, s);
    script.release(offered);
    script.join(1);
  }
  return check_end(s, "{1 2 5}", 0);
}

// A pop that saw the offer is parked before its CAS on the slot while the push withdraws it and
// pushes 5 on the head: the pop's CAS fails (it never reads the node) and it pops 5 from the head.
template <class Stack>
std::string a_pop_that_saw_a_withdrawn_offer_pops_the_head() {
  Stack s(3, ReclaimOptions{.eager = true});
  std::optional<std::uint64_t> popped;
  {
    Script script;
    const auto offered = offer_five(script, s);
    const auto pop_loaded = script.park_at("elimination.pop.loaded", 2);
    const auto saw = script.park_at("elimination.pop.saw_offer", 2);
    script.spawn(2, [&] { popped = s.pop(2); });
    script.wait_parked(pop_loaded);
    s.push(0, 3);
    script.release(pop_loaded);
    script.wait_parked(saw);
    script.release(offered);
    script.join(1);
    if (items_of(s) != "{1 2 3 5}") return "after the withdrawn offer: items " + items_of(s) + ", not {1 2 3 5}";
    script.release(saw);
    script.join(2);
  }
  if (popped != 5u) return "the pop returned " + show(popped) + ", not the top 5";
  return check_end(s, "{1 2 3}", 0);
}

template <class Stack>
class ScriptedElimination : public ::testing::Test {};
using EliminationStacks = ::testing::Types<EliminationStack<NoReclaim<Q>>, EliminationStack<EpochBased<Q>>,
                                           EliminationStack<HazardPointers<Q>>, EliminationStack<IntervalBased<Q>>>;
TYPED_TEST_SUITE(ScriptedElimination, EliminationStacks);

TYPED_TEST(ScriptedElimination, APopWhoseCasFailedTakesTheWaitingOffer) {
  Q::reset_leaks();
  EXPECT_EQ(a_pop_takes_the_offer<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedElimination, AnOfferNobodyTakesIsWithdrawnAndPushed) {
  Q::reset_leaks();
  EXPECT_EQ(an_offer_nobody_takes_is_withdrawn<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedElimination, APopThatSawAWithdrawnOfferPopsTheHead) {
  Q::reset_leaks();
  EXPECT_EQ(a_pop_that_saw_a_withdrawn_offer_pops_the_head<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: the push withdraws with a plain store, as if no pop could have taken its
// node, and pushes the node the pop took (and freed) on the head: the item is both popped and
// in the stack, its value the freed node's poison.
TEST(ScriptedEliminationMutants, CatchesWithdrawingWithoutTheCas) {
  Mutant bug("elimination.withdraw_blindly");
  const std::string got = a_pop_takes_the_offer<EliminationStack<EpochBased<Q>>>();
  EXPECT_EQ(got.rfind("items {1 2 3 ", 0), 0u) << got;
}

}  // namespace elimination_stack_scripted_test
