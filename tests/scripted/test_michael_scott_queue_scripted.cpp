// The Michael-Scott queue's windows, scripted (architecture.md §5, "Scripted interleavings").
// Its argument (michael_scott_queue.hpp): a dequeue that read the front value holds the dummy
// and its successor, which are not freed while it may still CAS head, so its CAS fails on the
// moved head and it retries; an enqueue that found the last node and was overtaken links after
// the new last node, and a lagging tail is swung by whoever finds it (helping), so no
// operation waits for the parked one.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "cdsbench/queue/michael_scott_queue.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "support/item_checks.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"
#include "support/scripted_checks.hpp"

namespace michael_scott_queue_scripted_test {

using namespace cdsb;
using namespace cdsb::reclaim;
using cdsb::testing::becomes_true;
using cdsb::testing::figure;
using cdsb::testing::items_of;
using cdsb::testing::Mutant;
using cdsb::testing::Script;
using cdsb::testing::show;

using QA = cdsb::testing::QuarantineAllocator;

// Queue 1 2 3. A dequeue read the front value 1 and is parked before its CAS on head; the
// test's thread dequeues 1 and 2 (retiring the dummy and node 1: eager reclamation scans at
// once) and enqueues 4. Nothing the parked dequeue holds may be freed meanwhile; released, its
// CAS fails and it dequeues 3.
template <class Queue>
std::string dequeue_parked_before_its_cas() {
  Queue q(2, ReclaimOptions{.eager = true});
  for (std::uint64_t v : {1, 2, 3}) q.enqueue(0, v);
  std::optional<std::uint64_t> taken;
  {
    Script script;
    const auto read = script.park_at("msq.dequeue.read", 1);
    script.spawn(1, [&] { taken = q.dequeue(1); });
    script.wait_parked(read);
    if (const auto v = q.dequeue(0); v != 1u) return "the first dequeue returned " + show(v) + ", not 1";
    if (const auto v = q.dequeue(0); v != 2u) return "the second dequeue returned " + show(v) + ", not 2";
    q.enqueue(0, 4);
    // The parked dequeue writes nothing while parked: the figures are ours to read. It holds
    // the first dummy and node 1; with hazard pointers and intervals, only those are kept.
    const std::uint64_t freed = figure(q.stats(), "nodes_freed");
    if (std::string(Queue::reclaimer_type::name) == "hp" && freed != 0)
      return std::to_string(freed) + " node(s) freed while a dequeue still held them";
    if (Queue::reclaimer_type::guards_whole_operation && freed != 0)
      return std::to_string(freed) + " node(s) freed while a dequeue's guard was open";
    script.release(read);
    script.join(1);
  }
  if (taken != 3u) return "the parked dequeue returned " + show(taken) + ", not 3";
  if (items_of(q) != "{4}") return "items " + items_of(q);
  if (const std::string bad = q.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

// An enqueue of 2 found the last node (1) and is parked before linking; the test's thread
// enqueues 3 (so 1 is no longer last) and dequeues 1. No operation waits for the parked one;
// released, its CAS on the old last node's link fails and it links after 3.
template <class Queue>
std::string enqueue_parked_before_its_link() {
  Queue q(2, ReclaimOptions{.eager = true});
  q.enqueue(0, 1);
  {
    Script script;
    const auto found = script.park_at("msq.enqueue.found_last", 1);
    script.spawn(1, [&] { q.enqueue(1, 2); });
    script.wait_parked(found);
    q.enqueue(0, 3);
    if (const auto v = q.dequeue(0); v != 1u) return "dequeue returned " + show(v) + ", not 1";
    if (items_of(q) != "{3}") return "items " + items_of(q) + " while the enqueue is parked";
    script.release(found);
    script.join(1);
  }
  if (items_of(q) != "{3 2}") return "items " + items_of(q);
  if (const std::string bad = q.check_invariants(); !bad.empty()) return "invariants: " + bad;
  return "";
}

template <class Queue>
class ScriptedMichaelScott : public ::testing::Test {};
using MichaelScottQueues =
    ::testing::Types<MichaelScottQueue<NoReclaim<QA>>, MichaelScottQueue<EpochBased<QA>>, MichaelScottQueue<HazardPointers<QA>>,
                     MichaelScottQueue<IntervalBased<QA>>, MichaelScottQueueBackoff<HazardPointers<QA>>>;
TYPED_TEST_SUITE(ScriptedMichaelScott, MichaelScottQueues);

TYPED_TEST(ScriptedMichaelScott, ADequeueParkedBeforeItsCasKeepsItsNodesAndRetries) {
  QA::reset_leaks();
  EXPECT_EQ(dequeue_parked_before_its_cas<TypeParam>(), "");
  EXPECT_EQ(QA::leaked(), 0);
}

TYPED_TEST(ScriptedMichaelScott, AnOvertakenEnqueueLinksAfterTheNewLastNode) {
  QA::reset_leaks();
  EXPECT_EQ(enqueue_parked_before_its_link<TypeParam>(), "");
  EXPECT_EQ(QA::leaked(), 0);
}

// The seeded bug: dequeue frees the old dummy at once instead of retiring it, while a parked
// dequeue still holds it.
TEST(ScriptedMichaelScottMutants, CatchesFreeingTheOldDummyAtOnce) {
  Mutant bug("msq.free_at_once");
  EXPECT_EQ(dequeue_parked_before_its_cas<MichaelScottQueue<HazardPointers<QA>>>(),
            "2 node(s) freed while a dequeue still held them");
}

}  // namespace michael_scott_queue_scripted_test
