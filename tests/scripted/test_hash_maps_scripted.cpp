// The lock-free hash maps, scripted (architecture.md §5, "Scripted interleavings"). Their
// chains run the Harris-Michael list's algorithm, whose states test_lists_scripted.cpp
// scripts (with its mutants); here the maps' own operations meet them.
//
// Michael's map (one bucket, so that every key shares one chain): a node marked but not yet
// unlinked is absent to find, assign and find_or_insert; an assign, or a find, that found its
// node before an erase marked it touches the removed node's value (it is linearized just before
// the erase), which stays allocated meanwhile, and never the node a later insert links.
//
// The split-ordered map: two operations initialise one bucket at once and link one sentinel
// between them (whichever step the loser is parked at); an insert that chose its bucket before
// the table doubled (and a new bucket's sentinel was linked inside its run) still puts its item
// where the new bucket finds it; erases counted before their inserts never grow the table.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/hash/michael_hash_map.hpp"
#include "cdsbench/set/hash/split_ordered_map.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::contents_problem;
using cdsb::testing::figure;
using cdsb::testing::Mutant;
using cdsb::testing::QuarantineAllocator;
using cdsb::testing::Script;

using Q = QuarantineAllocator;

template <class Map>
Map one_bucket_map() {
  return Map(3, ReclaimOptions{.eager = true}, SizeHint{1});
}

// An erase of 20 is parked between marking its node and unlinking it. To the map's other
// operations 20 is absent: find misses it, assign fails, find_or_insert (which unlinks the
// marked node on its way) inserts a new one; the parked erase then completes through its
// fallback find.
template <class Map>
std::string marked_entry_is_absent() {
  Map map = one_bucket_map<Map>();
  if (map.bucket_count() != 1) return "the map has " + std::to_string(map.bucket_count()) + " buckets, not 1";
  for (std::uint64_t k : {10, 20, 30}) map.insert(0, k, k * 10);
  bool erased = false;
  {
    Script script;
    const auto marked = script.park_at("hm.erase.marked", 1);
    script.spawn(1, [&] { erased = map.erase(1, 20); });
    script.wait_parked(marked);
    if (map.find(0, 20)) return "find(20) found a marked entry";
    if (map.assign(0, 20, 7)) return "assign(20) succeeded on a marked entry";
    if (map.find_or_insert(0, 20, 201) != std::pair<std::uint64_t, bool>{201, true})
      return "find_or_insert(20) did not insert beside a marked entry";
    script.release(marked);
    script.join(1);
  }
  if (!erased) return "the parked erase(20) failed";
  if (const auto v = map.find(0, 20); v != 201) return "find(20) after the erase: " + (v ? std::to_string(*v) : "absent");
  return contents_problem(map, "{10 20 30}");
}

// An assign of 20 is parked after finding 20's node unmarked, before its store. Another
// thread erases 20 (with eager reclamation: the node would be freed at once if the assign's
// guard did not hold it) and inserts 20 again with value 200. Released, the assign stores into
// the removed node and returns true (linearized just before the erase); the new node keeps 200.
template <class Map>
std::string assign_overtaken_by_erase() {
  Map map = one_bucket_map<Map>();
  for (std::uint64_t k : {10, 20, 30}) map.insert(0, k, k * 10);
  bool assigned = false;
  {
    Script script;
    const auto located = script.park_at("hm.assign.located", 1);
    script.spawn(1, [&] { assigned = map.assign(1, 20, 999); });
    script.wait_parked(located);
    const std::uint64_t freed = figure(map.stats(), "nodes_freed");
    if (!map.erase(0, 20)) return "erase(20) failed while the assign was parked";
    if (!map.insert(0, 20, 200)) return "insert(20) failed after the erase";
    if (figure(map.stats(), "nodes_freed") != freed) return "the node the parked assign holds was freed";
    script.release(located);
    script.join(1);
  }
  if (!assigned) return "the parked assign(20) failed";
  if (const auto v = map.find(0, 20); v != 200) return "find(20): " + (v ? std::to_string(*v) : "absent") + ", not 200";
  return contents_problem(map, "{10 20 30}");
}

// A find of 20 (value 200) is parked after finding 20's node unmarked, before reading its
// value. Another thread erases 20, inserts it again with 300 and assigns it 301. Released, the
// find returns the removed node's value, 200 (linearized just before the erase), never the new
// node's; the next find returns 301.
template <class Map>
std::string find_overtaken_by_erase() {
  Map map = one_bucket_map<Map>();
  for (std::uint64_t k : {10, 20, 30}) map.insert(0, k, k * 10);
  std::optional<std::uint64_t> found;
  {
    Script script;
    const auto located = script.park_at("hm.find_value.located", 1);
    script.spawn(1, [&] { found = map.find(1, 20); });
    script.wait_parked(located);
    if (!map.erase(0, 20) || !map.insert(0, 20, 300) || !map.assign(0, 20, 301))
      return "erase, insert or assign of 20 failed while the find was parked";
    script.release(located);
    script.join(1);
  }
  if (found != 200) return "the parked find(20) returned " + (found ? std::to_string(*found) : "absent") + ", not 200";
  if (const auto v = map.find(0, 20); v != 301) return "find(20): " + (v ? std::to_string(*v) : "absent") + ", not 301";
  return contents_problem(map, "{10 20 30}");
}

template <class Map>
class ScriptedMichaelHashMap : public ::testing::Test {};
using MichaelHashMaps = ::testing::Types<MichaelHashMap<NoReclaim<Q>>, MichaelHashMap<EpochBased<Q>>,
                                         MichaelHashMap<HazardPointers<Q>>, MichaelHashMap<IntervalBased<Q>>>;
TYPED_TEST_SUITE(ScriptedMichaelHashMap, MichaelHashMaps);

TYPED_TEST(ScriptedMichaelHashMap, AMarkedEntryIsAbsentToFindAssignAndFindOrInsert) {
  Q::reset_leaks();
  EXPECT_EQ(marked_entry_is_absent<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedMichaelHashMap, AnAssignOvertakenByAnEraseNeverWritesTheNewEntry) {
  Q::reset_leaks();
  EXPECT_EQ(assign_overtaken_by_erase<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedMichaelHashMap, AFindOvertakenByAnEraseReturnsTheValueBeforeIt) {
  Q::reset_leaks();
  EXPECT_EQ(find_overtaken_by_erase<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: a chain traversal that takes a marked node for a live one.
TEST(ScriptedMichaelHashMapMutants, CatchesAFindThatIgnoresTheMark) {
  Mutant bug("hm.find_ignores_mark");
  EXPECT_EQ(marked_entry_is_absent<MichaelHashMap<EpochBased<Q>>>(), "find(20) found a marked entry");
}

// ---- split-ordered map --------------------------------------------------------------------

// The n-th key (from 1 up) whose hash ends in the bits `low` (modulo 2^bits), skipping `skip`.
std::uint64_t key_with_hash_ending(std::uint64_t low, int bits, int n, std::uint64_t skip = 0) {
  for (std::uint64_t k = 1;; ++k)
    if (k != skip && (hash::Even{}(k) & ((std::uint64_t{1} << bits) - 1)) == low && --n == 0) return k;
}

// Two inserts into bucket 1 of a new map (2 buckets, bucket 1 not yet initialised): one is
// parked at `point` while it initialises bucket 1 (after finding bucket 0 ready, or with its
// sentinel made and its position found, before its CAS); the other initialises bucket 1
// meanwhile. Released, the first finds that sentinel (losing its CAS and freeing its own
// unpublished one, in the second case) and uses it.
template <class Map>
std::string racing_initialisations_link_one_sentinel(const char* point) {
  Map map(3, ReclaimOptions{.eager = true});
  const std::uint64_t first = key_with_hash_ending(1, 1, 1), second = key_with_hash_ending(1, 1, 2);
  bool inserted = false;
  {
    Script script;
    const auto ready = script.park_at(point, 1);
    script.spawn(1, [&] { inserted = map.insert(1, first, 10); });
    script.wait_parked(ready);
    if (!map.insert(0, second, 20)) return "insert of the second key failed";
    if (figure(map.stats(), "buckets_initialised") != 2) return "bucket 1 not initialised by the second insert";
    script.release(ready);
    script.join(1);
  }
  if (!inserted) return "the parked insert failed";
  if (map.find(0, first) != 10 || map.find(0, second) != 20) return "a key is missing after the race";
  if (const std::uint64_t n = figure(map.stats(), "buckets_initialised"); n != 2)
    return std::to_string(n) + " sentinels linked for 2 buckets";
  if (const std::string bad = map.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

// An insert of k (hash ending in binary 11) chose bucket 1 of a 2-bucket table and is parked
// there. The table then doubles, and an insert into bucket 3 links bucket 3's sentinel inside
// bucket 1's run. Released, the insert walks from bucket 1's sentinel past bucket 3's and links
// k in split order: a find of k, which now starts at bucket 3, finds it.
template <class Map>
std::string insert_from_a_bucket_split_meanwhile() {
  Map map(3, ReclaimOptions{.eager = true});
  const std::uint64_t k = key_with_hash_ending(3, 2, 1), other_of_3 = key_with_hash_ending(3, 2, 2);
  map.insert(0, key_with_hash_ending(1, 2, 1), 1);  // bucket 1 initialised
  bool inserted = false;
  {
    Script script;
    const auto chosen = script.park_at("so.bucket.chosen", 1);
    script.spawn(1, [&] { inserted = map.insert(1, k, 99); });
    script.wait_parked(chosen);
    for (int n = 1; map.bucket_count() < 4; ++n) map.insert(0, key_with_hash_ending(0, 2, n), 0);
    if (!map.insert(0, other_of_3, 3)) return "insert into bucket 3 failed";
    script.release(chosen);
    script.join(1);
  }
  if (!inserted) return "the parked insert failed";
  if (map.find(0, k) != 99) return "find(k) from bucket 3 misses the item linked from bucket 1";
  if (map.find(0, other_of_3) != 3) return "bucket 3's other key is missing";
  if (const std::string bad = map.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

// Two inserts (actors 1 and 2) are parked after linking their items, before counting them; the
// test's thread erases both keys, so the count goes to -2. Inserting and erasing a third key a
// few times must leave the table at 2 buckets: a count below zero is not a reason to grow.
template <class Map>
std::string erases_counted_before_their_inserts() {
  Map map(4, ReclaimOptions{.eager = true});
  const std::uint64_t a = key_with_hash_ending(0, 0, 1), b = key_with_hash_ending(0, 0, 2),
                      c = key_with_hash_ending(0, 0, 3);
  {
    Script script;
    const auto linked_a = script.park_at("so.insert.linked", 1), linked_b = script.park_at("so.insert.linked", 2);
    script.spawn(1, [&] { map.insert(1, a, 1); });
    script.spawn(2, [&] { map.insert(2, b, 2); });
    script.wait_parked(linked_a);
    script.wait_parked(linked_b);
    if (!map.erase(0, a) || !map.erase(0, b)) return "erase of a parked insert's key failed";
    for (int round = 0; round < 3; ++round) {
      map.insert(0, c, 3);
      if (map.bucket_count() != 2)
        return "the table grew to " + std::to_string(map.bucket_count()) + " buckets with at most 1 item";
      map.erase(0, c);
    }
    script.release(linked_a);
    script.release(linked_b);
    script.join(1);
    script.join(2);
  }
  if (map.bucket_count() != 2) return "the table grew to " + std::to_string(map.bucket_count()) + " buckets";
  return contents_problem(map, "{}");
}

template <class Map>
class ScriptedSplitOrderedMap : public ::testing::Test {};
using SplitOrderedMaps = ::testing::Types<SplitOrderedMap<NoReclaim<Q>>, SplitOrderedMap<EpochBased<Q>>,
                                          SplitOrderedMap<HazardPointers<Q>>, SplitOrderedMap<IntervalBased<Q>>>;
TYPED_TEST_SUITE(ScriptedSplitOrderedMap, SplitOrderedMaps);

TYPED_TEST(ScriptedSplitOrderedMap, RacingInitialisationsOfABucketLinkOneSentinel) {
  for (const char* point : {"so.initialise.parent_ready", "hm.insert.located"}) {
    Q::reset_leaks();
    EXPECT_EQ(racing_initialisations_link_one_sentinel<TypeParam>(point), "") << point;
    EXPECT_EQ(Q::leaked(), 0) << point;
  }
}

TYPED_TEST(ScriptedSplitOrderedMap, ErasesCountedBeforeTheirInsertsNeverGrowTheTable) {
  Q::reset_leaks();
  EXPECT_EQ(erases_counted_before_their_inserts<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: the count read as unsigned, so a negative count looks huge.
TEST(ScriptedSplitOrderedMapMutants, CatchesACountReadAsUnsigned) {
  Mutant bug("so.count_read_unsigned");
  EXPECT_EQ(erases_counted_before_their_inserts<SplitOrderedMap<EpochBased<Q>>>(),
            "the table grew to 4 buckets with at most 1 item");
}

TYPED_TEST(ScriptedSplitOrderedMap, AnInsertFromABucketSplitMeanwhileIsFoundFromTheNewBucket) {
  Q::reset_leaks();
  EXPECT_EQ(insert_from_a_bucket_split_meanwhile<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

}  // namespace
