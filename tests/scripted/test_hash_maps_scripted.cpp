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
//
// The wait-free map: an insert whose slot is toggled by another key's inserts and erases freezes
// it after max_failures failed attempts and finishes below it (without the freeze it would
// retry for as long as the toggling goes on); an insert at the deepest level that loses its CAS
// to an insert later erased reports that key present (one CAS, no retry); an assign whose node
// was moved down by an expansion follows it and writes there.
//
// The wait-free map's overflow chains (byte-string keys with equal hashes): an erase whose chain
// changed before its CAS rebuilds from the new head and keeps the tail; an insert that lost its
// CAS points its node at the new head.
//
// The seqlock map: a find that read a key whose slot is then given to another key reads the
// bucket again (else it would return the other key's value); a doubling that meets a home
// bucket held by an insert waits for it, and keeps the key that insert adds.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/hash/feldman_wait_free_map.hpp"
#include "cdsbench/set/hash/michael_hash_map.hpp"
#include "cdsbench/set/hash/seqlock_probe_map.hpp"
#include "cdsbench/set/hash/split_ordered_map.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace hash_maps_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::becomes_true;
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

// ---- the wait-free map --------------------------------------------------------------------

// The key as its own hash: a test picks which keys share a slot.
struct IdentityHash {
  std::uint64_t operator()(std::uint64_t k) const { return k; }
};
// Every key hashes to 0: keys differing only in their top 4 bits share all but the deepest level.
struct ZeroHash {
  std::uint64_t operator()(std::uint64_t) const { return 0; }
};

// Actor 1 inserts k; its head slot (2^8 slots, the hash the key) is shared by j = k + 256. Each
// time actor 1 is about to CAS the empty slot, the test's thread inserts j (the CAS fails);
// each time it is about to expand the slot around j, the test's thread erases j (that CAS fails
// too). After max_failures failures it must freeze the slot, expand it (j is absent: an empty
// array) and insert k one level down; it is given twice that many failures to do so.
template <class Map>
std::string insert_freezes_a_toggled_slot() {
  Map map(2, ReclaimOptions{.eager = true}, SizeHint{1});
  const std::uint64_t k = 1, j = k + 256;
  bool inserted = false;
  std::string problem;
  int failures = 0;
  {
    Script script;
    auto at_empty = script.park_at("fwf.insert.empty", 1, 1);
    script.spawn(1, [&] { inserted = map.insert(1, k, 10); });
    for (int round = 1;; ++round) {
      script.wait_parked(at_empty);
      if (figure(map.stats(), "freezes") == 1) {  // frozen and expanded: now one level down
        script.release(at_empty);
        break;
      }
      if (failures >= 2 * Map::max_failures) {
        problem = "the insert failed " + std::to_string(failures) + " times without freezing its slot";
        script.release(at_empty);  // j is absent: the CAS succeeds
        break;
      }
      map.insert(0, j, 20);
      const auto at_collision = script.park_at("fwf.insert.collision", 1, round);
      script.release(at_empty);
      script.wait_parked(at_collision);
      map.erase(0, j);
      at_empty = script.park_at("fwf.insert.empty", 1, round + 1);
      script.release(at_collision);
      failures += 2;
    }
    script.join(1);
  }
  if (!problem.empty()) return problem;
  if (failures != Map::max_failures) return "froze after " + std::to_string(failures) + " failures, not max_failures";
  if (!inserted || map.find(0, k) != 10) return "the insert of k did not take effect";
  if (figure(map.stats(), "max_steps") > static_cast<std::uint64_t>(map.steps_bound())) return "more steps than the bound";
  return contents_problem(map, "{1}");
}

// Keys 5 and 5 + 2^63 share every level but the deepest (the hash is 0; the key's top bits
// index the deepest level). Actor 1's find_or_insert(5, 100) is parked just before its CAS at
// the deepest level, having seen the slot empty; the test's thread inserts 5 with 200 and
// erases it. Released, the CAS fails on a dead node installed after actor 1 looked: 5 was
// present meanwhile, so it returns (200, not inserted) at once.
template <class Map>
std::string deepest_insert_reports_a_key_present_meanwhile() {
  Map map(2, ReclaimOptions{.eager = true}, SizeHint{1});
  const std::uint64_t k = 5, twin = k | std::uint64_t{1} << 63;
  map.insert(0, twin, 1);
  std::pair<std::uint64_t, bool> got{};
  {
    Script script;
    const auto at_cas = script.park_at("fwf.insert.deepest", 1);
    script.spawn(1, [&] { got = map.find_or_insert(1, k, 100); });
    script.wait_parked(at_cas);
    if (!map.insert(0, k, 200) || !map.erase(0, k)) return "insert or erase of 5 failed while actor 1 was parked";
    script.release(at_cas);
    script.join(1);
  }
  if (got != std::pair<std::uint64_t, bool>(200, false))
    return "find_or_insert returned (" + std::to_string(got.first) + ", " + (got.second ? "inserted" : "present") +
           "), not (200, present)";
  return contents_problem(map, "{" + std::to_string(twin) + "}");
}

// Actor 1's assign(1, 11) is parked with key 1's node found in the head slot; the test's thread
// inserts 257 (same head slot), which expands the slot and moves 1's node down. Released, the
// assign's CAS fails on the array: it must follow the node and write there.
template <class Map>
std::string assign_follows_its_node_down() {
  Map map(2, ReclaimOptions{.eager = true}, SizeHint{1});
  map.insert(0, 1, 10);
  bool assigned = false;
  {
    Script script;
    const auto found = script.park_at("fwf.assign.found", 1);
    script.spawn(1, [&] { assigned = map.assign(1, 1, 11); });
    script.wait_parked(found);
    if (!map.insert(0, 257, 20)) return "insert of 257 failed";
    script.release(found);
    script.join(1);
  }
  if (!assigned) return "the assign returned false";
  if (const auto v = map.find(0, 1); v != 11) return "find(1) is " + (v ? std::to_string(*v) : "absent") + " after assign(1, 11)";
  return contents_problem(map, "{1 257}");
}

// Actor 1's assign(1, 11) is parked with 1's node found; the test's thread assigns 1 the value
// 12 first. Released, actor 1's CAS fails on 12's node: its write is linearized just before the
// test's (1 was present throughout), so it returns true, and 12 stays.
template <class Map>
std::string assign_overtaken_by_assign() {
  Map map(2, ReclaimOptions{.eager = true}, SizeHint{1});
  map.insert(0, 1, 10);
  bool assigned = false;
  {
    Script script;
    const auto found = script.park_at("fwf.assign.found", 1);
    script.spawn(1, [&] { assigned = map.assign(1, 1, 11); });
    script.wait_parked(found);
    if (!map.assign(0, 1, 12)) return "the test's assign(1, 12) failed";
    script.release(found);
    script.join(1);
  }
  if (!assigned) return "the overtaken assign returned false although 1 was present throughout";
  if (const auto v = map.find(0, 1); v != 12) return "find(1) is " + (v ? std::to_string(*v) : "absent") + ", not 12";
  return contents_problem(map, "{1}");
}

template <class Map>
class ScriptedFeldmanWaitFreeMap : public ::testing::Test {};
using FeldmanMaps = ::testing::Types<FeldmanWaitFreeMap<NoReclaim<Q>, std::uint64_t, std::uint64_t, IdentityHash>,
                                     FeldmanWaitFreeMap<EpochBased<Q>, std::uint64_t, std::uint64_t, IdentityHash>>;
TYPED_TEST_SUITE(ScriptedFeldmanWaitFreeMap, FeldmanMaps);

TYPED_TEST(ScriptedFeldmanWaitFreeMap, AnInsertFreezesASlotToggledUnderIt) {
  Q::reset_leaks();
  EXPECT_EQ(insert_freezes_a_toggled_slot<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedFeldmanWaitFreeMap, AnAssignFollowsItsNodeMovedDownByAnExpansion) {
  Q::reset_leaks();
  EXPECT_EQ(assign_follows_its_node_down<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedFeldmanWaitFreeMap, AnAssignOvertakenByAnotherReturnsTrueAndKeepsTheLaterValue) {
  Q::reset_leaks();
  EXPECT_EQ(assign_overtaken_by_assign<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TEST(ScriptedFeldmanWaitFreeMap, AnInsertAtTheDeepestLevelReportsAKeyPresentMeanwhile) {
  using Map = FeldmanWaitFreeMap<EpochBased<Q>, std::uint64_t, std::uint64_t, ZeroHash>;
  Q::reset_leaks();
  EXPECT_EQ(deepest_insert_reports_a_key_present_meanwhile<Map>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bugs: no freeze (the insert retries for as long as the toggling lasts), an assign
// that takes an expansion for another write and gives up, and one that reports failure when
// another write overtook it.
TEST(ScriptedFeldmanWaitFreeMapMutants, CatchesAnInsertThatNeverFreezes) {
  Mutant bug("fwf.never_freeze");
  EXPECT_EQ((insert_freezes_a_toggled_slot<FeldmanWaitFreeMap<EpochBased<Q>, std::uint64_t, std::uint64_t, IdentityHash>>()),
            "the insert failed 16 times without freezing its slot");
}
TEST(ScriptedFeldmanWaitFreeMapMutants, CatchesAnAssignThatGivesUpOnAnExpansion) {
  Mutant bug("fwf.assign_gives_up_on_expansion");
  EXPECT_EQ((assign_follows_its_node_down<FeldmanWaitFreeMap<EpochBased<Q>, std::uint64_t, std::uint64_t, IdentityHash>>()),
            "find(1) is 10 after assign(1, 11)");
}
TEST(ScriptedFeldmanWaitFreeMapMutants, CatchesAnAssignThatFailsWhenOvertaken) {
  Mutant bug("fwf.assign_fails_when_overtaken");
  EXPECT_EQ((assign_overtaken_by_assign<FeldmanWaitFreeMap<EpochBased<Q>, std::uint64_t, std::uint64_t, IdentityHash>>()),
            "the overtaken assign returned false although 1 was present throughout");
}

// ---- the wait-free map's overflow chains (byte-string keys whose hashes are equal) --------

// Every byte string hashes alike: all keys share one chain at the deepest level.
struct SameHash {
  std::uint64_t operator()(std::string_view) const { return 0x5a5a012345678900ULL; }
};

// The keys of a byte-keyed map, sorted, as "{'' 'a' 'b'}".
template <class Map>
std::string byte_keys_of(const Map& map) {
  std::vector<std::string> keys;
  map.for_each_key([&](std::string_view k) { keys.emplace_back(k); });
  std::sort(keys.begin(), keys.end());
  std::string s = "{";
  for (const std::string& k : keys) {
    if (s.size() > 1) s += ' ';
    s += '\'';
    s += k;
    s += '\'';
  }
  return s += '}';
}

// The chain is c -> b -> a (each insert prepends). Actor 1's erase(b) is parked with its new
// chain built (a copy of c, then a, the tail it shares); the test's thread inserts d. Released,
// the erase's CAS fails on d's head: it frees its copies and rebuilds from d. The tail must be
// kept: a is still present after.
template <class Map>
std::string chain_erase_rebuilds_after_an_insert() {
  Map map(2, ReclaimOptions{.eager = true}, SizeHint{1});
  for (std::string_view k : {"a", "b", "c"}) map.insert(0, k, 1);
  bool erased = false;
  {
    Script script;
    const auto built = script.park_at("fwf.chain.rewrite", 1);
    script.spawn(1, [&] { erased = map.erase(1, "b"); });
    script.wait_parked(built);
    if (!map.insert(0, "d", 2)) return "insert of d failed while the erase was parked";
    script.release(built);
    script.join(1);
  }
  if (!erased) return "erase(b) returned false";
  if (const std::string got = byte_keys_of(map); got != "{'a' 'c' 'd'}") return "keys " + got;
  return map.check_invariants();
}

// The chain is a. Actor 1's insert(x) is parked with its node pointing at a; the test's thread
// inserts the empty key (-> a). Released, the CAS fails on the new head: the retry must point x
// at it. (The empty key owns no bytes: a node a bug loses is freed, and counted, by the quarantine
// allocator, and leaves nothing for LeakSanitizer.)
template <class Map>
std::string chain_insert_retries_from_the_new_head() {
  Map map(2, ReclaimOptions{.eager = true}, SizeHint{1});
  map.insert(0, "a", 1);
  bool inserted = false;
  {
    Script script;
    const auto ready = script.park_at("fwf.insert.chain", 1);
    script.spawn(1, [&] { inserted = map.insert(1, "x", 2); });
    script.wait_parked(ready);
    if (!map.insert(0, "", 3)) return "insert of the empty key failed while the insert of x was parked";
    script.release(ready);
    script.join(1);
  }
  if (!inserted) return "insert(x) returned false";
  if (const std::string got = byte_keys_of(map); got != "{'' 'a' 'x'}") return "keys " + got;
  return map.check_invariants();
}

template <class Map>
class ScriptedFeldmanOverflowChains : public ::testing::Test {};
using FeldmanByteMaps = ::testing::Types<FeldmanWaitFreeMap<NoReclaim<Q>, std::string_view, std::uint64_t, SameHash>,
                                         FeldmanWaitFreeMap<EpochBased<Q>, std::string_view, std::uint64_t, SameHash>>;
TYPED_TEST_SUITE(ScriptedFeldmanOverflowChains, FeldmanByteMaps);

TYPED_TEST(ScriptedFeldmanOverflowChains, AnEraseOvertakenByAnInsertRebuildsAndKeepsTheTail) {
  Q::reset_leaks();
  EXPECT_EQ(chain_erase_rebuilds_after_an_insert<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}
TYPED_TEST(ScriptedFeldmanOverflowChains, AnInsertOvertakenByAnotherRetriesFromTheNewHead) {
  Q::reset_leaks();
  EXPECT_EQ(chain_insert_retries_from_the_new_head<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// A rewrite whose allocations fail mid-way (assign and erase copy the nodes in front of their
// key) frees the copies it made and leaves the chain as it was.
TYPED_TEST(ScriptedFeldmanOverflowChains, ARewriteWhoseAllocationFailsFreesItsCopies) {
  Q::reset_leaks();
  {
    TypeParam map(1);
    for (const char* k : {"a", "b", "c"}) ASSERT_TRUE(map.insert(0, k, 1));  // the chain c -> b -> a
    Q::fail_allocation_after(1);  // assign(a) makes a, then the copy of b fails
    EXPECT_THROW(map.assign(0, "a", 2), std::bad_alloc);
    Q::fail_allocation_after(0);  // erase(a) fails at its first copy
    EXPECT_THROW(map.erase(0, "a"), std::bad_alloc);
    EXPECT_EQ(byte_keys_of(map), "{'a' 'b' 'c'}");
    EXPECT_EQ(map.find(0, "a"), std::optional<std::uint64_t>(1));
    EXPECT_TRUE(map.assign(0, "a", 3));  // and it still works
    EXPECT_EQ(map.find(0, "a"), std::optional<std::uint64_t>(3));
  }
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bugs: a rewrite that drops the chain's tail, an insert that retries with the head
// it first read.
using FeldmanBytes = FeldmanWaitFreeMap<EpochBased<Q>, std::string_view, std::uint64_t, SameHash>;
TEST(ScriptedFeldmanOverflowChainsMutants, CatchesARewriteThatDropsTheTail) {
  Mutant bug("fwf.chain_rewrite_drops_tail");
  EXPECT_EQ(chain_erase_rebuilds_after_an_insert<FeldmanBytes>(), "keys {'c' 'd'}");
}
TEST(ScriptedFeldmanOverflowChainsMutants, CatchesAnInsertThatKeepsAStaleNext) {
  Mutant bug("fwf.chain_insert_keeps_stale_next");
  EXPECT_EQ(chain_insert_retries_from_the_new_head<FeldmanBytes>(), "keys {'a' 'x'}");
}

// ---- the seqlock map ----------------------------------------------------------------------

// Actor 1's find(1) is parked with key 1 matched in its slot, its value not yet read. The test's
// thread erases 1 and inserts 17 (same home bucket of 16, the key its own hash), which takes the
// freed slot with value 170. Released, the find must see the bucket's version changed, read it
// again, and return absent, never 170.
template <class Map>
std::string find_rereads_a_bucket_changed_under_it() {
  Map map(2, ReclaimOptions{.eager = true}, SizeHint{1});
  if (map.bucket_count() != 16) return "the map has " + std::to_string(map.bucket_count()) + " buckets, not 16";
  map.insert(0, 1, 10);
  std::optional<std::uint64_t> found{0};
  {
    Script script;
    const auto matched = script.park_at("spm.find.key_matched", 1);
    script.spawn(1, [&] { found = map.find(1, 1); });
    script.wait_parked(matched);
    if (!map.erase(0, 1) || !map.insert(0, 17, 170)) return "erase of 1 or insert of 17 failed";
    script.release(matched);
    script.join(1);
  }
  if (found) return "find(1) returned " + std::to_string(*found) + " after 1 was erased and 17 took its slot";
  return contents_problem(map, "{17}");
}

// Actor 1's insert of 1 is parked holding bucket 1 (of 16; the key its own hash). Actor 2
// inserts 40 keys none of which is homed in bucket 1 (bucket 1 has room, so none is placed
// there either): past 36 (3/4 of 48 slots) it doubles the table, and the doubling waits for
// bucket 1. Released, actor 1 adds its key to the old table, the doubling (parked once all
// buckets are locked, to show it ran) carries it over, and the new table holds all 41 keys.
template <class Map>
std::string doubling_waits_for_a_held_bucket() {
  Map map(3, ReclaimOptions{.eager = true}, SizeHint{1});
  std::atomic<bool> second_done{false};
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 2; keys.size() < 40; ++k)
    if (k % 16 != 1) keys.push_back(k);
  {
    Script script;
    const auto locked = script.park_at("spm.insert.home_locked", 1);
    const auto doubling = script.park_at("spm.grow.all_locked", 2);
    script.spawn(1, [&] { map.insert(1, 1, 1); });
    script.wait_parked(locked);
    script.spawn(2, [&] {
      for (std::uint64_t k : keys) map.insert(2, k, k);
      second_done.store(true, std::memory_order_release);
    });
    if (becomes_true(second_done)) return "actor 2's inserts finished while actor 1 held bucket 1";
    script.release(locked);
    script.join(1);
    script.wait_parked(doubling);
    script.release(doubling);
    script.join(2);
  }
  if (map.find(0, 1) != 1) return "key 1, inserted while the doubling waited, is missing after it";
  for (std::uint64_t k : keys)
    if (map.find(0, k) != k) return "key " + std::to_string(k) + " is missing after the doubling";
  if (map.bucket_count() != 32) return "the table has " + std::to_string(map.bucket_count()) + " buckets, not 32";
  if (const std::string bad = map.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

// The test's thread fills the 16-bucket table to 3/4 (36 keys); actors 1 and 2 each insert two
// more (a thread checks the count at every second insert of its own), pass the mark and park
// at the start of their doubling of the same table. Actor 2, released first, doubles and parks
// with every bucket locked; actor 1, released then, must wait for bucket 0 without allocating
// a table of its own, then find it moved and leave: one doubling (to 32 buckets), and never
// more held than the old table and the new one.
template <class Map>
std::string a_second_doubling_allocates_nothing() {
  Map map(3, ReclaimOptions{.eager = true}, SizeHint{1});
  for (std::uint64_t k = 100; k < 136; ++k) map.insert(0, k, k);
  if (map.bucket_count() != 16) return "the map has " + std::to_string(map.bucket_count()) + " buckets, not 16";
  const std::uint64_t old_table = figure(map.stats(), "bytes_held");
  const std::uint64_t both_tables = 2 * old_table + 16 * Map::bucket_bytes;
  {
    Script script;
    const auto first = script.park_at("spm.grow.begin", 1), second = script.park_at("spm.grow.begin", 2);
    const auto doubling = script.park_at("spm.grow.all_locked", 2);
    script.spawn(1, [&] { map.insert(1, 200, 200), map.insert(1, 201, 201); });
    script.wait_parked(first);
    script.spawn(2, [&] { map.insert(2, 202, 202), map.insert(2, 203, 203); });
    script.wait_parked(second);
    script.release(second);
    script.wait_parked(doubling);
    script.release(first);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // time enough to allocate, were it to
    if (const std::uint64_t held = figure(map.stats(), "bytes_held"); held != both_tables)
      return "while one doubling held every bucket the map held " + std::to_string(held) + " bytes, not the " +
             std::to_string(both_tables) + " of the old and the new table";
    script.release(doubling);
    script.join(1);
    script.join(2);
  }
  if (map.bucket_count() != 32) return "the table has " + std::to_string(map.bucket_count()) + " buckets, not 32";
  if (const std::uint64_t peak = figure(map.stats(), "bytes_held_peak"); peak != both_tables)
    return "the peak is " + std::to_string(peak) + " bytes, not " + std::to_string(both_tables);
  for (std::uint64_t k = 100; k < 204; k = k == 135 ? 200 : k + 1)
    if (map.find(0, k) != k) return "key " + std::to_string(k) + " is missing after the doubling";
  if (const std::string bad = map.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

template <class Map>
class ScriptedSeqlockProbeMap : public ::testing::Test {};
using SeqlockMaps = ::testing::Types<SeqlockProbeMap<NoReclaim<Q>, std::uint64_t, IdentityHash>, SeqlockProbeMap<EpochBased<Q>, std::uint64_t, IdentityHash>>;
TYPED_TEST_SUITE(ScriptedSeqlockProbeMap, SeqlockMaps);

TYPED_TEST(ScriptedSeqlockProbeMap, AFindRereadsABucketChangedUnderIt) {
  Q::reset_leaks();
  EXPECT_EQ(find_rereads_a_bucket_changed_under_it<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedSeqlockProbeMap, ADoublingWaitsForAHeldBucketAndKeepsItsKey) {
  Q::reset_leaks();
  EXPECT_EQ(doubling_waits_for_a_held_bucket<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

TYPED_TEST(ScriptedSeqlockProbeMap, ASecondDoublingWaitsAndAllocatesNothing) {
  Q::reset_leaks();
  EXPECT_EQ(a_second_doubling_allocates_nothing<TypeParam>(), "");
  EXPECT_EQ(Q::leaked(), 0);
}

// The seeded bug: a find that does not check the version again returns a torn read.
TEST(ScriptedSeqlockProbeMapMutants, CatchesAFindThatSkipsValidation) {
  Mutant bug("spm.find_skips_validation");
  EXPECT_EQ((find_rereads_a_bucket_changed_under_it<SeqlockProbeMap<EpochBased<Q>, std::uint64_t, IdentityHash>>()),
            "find(1) returned 170 after 1 was erased and 17 took its slot");
}

}  // namespace hash_maps_scripted_test
