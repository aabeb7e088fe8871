// The Bronson et al. tree's optimistic search, scripted (architecture.md §5, "Scripted
// interleavings"). Its argument (bronson_avl.hpp, "How a search validates"): a search that read
// a child c of n goes on at c only after re-reading n's child pointer and n's version; a
// rotation that moved c down meanwhile (c's key range shrank: the key may no longer be below
// c) is caught there, and the search restarts. The scenario parks a search right after it read
// the root from the root holder, rotates the root down, and releases it; the seeded bug skips
// that re-read and must be reported on every run.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/bronson_avl.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace bronson_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::contents_problem;
using cdsb::testing::Mutant;
using cdsb::testing::Script;

using Q = cdsb::testing::QuarantineAllocator;

template <class Tree>
std::map<std::uint64_t, std::size_t> depths_of(const Tree& t) {
  std::map<std::uint64_t, std::size_t> depths;
  t.for_each_key_depth([&](std::uint64_t k, std::size_t depth) { depths[k] = depth; });
  return depths;
}

// Keys 20, 10, 30, 25, 35 inserted in order: 20 { 10, 30 { 25, 35 } }, balanced. contains(35)
// reads the root 20 from the holder and is parked. insert(40) under 35 makes 20's right side
// two levels taller: a single rotation moves 30 up and 20 down to its left (20 keeps 10 and
// takes 25: its range is now below 30, without 35). Released, the search's re-read of the
// holder's child finds 30, not 20: it restarts and finds 35.
template <class Tree>
std::string search_parked_while_its_node_is_rotated_down() {
  Tree t(2, ReclaimOptions{.eager = true});
  for (std::uint64_t k : {20, 10, 30, 25, 35}) t.insert(0, k, k);
  bool found = false;
  {
    Script script;
    const auto read = script.park_at("bronson.search.child_read", 1);  // its first: the root
    script.spawn(1, [&] { found = t.contains(1, 35); });
    script.wait_parked(read);
    t.insert(0, 40, 40);
    if (auto d = depths_of(t); d[30] >= d[20]) return "insert(40) did not rotate 20 down below 30";
    script.release(read);
    script.join(1);
  }
  if (!found) return "contains(35) missed 35 after the node its search stood on was rotated down";
  return contents_problem(t, "{10 20 25 30 35 40}");
}

template <class Tree>
class ScriptedBronson : public ::testing::Test {};
using BronsonTrees = ::testing::Types<BronsonAvl<NoReclaim<Q>>, BronsonAvl<EpochBased<Q>>>;
TYPED_TEST_SUITE(ScriptedBronson, BronsonTrees);

TYPED_TEST(ScriptedBronson, ASearchWhoseNodeIsRotatedDownRestarts) {
  Q::reset_leaks();
  EXPECT_EQ(search_parked_while_its_node_is_rotated_down<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TEST(ScriptedBronsonMutants, CatchesASearchThatSkipsTheRevalidation) {
  Mutant bug("bronson.search_skips_revalidation");
  EXPECT_EQ(search_parked_while_its_node_is_rotated_down<BronsonAvl<EpochBased<Q>>>(),
            "contains(35) missed 35 after the node its search stood on was rotated down");
}

}  // namespace bronson_scripted_test
