// The reclaimers' windows, scripted (architecture.md §5, "Scripted interleavings"): a reader
// parked between loading a pointer and protecting it, or lagging an epoch inside its
// operation, while a writer unlinks, retires and reclaims. Each scenario returns its first
// violation ("" when there is none), so the same scenario proves the scheme right and, with a
// seeded bug switched on (CDSB_MUTANT), proves that it catches that bug on every run.
//
// Use-after-free is a state check: nodes come from QuarantineAllocator, which records what
// the reclaimer freed and never hands memory back, and a reader asks before it reads.
// `none` never frees, so it has no window to script (reclaim/none.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/rcu.hpp"
#include "support/quarantine_allocator.hpp"
#include "support/script.hpp"

namespace reclaim_scripted_test {

using namespace cdsb::reclaim;
using cdsb::testing::Mutant;
using cdsb::testing::QuarantineAllocator;
using cdsb::testing::Script;

template <class R>
struct Node : R::NodeBase {
  explicit Node(std::uint64_t v) : value(v) {}
  std::uint64_t value;
};

template <class R>
using Slot = std::atomic<Node<R>*>;

// Inside a guard of tid: a new node with `value` replaces the slot's, which is retired (with
// eager reclamation, retire scans at once). Returns the retired node.
template <class R>
Node<R>* swap_in(R& r, int tid, Slot<R>& slot, std::uint64_t value) {
  Node<R>* fresh = r.template allocate<Node<R>>(tid, value);
  Node<R>* old = slot.exchange(fresh, std::memory_order_acq_rel);
  r.retire(tid, old);
  return old;
}

// The same as a whole operation of tid.
template <class R>
Node<R>* replace(R& r, int tid, Slot<R>& slot, std::uint64_t value) {
  auto guard = r.enter(tid);
  return swap_in(r, tid, slot, value);
}

// What a reader finds at a node it protected: "" if it is alive. Asks before it reads (a
// freed node's memory is kept, but a read racing with its poisoning would be a TSan report).
template <class R>
std::string check_alive(const Node<R>* n) {
  if (QuarantineAllocator::was_freed(n)) return "the node it protected was freed";
  if (n->value == 0 || n->value == 0xdddddddddddddddd) return "the node it protected holds garbage";
  return "";
}

// ---- hazard pointers ----------------------------------------------------------------------

using Hp = HazardPointers<QuarantineAllocator>;

// The reader loaded the node and is parked before publishing its hazard; the writer unlinks
// it, retires it, and its scan (eager: at every retire) frees it, since no hazard names it.
// protect's re-read must then see the link changed and move on to the new node.
std::string hp_reader_parked_before_publishing() {
  Hp r(2, 1, ReclaimOptions{.eager = true});
  Slot<Hp> slot{r.allocate<Node<Hp>>(0, 1)};
  Node<Hp>* const first = slot.load();
  std::string reader;
  {
    Script script;
    const auto loaded = script.park_at("hp.protect.loaded", 1);
    script.spawn(1, [&] {
      auto guard = r.enter(1);
      reader = check_alive(r.protect(1, 0, slot));
    });
    script.wait_parked(loaded);
    replace(r, 0, slot, 2);
    if (!QuarantineAllocator::was_freed(first)) return "setup: the scan kept a node no hazard named";
    script.release(loaded);
    script.join(1);
  }
  r.deallocate(0, slot.load());
  return reader.empty() ? "" : "reader: " + reader;
}

// The reader published its hazard and is parked before the re-read: the writer's scan must
// keep the node, and free it once the reader's hazard moved on.
std::string hp_reader_parked_after_publishing() {
  Hp r(2, 1, ReclaimOptions{.eager = true});
  Slot<Hp> slot{r.allocate<Node<Hp>>(0, 1)};
  Node<Hp>* const first = slot.load();
  std::string reader;
  {
    Script script;
    const auto published = script.park_at("hp.protect.published", 1);
    script.spawn(1, [&] {
      auto guard = r.enter(1);
      reader = check_alive(r.protect(1, 0, slot));
    });
    script.wait_parked(published);
    replace(r, 0, slot, 2);
    if (QuarantineAllocator::was_freed(first)) return "writer: the scan freed a node whose hazard was published";
    script.release(published);
    script.join(1);
  }
  replace(r, 0, slot, 3);
  if (!QuarantineAllocator::was_freed(first)) return "writer: the node was not freed after the reader let it go";
  r.deallocate(0, slot.load());
  return reader.empty() ? "" : "reader: " + reader;
}

TEST(ScriptedHazardPointers, AReaderParkedBeforePublishingNeverUsesAFreedNode) {
  QuarantineAllocator::reset_leaks();
  EXPECT_EQ(hp_reader_parked_before_publishing(), "");
  EXPECT_EQ(QuarantineAllocator::leaked(), 0);
}

TEST(ScriptedHazardPointers, AScanKeepsANodeWhoseHazardIsPublished) {
  QuarantineAllocator::reset_leaks();
  EXPECT_EQ(hp_reader_parked_after_publishing(), "");
  EXPECT_EQ(QuarantineAllocator::leaked(), 0);
}

// The seeded bug: protect returns what it loaded without re-reading the link.
TEST(ScriptedHazardPointers, CatchesSkippingTheRecheck) {
  Mutant bug("hp.skip_recheck");
  EXPECT_EQ(hp_reader_parked_before_publishing(), "reader: the node it protected was freed");
}

// ---- epochs ---------------------------------------------------------------------------------

using Ebr = EpochBased<QuarantineAllocator>;

// Operations of tid 2 (the test's thread) until the epoch is `target` or stops moving (eager:
// each operation checks one thread's announcement); returns the epoch reached.
std::uint64_t advance(Ebr& r, std::uint64_t target) {
  for (int i = 0; i < 64 && r.epoch() < target; ++i) {
    auto guard = r.enter(2);
  }
  return r.epoch();
}

// The writer (0) is inside an operation that began in epoch 0 when the epoch moves to 1; a
// reader (1) enters in epoch 1 and loads the node; the writer unlinks and retires it into its
// bag of epoch 0. The reader, parked, lets the epoch reach 2 but not 3: a bag of epoch r may
// be freed only at r + 3, and here r + 2 is already reached with the node in a reader's hands.
std::string ebr_reader_one_epoch_ahead_of_the_retirer() {
  Ebr r(3, 0, ReclaimOptions{.eager = true});
  Slot<Ebr> slot{r.allocate<Node<Ebr>>(0, 1)};
  Node<Ebr>* const first = slot.load();
  std::string reader;
  {
    Script script;
    const auto inside = script.park_at("test.writer.inside", 0);
    const auto holding = script.park_at("test.reader.holding", 1);
    script.spawn(0, [&] {
      auto guard = r.enter(0);
      CDSB_INTERLEAVE("test.writer.inside");
      swap_in(r, 0, slot, 2);
    });
    script.wait_parked(inside);
    if (advance(r, 1) != 1) return "setup: the epoch did not reach 1";
    script.spawn(1, [&] {
      auto guard = r.enter(1);
      Node<Ebr>* n = r.protect(1, 0, slot);
      CDSB_INTERLEAVE("test.reader.holding");
      reader = check_alive(n);
    });
    script.wait_parked(holding);
    script.release(inside);
    script.join(0);
    if (const std::uint64_t e = advance(r, 3); e != 2)
      return "epoch: reached " + std::to_string(e) + " with a reader inside epoch 1 (expected 2)";
    {
      auto guard = r.enter(0);  // the writer's next operation frees its bags old enough
    }
    if (QuarantineAllocator::was_freed(first)) return "writer: freed a node a reader one epoch ahead still holds";
    script.release(holding);
    script.join(1);
  }
  advance(r, 5);
  {
    auto guard = r.enter(0);
  }
  if (!QuarantineAllocator::was_freed(first)) return "writer: the node was not freed three epochs after the reader left";
  r.deallocate(0, slot.load());
  return reader.empty() ? "" : "reader: " + reader;
}

// The writer read epoch 0 in enter and is parked before announcing it while the epoch moves to
// 2; it must re-read and announce 2, so that what it retires goes into the bag of epoch 2. A
// reader (1) enters in epoch 2 and holds the node the writer then retires; the epoch reaches 3.
// Under a stale announcement (0) the node would sit in the bag of epoch 0, freed at 3.
std::string ebr_writer_parked_before_announcing() {
  Ebr r(3, 0, ReclaimOptions{.eager = true});
  Slot<Ebr> slot{r.allocate<Node<Ebr>>(0, 1)};
  Node<Ebr>* const first = slot.load();
  std::string reader;
  {
    Script script;
    const auto loaded = script.park_at("ebr.enter.loaded", 0);
    const auto inside = script.park_at("test.writer.inside", 0);
    const auto holding = script.park_at("test.reader.holding", 1);
    script.spawn(0, [&] {
      auto guard = r.enter(0);
      CDSB_INTERLEAVE("test.writer.inside");
      swap_in(r, 0, slot, 2);
    });
    script.wait_parked(loaded);
    if (advance(r, 2) != 2) return "setup: the epoch did not reach 2";
    script.release(loaded);
    script.wait_parked(inside);
    script.spawn(1, [&] {
      auto guard = r.enter(1);
      Node<Ebr>* n = r.protect(1, 0, slot);
      CDSB_INTERLEAVE("test.reader.holding");
      reader = check_alive(n);
    });
    script.wait_parked(holding);
    script.release(inside);
    script.join(0);
    if (const std::uint64_t e = advance(r, 4); e != 3)
      return "epoch: reached " + std::to_string(e) + " with a reader inside epoch 2 (expected 3)";
    {
      auto guard = r.enter(0);
    }
    if (QuarantineAllocator::was_freed(first)) return "writer: freed a node a reader still holds";
    script.release(holding);
    script.join(1);
  }
  r.deallocate(0, slot.load());
  return reader.empty() ? "" : "reader: " + reader;
}

TEST(ScriptedEpochs, NothingAReaderOneEpochAheadHoldsIsFreed) {
  QuarantineAllocator::reset_leaks();
  EXPECT_EQ(ebr_reader_one_epoch_ahead_of_the_retirer(), "");
  EXPECT_EQ(QuarantineAllocator::leaked(), 0);
}

TEST(ScriptedEpochs, AnOperationAnnouncesTheEpochItReReads) {
  QuarantineAllocator::reset_leaks();
  EXPECT_EQ(ebr_writer_parked_before_announcing(), "");
  EXPECT_EQ(QuarantineAllocator::leaked(), 0);
}

// The seeded bugs: a bag freed at r + 2; an announcement not re-checked against the epoch.
TEST(ScriptedEpochs, CatchesFreeingOneEpochEarly) {
  Mutant bug("ebr.free_one_epoch_early");
  EXPECT_EQ(ebr_reader_one_epoch_ahead_of_the_retirer(), "writer: freed a node a reader one epoch ahead still holds");
}

TEST(ScriptedEpochs, CatchesAStaleAnnouncement) {
  Mutant bug("ebr.skip_announce_recheck");
  EXPECT_EQ(ebr_writer_parked_before_announcing(), "writer: freed a node a reader still holds");
}

// ---- intervals ------------------------------------------------------------------------------

using Ibr = IntervalBased<QuarantineAllocator>;

// The reader reserved [e, e], then loaded a node born later and is parked before checking the
// epoch: the writer retires that node and its scan frees it (its interval misses [e, e], and
// the writer's own, which began before the node was born). protect must raise the reservation
// and re-read the link, reaching the newer node.
std::string ibr_reader_parked_before_reserving() {
  Ibr r(2, 0, ReclaimOptions{.eager = true});  // eager: E moves at every allocation and retirement
  Slot<Ibr> slot{r.allocate<Node<Ibr>>(0, 1)};
  std::string reader;
  {
    Script script;
    const auto entered = script.park_at("test.reader.entered", 1);
    const auto loaded = script.park_at("ibr.protect.loaded", 1);
    script.spawn(1, [&] {
      auto guard = r.enter(1);
      CDSB_INTERLEAVE("test.reader.entered");
      reader = check_alive(r.protect(1, 0, slot));
    });
    script.wait_parked(entered);
    {
      auto writer = r.enter(0);  // one operation of the writer's: it reserves only its first epoch
      swap_in(r, 0, slot, 2);
      Node<Ibr>* const born_later = slot.load();
      script.release(entered);
      script.wait_parked(loaded);
      swap_in(r, 0, slot, 3);
      if (!QuarantineAllocator::was_freed(born_later)) return "setup: the scan kept a node born after the reservations";
    }
    script.release(loaded);
    script.join(1);
  }
  r.deallocate(0, slot.load());
  return reader.empty() ? "" : "reader: " + reader;
}

// The reader protected a node born in the epoch it reserved and is parked inside its
// operation while the writer retires that node and runs 64 more operations (E moves 128
// epochs, a scan at every retire): the node must stay, and go once the reader left.
std::string ibr_reader_lagging_while_others_reclaim() {
  Ibr r(2, 0, ReclaimOptions{.eager = true});
  Slot<Ibr> slot{r.allocate<Node<Ibr>>(0, 1)};
  Node<Ibr>* const first = slot.load();
  std::string reader;
  {
    Script script;
    const auto holding = script.park_at("test.reader.holding", 1);
    script.spawn(1, [&] {
      auto guard = r.enter(1);
      Node<Ibr>* n = r.protect(1, 0, slot);
      CDSB_INTERLEAVE("test.reader.holding");
      reader = check_alive(n);
    });
    script.wait_parked(holding);
    for (std::uint64_t i = 2; i < 66; ++i) replace(r, 0, slot, i);
    if (QuarantineAllocator::was_freed(first)) return "writer: a scan freed the node a lagging reader holds";
    script.release(holding);
    script.join(1);
  }
  replace(r, 0, slot, 66);
  if (!QuarantineAllocator::was_freed(first)) return "writer: the node was not freed after the reader left";
  r.deallocate(0, slot.load());
  return reader.empty() ? "" : "reader: " + reader;
}

TEST(ScriptedIntervals, AReaderParkedBeforeReservingNeverUsesAFreedNode) {
  QuarantineAllocator::reset_leaks();
  EXPECT_EQ(ibr_reader_parked_before_reserving(), "");
  EXPECT_EQ(QuarantineAllocator::leaked(), 0);
}

TEST(ScriptedIntervals, NothingALaggingReaderHoldsIsFreed) {
  QuarantineAllocator::reset_leaks();
  EXPECT_EQ(ibr_reader_lagging_while_others_reclaim(), "");
  EXPECT_EQ(QuarantineAllocator::leaked(), 0);
}

// The seeded bugs: protect returns what it loaded after raising the reservation, without the
// re-read; a scan treats a node born at a reservation's upper epoch as outside it.
TEST(ScriptedIntervals, CatchesSkippingTheReRead) {
  Mutant bug("ibr.skip_reread");
  EXPECT_EQ(ibr_reader_parked_before_reserving(), "reader: the node it protected was freed");
}

TEST(ScriptedIntervals, CatchesAnIntervalThatExcludesItsUpperEpoch) {
  Mutant bug("ibr.upper_exclusive");
  EXPECT_EQ(ibr_reader_lagging_while_others_reclaim(), "writer: a scan freed the node a lagging reader holds");
}

// ---- RCU --------------------------------------------------------------------------------------

// An updater (2) has snapshotted the readers (reader 0 inside) and is parked before waiting;
// reader 1 enters after the snapshot. synchronize must still be waiting at its first poll
// (reader 0 is inside), and must return once reader 0 leaves, with reader 1 still inside: a
// grace period that waited for reader 1 would time out in join, not hang.
TEST(ScriptedRcu, AGracePeriodWaitsForEarlierReadersOnly) {
  Rcu rcu(3);
  Script script;
  const auto started = script.park_at("rcu.synchronize.started", 2);
  const auto waiting = script.park_at("rcu.synchronize.waiting", 2);
  rcu.read_lock(0);
  script.spawn(2, [&] { rcu.synchronize(2); });
  script.wait_parked(started);
  rcu.read_lock(1);
  script.release(started);
  script.wait_parked(waiting);  // throws if synchronize returned without waiting for reader 0
  rcu.read_unlock(0);
  script.release(waiting);
  script.join(2);
  EXPECT_TRUE(rcu.in_read_section(1));
  rcu.read_unlock(1);
}

}  // namespace reclaim_scripted_test
