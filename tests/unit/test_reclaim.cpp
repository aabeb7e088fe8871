// The reclamation layer on its own: what each scheme may and may not free, how much garbage
// it keeps when a thread stalls inside an operation, teardown, and the allocation policies.
//
// Threads are ids, not OS threads: one test thread plays several ids (one "parked" inside a
// guard while another retires), which makes every interleaving here deterministic.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "support/stats_figures.hpp"

namespace reclaim_test {

using namespace cdsb;
using namespace cdsb::reclaim;

std::atomic<std::int64_t> live_nodes{0};

// A node that counts its lifetime and records that it was destroyed.
template <class R>
struct Tracked : R::NodeBase {
  explicit Tracked(std::uint64_t v, std::atomic<bool>* destroyed_flag = nullptr) : value(v), destroyed(destroyed_flag) {
    live_nodes.fetch_add(1);
  }
  ~Tracked() {
    if (destroyed) destroyed->store(true);
    live_nodes.fetch_sub(1);
  }
  std::uint64_t value;
  std::atomic<bool>* destroyed;
};

using cdsb::testing::figure;

// One operation of thread tid: replace what `slot` holds with a new node and retire the old.
template <class R>
void replace_and_retire(R& r, int tid, std::atomic<Tracked<R>*>& slot) {
  auto guard = r.enter(tid);
  Tracked<R>* fresh = r.template allocate<Tracked<R>>(tid, 0);
  Tracked<R>* old = slot.exchange(fresh, std::memory_order_acq_rel);
  if (old) r.retire(tid, old);
}

template <class R>
class EveryReclaimer : public ::testing::Test {};

using Schemes = ::testing::Types<NoReclaim<>, EpochBased<>, HazardPointers<>, IntervalBased<>,
                                 EpochBased<PoolAllocator<SystemAllocator>>, HazardPointers<PoolAllocator<SystemAllocator>>>;
TYPED_TEST_SUITE(EveryReclaimer, Schemes);

// A node a guarded thread protected is not freed, however eagerly the others reclaim; once
// that thread leaves, the schemes that free (all but `none`) free it.
TYPED_TEST(EveryReclaimer, NothingIsFreedWhileAGuardCouldSeeIt) {
  using R = TypeParam;
  live_nodes = 0;
  std::atomic<bool> destroyed{false};
  {
    R r(2, 1, ReclaimOptions{.eager = true});
    std::atomic<Tracked<R>*> slot{r.template allocate<Tracked<R>>(0, 42, &destroyed)};
    {
      auto reader = r.enter(1);
      Tracked<R>* seen = r.protect(1, 0, slot);
      ASSERT_EQ(seen->value, 42u);
      for (int i = 0; i < 1000; ++i) replace_and_retire(r, 0, slot);  // retires `seen` first
      EXPECT_FALSE(destroyed.load()) << R::name << " freed a node a guard could still see";
      EXPECT_EQ(seen->value, 42u);
    }
    for (int i = 0; i < 1000; ++i) replace_and_retire(r, 0, slot);
    if (std::string(R::name) == "none")
      EXPECT_FALSE(destroyed.load()) << "none never frees while the structure lives";
    else
      EXPECT_TRUE(destroyed.load()) << R::name << " never freed the node after the reader left";
    r.deallocate(0, slot.load());
  }
  EXPECT_TRUE(destroyed.load());
  EXPECT_EQ(live_nodes.load(), 0) << "every node is freed when the reclaimer is destroyed";
}

// Allocated, retired and freed add up; teardown frees what was still in limbo.
TYPED_TEST(EveryReclaimer, CountsAddUpAndTeardownFreesEverything) {
  using R = TypeParam;
  live_nodes = 0;
  {
    R r(3, 1);
    std::atomic<Tracked<R>*> slot{nullptr};
    for (int i = 0; i < 3000; ++i) replace_and_retire(r, i % 3, slot);
    const StatsReport s = r.stats();
    EXPECT_EQ(figure(s, "nodes_allocated"), 3000u);
    EXPECT_EQ(figure(s, "nodes_retired"), 2999u);
    EXPECT_EQ(figure(s, "nodes_freed") + figure(s, "nodes_in_limbo"), 2999u);
    EXPECT_EQ(live_nodes.load(), 1 + static_cast<std::int64_t>(figure(s, "nodes_in_limbo")));
    EXPECT_GE(figure(s, "nodes_in_limbo_peak"), 1u);
    r.deallocate(0, slot.load());
  }
  EXPECT_EQ(live_nodes.load(), 0);
}

// A thread parked inside a guard: HP and IBR keep garbage bounded (default thresholds), EBR
// cannot advance past it but frees everything once it resumes.
template <class R>
std::uint64_t limbo_with_parked_thread(R& r, std::atomic<Tracked<R>*>& slot, int retires) {
  auto parked = r.enter(1);
  (void)r.protect(1, 0, slot);
  for (int i = 0; i < retires; ++i) replace_and_retire(r, 0, slot);
  return figure(r.stats(), "nodes_in_limbo");
}

TEST(Reclaimers, HazardPointersBoundGarbageWhileAThreadIsParked) {
  using R = HazardPointers<>;
  R r(2, 1);
  std::atomic<Tracked<R>*> slot{r.allocate<Tracked<R>>(0, 0)};
  const std::uint64_t limbo = limbo_with_parked_thread(r, slot, 100'000);
  EXPECT_LE(limbo, 2u * 1 * 2 + 64 + 2) << "HP's bound: R + K*N per thread";
  r.deallocate(0, slot.load());
}

TEST(Reclaimers, IntervalBasedBoundsGarbageWhileAThreadIsParked) {
  using R = IntervalBased<>;
  R r(2, 1);
  std::atomic<Tracked<R>*> slot{r.allocate<Tracked<R>>(0, 0)};
  const std::uint64_t limbo = limbo_with_parked_thread(r, slot, 100'000);
  // Only nodes born before the parked reservation's upper epoch (a few epochs' worth) stay.
  EXPECT_LE(limbo, 1000u);
  EXPECT_GT(figure(r.stats(), "nodes_freed"), 99'000u);
  r.deallocate(0, slot.load());
}

TEST(Reclaimers, EpochsStallWhileAThreadIsParkedAndFreeAllOnceItResumes) {
  using R = EpochBased<>;
  R r(2, 0);
  std::atomic<Tracked<R>*> slot{r.allocate<Tracked<R>>(0, 0)};
  const std::uint64_t limbo = limbo_with_parked_thread(r, slot, 100'000);
  EXPECT_GE(limbo, 99'990u) << "a parked thread stops the epoch: nothing retired since can be freed";
  // Resumed (its guard is gone): a few more operations advance the epoch three times (each
  // advance takes a look at both threads, one look every advance_every operations).
  for (std::uint32_t i = 0; i < 4 * 2 * R::advance_every; ++i) {
    auto g = r.enter(0);
  }
  EXPECT_EQ(figure(r.stats(), "nodes_in_limbo"), 0u);
  r.deallocate(0, slot.load());
}

TEST(Reclaimers, NoneKeepsEverythingUntilTeardown) {
  using R = NoReclaim<>;
  live_nodes = 0;
  {
    R r(1);
    std::atomic<Tracked<R>*> slot{nullptr};
    for (int i = 0; i < 5000; ++i) replace_and_retire(r, 0, slot);
    EXPECT_EQ(figure(r.stats(), "nodes_in_limbo"), 4999u);
    EXPECT_EQ(figure(r.stats(), "nodes_freed"), 0u);
    r.deallocate(0, slot.load());
  }
  EXPECT_EQ(live_nodes.load(), 0);
}

// Real threads: readers dereference what they protect while a writer replaces and retires
// it with eager reclamation; a premature free shows as a wrong value here and as a report
// under ASan/TSan.
template <class R>
void concurrent_readers_and_writer() {
  constexpr int readers = 3;
  R r(readers + 1, 1, ReclaimOptions{.eager = true});
  std::atomic<Tracked<R>*> slot{r.template allocate<Tracked<R>>(0, 7)};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bad{0};
  std::vector<std::thread> threads;
  for (int t = 1; t <= readers; ++t)
    threads.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        auto g = r.enter(t);
        Tracked<R>* n = r.protect(t, 0, slot);
        if (n->value != 7) bad.fetch_add(1);
      }
    });
  for (int i = 0; i < 20'000; ++i) {
    auto g = r.enter(0);
    Tracked<R>* fresh = r.template allocate<Tracked<R>>(0, 7);
    r.retire(0, slot.exchange(fresh, std::memory_order_acq_rel));
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0u);
  r.deallocate(0, slot.load());
}

TEST(Reclaimers, ConcurrentReadersNeverSeeFreedMemory) {
  concurrent_readers_and_writer<EpochBased<>>();
  concurrent_readers_and_writer<HazardPointers<>>();
  concurrent_readers_and_writer<IntervalBased<>>();
  concurrent_readers_and_writer<EpochBased<PoolAllocator<SystemAllocator>>>();
}

// ---- allocation policies -----------------------------------------------------------------

struct NodeA {
  std::uint64_t a, b, c;
};
struct NodeB {
  std::uint64_t a, b, c;
};

// The 4 KiB pages that objects of each type landed on, allocated interleaved.
template <class Alloc>
std::pair<std::set<std::uintptr_t>, std::set<std::uintptr_t>> pages_of_two_types(Alloc& alloc) {
  std::vector<void*> as, bs;
  std::set<std::uintptr_t> pa, pb;
  for (int i = 0; i < 4000; ++i) {
    as.push_back(alloc.template allocate<NodeA>(0));
    bs.push_back(alloc.template allocate<NodeB>(0));
  }
  for (void* p : as) pa.insert(reinterpret_cast<std::uintptr_t>(p) >> 12);
  for (void* p : bs) pb.insert(reinterpret_cast<std::uintptr_t>(p) >> 12);
  for (void* p : as) alloc.template deallocate<NodeA>(0, p);
  for (void* p : bs) alloc.template deallocate<NodeB>(0, p);
  return {pa, pb};
}

[[maybe_unused]] std::size_t shared_pages(const std::set<std::uintptr_t>& a, const std::set<std::uintptr_t>& b) {
  std::size_t n = 0;
  for (auto p : a) n += b.count(p);
  return n;
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// (The sanitizers own malloc; jemalloc's arenas are exercised by the release tree.)
TEST(Allocators, SegregatedKeepsEachNodeTypeOnItsOwnPages) {
  SegregatedAllocator seg(1);
  const auto [a, b] = pages_of_two_types(seg);
  EXPECT_EQ(shared_pages(a, b), 0u) << "two node types share pages under the segregated allocator";
  // The control: malloc interleaves same-sized objects of both types on the same pages.
  SystemAllocator sys(1);
  const auto [sa, sb] = pages_of_two_types(sys);
  EXPECT_GT(shared_pages(sa, sb), 0u);
}

TEST(Allocators, SegregatedPoolReusesAndSegregates) {
  PoolAllocator<SegregatedAllocator> pool(1);
  const auto [a, b] = pages_of_two_types(pool);
  EXPECT_EQ(shared_pages(a, b), 0u);
}
#endif

TEST(Allocators, PoolReusesOnTheSameThreadAndHandsBatchesToOthers) {
  using Pool = PoolAllocator<SystemAllocator>;
  Pool pool(2);
  void* p = pool.allocate<NodeA>(0);
  pool.deallocate<NodeA>(0, p);
  EXPECT_EQ(pool.allocate<NodeA>(0), p) << "a thread reuses what it freed last";
  pool.deallocate<NodeA>(0, p);

  // Thread 0 frees 2 batches' worth: one batch goes to the shared stack, where thread 1,
  // whose own list is empty, picks it up instead of calling the base allocator.
  std::vector<void*> freed;
  for (std::size_t i = 0; i < 2 * Pool::batch_size - 1; ++i) freed.push_back(pool.allocate<NodeA>(1));
  const std::set<void*> from_thread0(freed.begin(), freed.end());
  for (void* q : freed) pool.deallocate<NodeA>(0, q);
  void* got = pool.allocate<NodeA>(1);
  EXPECT_TRUE(from_thread0.count(got)) << "thread 1 got fresh memory instead of thread 0's batch";
  pool.deallocate<NodeA>(1, got);
}

#if defined(__SANITIZE_ADDRESS__)
// A node waiting in a pool's list is poisoned but for its link word, so ASan still reports a
// use after free of a pooled node; handed out again, the whole node is usable.
TEST(Allocators, PoolPoisonsNodesWhileTheyWaitInItsLists) {
  PoolAllocator<SystemAllocator> pool(1);
  auto* node = static_cast<NodeA*>(pool.allocate<NodeA>(0));
  EXPECT_FALSE(__asan_region_is_poisoned(node, sizeof(NodeA)));
  pool.deallocate<NodeA>(0, node);
  EXPECT_FALSE(__asan_address_is_poisoned(&node->a)) << "the link word";
  EXPECT_TRUE(__asan_address_is_poisoned(&node->b));
  EXPECT_TRUE(__asan_address_is_poisoned(&node->c));
  EXPECT_EQ(pool.allocate<NodeA>(0), node);
  EXPECT_FALSE(__asan_region_is_poisoned(node, sizeof(NodeA)));
  pool.deallocate<NodeA>(0, node);  // the pool's teardown unpoisons it before the system frees it
}
#endif

// ---- user statistics ----------------------------------------------------------------------

TEST(UserStats, CountersSumMaximaMaxHistogramsBucketByPowerOfTwo) {
  UserStats s(3, {{"ops", StatKind::counter}, {"depth", StatKind::maximum}, {"batch", StatKind::histogram}});
  s.add(0, 0, 5);
  s.add(2, 0);
  s.set_max(1, 1, 9);
  s.set_max(2, 1, 4);
  s.record(0, 2, 0);
  s.record(1, 2, 1);
  s.record(1, 2, 6);
  s.record(2, 2, 7);
  const StatsReport r = s.report();
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(r.values[0], (std::pair<std::string, std::uint64_t>{"ops", 6}));
  EXPECT_EQ(r.values[1], (std::pair<std::string, std::uint64_t>{"depth", 9}));
  ASSERT_EQ(r.histograms.size(), 1u);
  const HistogramFigure& h = r.histograms[0];
  EXPECT_EQ(h.count, 4u);
  EXPECT_EQ(h.sum, 14u);
  EXPECT_EQ(h.max, 7u);
  EXPECT_DOUBLE_EQ(h.average(), 3.5);
  EXPECT_EQ(h.log2_buckets[0], 1u);  // 0
  EXPECT_EQ(h.log2_buckets[1], 1u);  // 1
  EXPECT_EQ(h.log2_buckets[3], 2u);  // 6, 7 in [4, 7]
}

}  // namespace reclaim_test
