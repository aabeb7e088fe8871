// The wait-free queue's helping and reclamation, scripted (architecture.md §5, "Scripted
// interleavings"). Its argument (wait_free_queue.hpp): a thread stalled in its slow path does
// not stall the queue, and its request is completed by others while it is parked: its enqueue's
// value is placed, committed and dequeued, its dequeue's value handed to it; a thread parked
// anywhere in an operation holds a floor, and no segment at or after it is freed until it
// leaves, however far the queue moves on. And the two interleavings an adversarial review found
// losing an item (a claim's failure misread; a stale placement taking a handle's later request).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cdsbench/queue/wait_free_queue.hpp"
#include "support/item_checks.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace wait_free_queue_scripted_test {

using namespace cdsb;
using cdsb::testing::figure;
using cdsb::testing::items_of;
using cdsb::testing::Mutant;
using cdsb::testing::Script;
using cdsb::testing::show;

// One fast-path try: a failed try goes to the slow path at once.
using Queue = WaitFreeQueue<1, 1>;

// An empty dequeue marks cell 0 unusable (and looks at actor 1's enqueue request: none yet); an
// enqueue of 7 draws index 0, fails there, publishes its request and is parked. The test's
// thread dequeues: each cell it finds empty it marks, looking at the next peer's request, round
// robin. Its first dequeue looks at its own (none) and finds the queue empty; its second looks
// at actor 1's, places it in its cell, claims and commits it, and returns 7, all while the
// enqueue is parked. Released, the enqueue finds its request done and returns.
TEST(ScriptedWaitFreeQueue, AStalledEnqueuesValueIsPlacedAndDequeuedByOthers) {
  Queue q(2);
  ASSERT_EQ(q.dequeue(0), std::nullopt);
  {
    Script script;
    const auto published = script.park_at("wfq.enqueue.published", 1);
    script.spawn(1, [&] { q.enqueue(1, 7); });
    script.wait_parked(published);
    EXPECT_EQ(q.dequeue(0), std::nullopt);
    EXPECT_EQ(show(q.dequeue(0)), "7") << "the parked enqueue's value, which another dequeue must place and take";
    EXPECT_EQ(q.dequeue(0), std::nullopt);
    script.release(published);
    script.join(1);
  }
  EXPECT_EQ(items_of(q), "{}");
  EXPECT_EQ(figure(q.stats(), "slow_enqueues"), 1u);
  EXPECT_EQ(q.check_invariants(), "");
}

// An enqueue of 5 drew index 0 and is parked before storing its value; a dequeue draws index 0,
// finds nothing, marks the cell and (T = 1 > 0: not empty) fails its one fast try, publishes
// its request and is parked. The enqueue, released, fails in cell 0 and lands 5 at index 1 by
// its slow path; the test's thread enqueues 6 and 8. Its first dequeue takes 5 and helps actor 1
// (its round robin starts there; actor 1 has no dequeue request: nothing to do), its second
// takes 6 and helps actor 2: the parked dequeue's search passes the taken cells and claims 8
// for it. So the test's third dequeue finds 8 claimed (its one fast try fails), and its own
// slow path finds the queue empty, while actor 2 is still parked; actor 2, released, returns 8.
TEST(ScriptedWaitFreeQueue, AStalledDequeueIsHandedAValueByOthers) {
  Queue q(3);
  std::optional<std::uint64_t> parked_result;
  {
    Script script;
    const auto drew = script.park_at("wfq.enqueue.drew", 1);
    const auto published = script.park_at("wfq.dequeue.published", 2);
    script.spawn(1, [&] { q.enqueue(1, 5); });
    script.wait_parked(drew);
    script.spawn(2, [&] { parked_result = q.dequeue(2); });
    script.wait_parked(published);
    script.release(drew);
    script.join(1);
    q.enqueue(0, 6);
    q.enqueue(0, 8);
    EXPECT_EQ(show(q.dequeue(0)), "5");
    EXPECT_EQ(show(q.dequeue(0)), "6");
    EXPECT_EQ(q.dequeue(0), std::nullopt) << "8 should have gone to the parked dequeue's request";
    script.release(published);
    script.join(2);
  }
  EXPECT_EQ(show(parked_result), "8");
  EXPECT_EQ(figure(q.stats(), "slow_dequeues"), 2u);
  EXPECT_EQ(items_of(q), "{}");
  EXPECT_EQ(q.check_invariants(), "");
}

// Found by review: a dequeue that read a placed request while it was pending, and whose claim
// then fails because the enqueuer claimed this very cell, must see that claim (the state the
// failed CAS returns) and commit the value. Actors: the enqueuer E = 0, the dequeuer D = 1.
// An empty dequeue marks cell 0; E fails there and, in its slow path, reserves cell 1 (still
// empty) and is parked before claiming it. D draws cell 1, marks it, reads E's pending request
// and is parked. E claims cell 1 and is parked before committing; D's claim fails. Then D must
// commit and return 7 (or leave 7 for a later dequeue); a D that tests the state it read before
// the CAS returns nothing here and the 7 E commits later sits in a cell every dequeue passed.
std::string failed_claim_sees_the_claim() {
  WaitFreeQueue<2, 1> q(2);
  if (q.dequeue(1)) return "the first dequeue found an item in an empty queue";
  std::optional<std::uint64_t> d;
  {
    Script script;
    const auto reserved = script.park_at("wfq.enqueue.reserved", 0);
    const auto claimed = script.park_at("wfq.enqueue.claimed", 0);
    const auto read = script.park_at("wfq.help_enq.read_request", 1);
    script.spawn(0, [&] { q.enqueue(0, 7); });
    script.wait_parked(reserved);
    script.spawn(1, [&] { d = q.dequeue(1); });
    script.wait_parked(read);
    script.release(reserved);
    script.wait_parked(claimed);
    script.release(read);
    script.join(1);
    script.release(claimed);
    script.join(0);
  }
  const std::optional<std::uint64_t> next = q.dequeue(0);
  if (d != 7u && next != 7u) return "7 was lost: the dequeue returned " + show(d) + ", the next one " + show(next);
  if (const std::string bad = q.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

TEST(ScriptedWaitFreeQueue, ADequeueWhoseClaimFailsSeesTheEnqueuersClaim) { EXPECT_EQ(failed_claim_sees_the_claim(), ""); }

TEST(ScriptedWaitFreeQueueMutants, CatchesAClaimTestedOnTheStateReadBeforeIt) {
  Mutant bug("wfq.stale_claim_state");
  EXPECT_EQ(failed_claim_sees_the_claim(), "7 was lost: the dequeue returned nothing, the next one nothing");
}

// Found by review, and open in the reference code (chaoran/fast-wait-free-queue issue 14): a
// cell keeps the placement of E's request R1 after R1 was claimed in another cell; E's next
// request R2 has an id at or below that cell, and a stale search visiting the cell must not
// claim R2 there, where no dequeue will look again. Actors: E = 0 (enqueues 7, then 8), P = 1,
// Q = 2, F = 3, D = 4; cells of 16.
// F draws cell 0 and is parked; Q fails in cell 0 (T = 1) and publishes its dequeue request
// (id 0), parked; F lands 100 in cell 1. The test's thread takes 100, then finds cells 2 and 3
// empty (H = 4, T = 2). E's enqueue of 7 fails in cell 2 and publishes R1 (id 2), parked. P
// draws cell 4, parked; D draws cell 5, places R1 there, parked. E, released, claims R1 in cell
// 4 (its own next draw) and commits 7. D, released, finds R1 gone elsewhere and cell 5 empty
// for good: its request completes empty at cell 6. P, released, takes 7 and, helping Q, is
// parked about to visit cell 5; Q, released, searches past 5 itself and completes empty at 6.
// E's enqueue of 8 fails in cell 5 (H passed it) and publishes R2 (id 5), parked. P, released,
// visits cell 5: a placement naming E's request struct would let it claim R2 there.
std::string stale_placement_takes_no_later_request() {
  WaitFreeQueue<4, 1> q(5);
  std::optional<std::uint64_t> p_got, q_got, d_got;
  {
    Script script;
    const auto f_drew = script.park_at("wfq.enqueue.drew", 3);
    script.spawn(3, [&] { q.enqueue(3, 100); });
    script.wait_parked(f_drew);
    const auto q_published = script.park_at("wfq.dequeue.published", 2);
    script.spawn(2, [&] { q_got = q.dequeue(2); });
    script.wait_parked(q_published);
    script.release(f_drew);
    script.join(3);
    if (const auto v = q.dequeue(0); v != 100u) return "the first dequeue returned " + show(v) + ", not 100";
    if (const auto v = q.dequeue(0); v) return "cell 2 held " + show(v);
    if (const auto v = q.dequeue(0); v) return "cell 3 held " + show(v);
    const auto r1 = script.park_at("wfq.enqueue.published", 0, 1);
    const auto between = script.park_at("test.between_enqueues", 0);
    const auto r2 = script.park_at("wfq.enqueue.published", 0, 2);
    script.spawn(0, [&] {
      q.enqueue(0, 7);
      CDSB_INTERLEAVE("test.between_enqueues");
      q.enqueue(0, 8);
    });
    script.wait_parked(r1);
    const auto p_drew = script.park_at("wfq.dequeue.drew", 1);
    const auto p_at_cell_5 = script.park_at("wfq.search.visiting", 1, 5);
    script.spawn(1, [&] { p_got = q.dequeue(1); });
    script.wait_parked(p_drew);
    const auto d_placed = script.park_at("wfq.help_enq.placed", 4);
    script.spawn(4, [&] { d_got = q.dequeue(4); });
    script.wait_parked(d_placed);
    script.release(r1);
    script.wait_parked(between);
    script.release(d_placed);
    script.join(4);
    script.release(p_drew);
    script.wait_parked(p_at_cell_5);
    script.release(q_published);
    script.join(2);
    script.release(between);
    script.wait_parked(r2);
    script.release(p_at_cell_5);
    script.join(1);
    script.release(r2);
    script.join(0);
  }
  if (p_got != 7u) return "P returned " + show(p_got) + ", not 7";
  if (q_got || d_got) return "Q returned " + show(q_got) + " and D " + show(d_got) + ", not nothing";
  if (const auto v = q.dequeue(0); v != 8u) return "8 was lost: the next dequeue returned " + show(v);
  if (const std::string bad = q.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

TEST(ScriptedWaitFreeQueue, AStalePlacementTakesNoLaterRequestOfItsHandle) {
  EXPECT_EQ(stale_placement_takes_no_later_request(), "");
}

TEST(ScriptedWaitFreeQueueMutants, CatchesAPlacementThatNamesTheRequestStruct) {
  Mutant bug("wfq.claim_any_request");
  EXPECT_EQ(stale_placement_takes_no_later_request(), "8 was lost: the next dequeue returned nothing");
}

// An enqueue is parked at `point`, its floor up at segment 0: after drawing index 0
// ("wfq.enqueue.drew"), or before touching any segment, in its thread's first operation
// ("wfq.operation.begun"). The test's thread moves 200 items through the queue (100 segments of
// 2 cells); its dequeues run cleanups, which may move the first segment on but free nothing at
// or after the floor: no segment at all. Released, the enqueue lands its value after the others
// and leaves; the next cleanups free the segments behind.
std::string floor_keeps_segments(const char* point) {
  WaitFreeQueue<1, 10> q(2);
  {
    Script script;
    const auto parked = script.park_at(point, 1);
    script.spawn(1, [&] { q.enqueue(1, 1000); });
    script.wait_parked(parked);
    for (std::uint64_t v = 0; v < 200; ++v) {
      q.enqueue(0, v);
      if (const auto got = q.dequeue(0); got != v) return "dequeue " + std::to_string(v) + " returned " + show(got);
    }
    const std::uint64_t freed = figure(q.stats(), "segments_freed");
    script.release(parked);
    script.join(1);
    if (freed) return std::to_string(freed) + " segment(s) freed while a parked enqueue's floor held them";
  }
  if (items_of(q) != "{1000}") return "items " + items_of(q) + ", not {1000}";
  for (std::uint64_t v = 0; v < 20; ++v) {
    q.enqueue(0, v);
    q.dequeue(0);
  }
  if (figure(q.stats(), "segments_freed") < 95) return "the segments behind were not freed once the enqueue left";
  if (const std::string bad = q.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

TEST(ScriptedWaitFreeQueue, AParkedOperationsFloorKeepsItsSegmentsUntilItLeaves) {
  EXPECT_EQ(floor_keeps_segments("wfq.enqueue.drew"), "");
  EXPECT_EQ(floor_keeps_segments("wfq.operation.begun"), "");
}

// The seeded bug: the cleaner ignores the floors. Parked before touching a segment (so that the
// seeded bug's frees hurt nothing once it is released: its first operation starts from the first
// segment), the enqueue sees the segments after its floor freed.
TEST(ScriptedWaitFreeQueueMutants, CatchesACleanerThatIgnoresTheFloors) {
  Mutant bug("wfq.cleanup_ignores_floors");
  EXPECT_EQ(floor_keeps_segments("wfq.operation.begun"), "98 segment(s) freed while a parked enqueue's floor held them");
}

}  // namespace wait_free_queue_scripted_test
