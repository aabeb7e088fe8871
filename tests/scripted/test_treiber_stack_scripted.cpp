// The Treiber stack's window, scripted (architecture.md §5, "Scripted interleavings"): a pop
// that read the top and its successor and has not yet CASed the head, while other threads pop
// that top and push. Its argument (treiber_stack.hpp): the popped node is not freed while a
// thread that read it may still CAS on it, so its address cannot come back as a new top (ABA);
// the parked CAS must fail on the changed head and the pop retry.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cdsbench/queue/treiber_stack.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "support/item_checks.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace treiber_stack_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::figure;
using cdsb::testing::items_of;
using cdsb::testing::Mutant;
using cdsb::testing::Script;
using cdsb::testing::show;

using Q = cdsb::testing::QuarantineAllocator;

// Stack 1 2 3 (3 on top). A pop read top 3 and its link to 2 and is parked before its CAS;
// the test's thread pops 3 (retiring it: eager reclamation scans at once) and pushes 4. While
// the pop is parked nothing may be freed (it holds 3); released, its CAS fails on head 4 and
// it pops 4.
template <class Stack>
std::string pop_parked_before_its_cas() {
  Stack s(2, ReclaimOptions{.eager = true});
  for (std::uint64_t v : {1, 2, 3}) s.push(0, v);
  std::optional<std::uint64_t> popped;
  {
    Script script;
    const auto loaded = script.park_at("treiber.pop.loaded", 1);
    script.spawn(1, [&] { popped = s.pop(1); });
    script.wait_parked(loaded);
    if (const auto v = s.pop(0); v != 3u) return "pop returned " + show(v) + ", not 3";
    s.push(0, 4);
    // The parked pop writes nothing while parked: the figures are ours to read.
    if (const std::uint64_t n = figure(s.stats(), "nodes_freed"); n != 0)
      return std::to_string(n) + " popped node(s) freed while a pop still held the top";
    script.release(loaded);
    script.join(1);
  }
  if (popped != 4u) return "the parked pop returned " + show(popped) + ", not 4";
  if (items_of(s) != "{1 2}") return "items " + items_of(s);
  if (const std::string bad = s.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

template <class Stack>
class ScriptedTreiber : public ::testing::Test {};
using TreiberStacks = ::testing::Types<TreiberStack<NoReclaim<Q>>, TreiberStack<EpochBased<Q>>,
                                       TreiberStack<HazardPointers<Q>>, TreiberStack<IntervalBased<Q>>>;
TYPED_TEST_SUITE(ScriptedTreiber, TreiberStacks);

TYPED_TEST(ScriptedTreiber, APopParkedBeforeItsCasKeepsItsTopAndRetries) {
  Q::reset_leaks();
  EXPECT_EQ(pop_parked_before_its_cas<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: pop frees the node it unlinked at once instead of retiring it (the memory
// could come back as a new top under the parked CAS: ABA).
TEST(ScriptedTreiberMutants, CatchesFreeingAPoppedNodeAtOnce) {
  Mutant bug("treiber.free_at_once");
  EXPECT_EQ(pop_parked_before_its_cas<TreiberStack<EpochBased<Q>>>(),
            "1 popped node(s) freed while a pop still held the top");
}

}  // namespace treiber_stack_scripted_test
