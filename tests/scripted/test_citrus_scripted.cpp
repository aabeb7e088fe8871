// Citrus's grace period, scripted (architecture.md §5, "Scripted interleavings"). Its argument
// (citrus.hpp): a delete of a node with two children links a copy of the successor in the
// node's place, then waits for a grace period before unlinking the old successor, because a
// search for the successor's key that passed the node's place before the copy was linked may
// be heading for the old successor, and must still find it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/citrus.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace citrus_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::contents_problem;
using cdsb::testing::Mutant;
using cdsb::testing::Script;
using cdsb::testing::ScriptTimeout;

using Q = cdsb::testing::QuarantineAllocator;

// Tree 20{ 10, 30{ 25, - } }: erase(20) has two children, its successor is 25 (30's left).
// A contains(25) is parked at node 20, inside its read-side section. erase(20) links the copy
// of 25 in 20's place and is parked before its grace period: 25 is in the tree twice, every
// new search meets the copy. Released, the delete must wait in its grace period for the
// reader (it parks there); the reader, released, goes on from the old node 20 to 30 and 25.
template <class Tree>
std::string reader_heading_for_the_successor() {
  Tree t(3, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {20, 10, 30, 25}) t.insert(0, k, k);
  bool found = false, erased = false;
  {
    Script script;
    const auto reading = script.park_at("citrus.contains.visiting", 1);  // at node 20
    const auto copied = script.park_at("citrus.erase.copied", 2);
    const auto waiting = script.park_at("rcu.synchronize.waiting", 2);
    script.spawn(1, [&] { found = t.contains(1, 25); });
    script.wait_parked(reading);
    script.spawn(2, [&] { erased = t.erase(2, 20); });
    script.wait_parked(copied);
    if (!t.contains(0, 25)) return "contains(25) missed the successor's copy";
    if (t.contains(0, 20)) return "contains(20) found the node the copy replaced";
    script.release(copied);
    bool waited = true;
    try {
      script.wait_parked(waiting);  // the grace period waits for the parked reader
    } catch (const ScriptTimeout&) {
      waited = false;  // the delete finished: it did not wait (the reader's answer shows why that is wrong)
    }
    if (waited) script.release(waiting);
    script.release(reading);
    script.join(1);
    script.join(2);
    if (!found) return "a search for 25 that passed node 20 before the copy was linked missed 25";
    if (!waited) return "the delete ended without waiting for the reader";
  }
  if (!erased) return "erase(20) failed";
  return contents_problem(t, "{10 25 30}");
}

template <class Tree>
class ScriptedCitrus : public ::testing::Test {};
using CitrusTrees = ::testing::Types<CitrusBst<NoReclaim<Q>>, CitrusBst<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedCitrus, CitrusTrees);

TYPED_TEST(ScriptedCitrus, AReaderHeadingForTheSuccessorStillFindsIt) {
  Q::reset_leaks();
  EXPECT_EQ(reader_heading_for_the_successor<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: the delete unlinks the old successor without the grace period.
TEST(ScriptedCitrusMutants, CatchesSkippingTheGracePeriod) {
  Mutant bug("citrus.skip_grace_period");
  EXPECT_EQ(reader_heading_for_the_successor<CitrusBst<EpochBased<Q>>>(),
            "a search for 25 that passed node 20 before the copy was linked missed 25");
}

}  // namespace citrus_scripted_test
