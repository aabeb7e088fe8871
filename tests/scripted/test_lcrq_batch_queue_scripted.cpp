// LCRQ's and the batch queue's windows, scripted (architecture.md §5, "Scripted interleavings").
// LCRQ (lcrq.hpp): an enqueue that drew its ticket and found its cell free, parked before its
// cell CAS, does not stop a dequeue: the dequeue with that ticket moves the cell to its next
// round and goes on to the next ticket, and the parked enqueue then draws a new one; a dequeue
// leaving a drained ring that another dequeue retires meanwhile keeps it (hazard pointer or
// epoch) until it is done with it. The batch queue (batch_queue.hpp): a dequeue_batch that read
// its items and is parked before its head CAS keeps the segments it walked, which another
// dequeue takes and retires meanwhile; released, its CAS fails and it takes the next items.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cdsbench/queue/batch_queue.hpp"
#include "cdsbench/queue/lcrq.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "support/item_checks.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace lcrq_batch_queue_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::figure;
using cdsb::testing::items_of;
using cdsb::testing::Mutant;
using cdsb::testing::Script;
using cdsb::testing::show;

using QA = cdsb::testing::QuarantineAllocator;

// An enqueue of 1 drew ticket 0 and is parked before its cell CAS; an enqueue of 2 (ticket 1)
// completes. A dequeue draws head ticket 0, finds cell 0 still empty and moves it to its next
// round, then takes 2 at ticket 1: it never waits for the parked enqueue. Released, the
// enqueue's CAS fails on the moved cell and it stores 1 under a new ticket.
template <class Queue>
std::string dequeue_passes_a_parked_enqueue() {
  Queue q(2, ReclaimOptions{.eager = true});
  {
    Script script;
    const auto ticket = script.park_at("lcrq.enqueue.ticket", 1);
    script.spawn(1, [&] { q.enqueue(1, 1); });
    script.wait_parked(ticket);
    q.enqueue(0, 2);
    if (const auto v = q.dequeue(0); v != 2u) return "the dequeue returned " + show(v) + ", not 2, past the parked enqueue";
    if (const auto v = q.dequeue(0); v) return "the queue held " + show(v) + " while only the parked enqueue's item was pending";
    script.release(ticket);
    script.join(1);
  }
  if (items_of(q) != "{1}") return "items " + items_of(q);
  if (const auto v = q.dequeue(0); v != 1u) return "the last dequeue returned " + show(v) + ", not 1";
  if (const std::string bad = q.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

// Rings of 2 cells: 1 and 2 fill the first, 3 closes it and opens the second. The test's
// thread takes 1 and 2; a dequeue then finds the first ring empty twice, sees its successor and
// is parked before moving the head. The test's thread dequeues 3, moving the head and retiring
// the first ring, which the parked dequeue still holds: not freed while it is parked (hp: its
// hazard; ebr: its epoch; ibr: its reservation, which the ring's lifetime overlaps). Released, its head CAS fails and it finds the queue empty.
template <class Queue>
std::string dequeue_leaving_a_ring_retired_under_it() {
  Queue q(2, ReclaimOptions{.eager = true});
  for (std::uint64_t v : {1, 2, 3}) q.enqueue(0, v);
  if (const auto v = q.dequeue(0); v != 1u) return "the first dequeue returned " + show(v);
  if (const auto v = q.dequeue(0); v != 2u) return "the second dequeue returned " + show(v);
  std::optional<std::uint64_t> parked_result{99};
  {
    Script script;
    const auto leaving = script.park_at("lcrq.dequeue.leaving_ring", 1);
    script.spawn(1, [&] { parked_result = q.dequeue(1); });
    script.wait_parked(leaving);
    if (const auto v = q.dequeue(0); v != 3u) return "the dequeue beside the parked one returned " + show(v) + ", not 3";
    if (const std::uint64_t freed = figure(q.stats(), "nodes_freed"); freed != 0)
      return std::to_string(freed) + " ring(s) freed while a dequeue still held the first";
    script.release(leaving);
    script.join(1);
  }
  if (parked_result) return "the parked dequeue returned " + show(parked_result) + ", not nothing";
  if (const std::string bad = q.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

template <class Queue>
class ScriptedLcrq : public ::testing::Test {};
using Lcrqs = ::testing::Types<Lcrq<HazardPointers<QA>, 1>, Lcrq<EpochBased<QA>, 1>, Lcrq<IntervalBased<QA>, 1>,
                               Lcrq<NoReclaim<QA>, 1>>;
TYPED_TEST_SUITE(ScriptedLcrq, Lcrqs);

TYPED_TEST(ScriptedLcrq, ADequeuePassesAnEnqueueParkedBeforeItsCell) {
  QA::reset_leaks();
  EXPECT_EQ(dequeue_passes_a_parked_enqueue<TypeParam>(), "");
  EXPECT_EQ(QA::leaked(), 0);
}

TYPED_TEST(ScriptedLcrq, ADequeueLeavingARingKeepsItWhileAnotherRetiresIt) {
  QA::reset_leaks();
  EXPECT_EQ(dequeue_leaving_a_ring_retired_under_it<TypeParam>(), "");
  EXPECT_EQ(QA::leaked(), 0);
}

// Queue: a segment of 1 2 3, then one of 4 5. A dequeue_batch(2) read 1 and 2 and is parked
// before its head CAS; the test's thread takes 1 2 3 (retiring the first segment, eager) and
// enqueues 6. While parked nothing may be freed (its epoch); released, its CAS fails and it
// takes 4 5.
template <class Queue>
std::string batch_dequeue_parked_before_its_cas() {
  Queue q(2, ReclaimOptions{.eager = true});
  const std::vector<std::uint64_t> first{1, 2, 3}, second{4, 5};
  q.enqueue_batch(0, first);
  q.enqueue_batch(0, second);
  std::vector<std::uint64_t> taken(2);
  std::size_t n = 0;
  {
    Script script;
    const auto walked = script.park_at("bq.dequeue.walked", 1);
    script.spawn(1, [&] { n = q.dequeue_batch(1, 2, taken.data()); });
    script.wait_parked(walked);
    std::vector<std::uint64_t> out(3);
    if (q.dequeue_batch(0, 3, out.data()) != 3 || out != first) return "the dequeue beside the parked one did not take 1 2 3";
    q.enqueue(0, 6);
    if (const std::uint64_t freed = figure(q.stats(), "nodes_freed"); freed != 0)
      return std::to_string(freed) + " segment(s) freed while a dequeue still read them";
    script.release(walked);
    script.join(1);
  }
  if (n != 2 || taken != std::vector<std::uint64_t>{4, 5})
    return "the parked dequeue took " + std::to_string(n) + " items, " + std::to_string(taken[0]) + " first, not 4 5";
  if (items_of(q) != "{6}") return "items " + items_of(q);
  if (const std::string bad = q.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

template <class Queue>
class ScriptedBatchQueue : public ::testing::Test {};
using BatchQueues = ::testing::Types<BatchQueue<EpochBased<QA>>, BatchQueue<NoReclaim<QA>>>;
TYPED_TEST_SUITE(ScriptedBatchQueue, BatchQueues);

TYPED_TEST(ScriptedBatchQueue, ABatchDequeueParkedBeforeItsCasKeepsItsSegmentsAndRetries) {
  QA::reset_leaks();
  EXPECT_EQ(batch_dequeue_parked_before_its_cas<TypeParam>(), "");
  EXPECT_EQ(QA::leaked(), 0);
}

// The seeded bug: the dequeue that moved the head frees the segments at once, while the parked
// dequeue still reads them.
TEST(ScriptedBatchQueueMutants, CatchesFreeingSegmentsAtOnce) {
  Mutant bug("bq.free_at_once");
  EXPECT_EQ(batch_dequeue_parked_before_its_cas<BatchQueue<EpochBased<QA>>>(),
            "1 segment(s) freed while a dequeue still read them");
}

}  // namespace lcrq_batch_queue_scripted_test
