// Node Replication and the black-box baselines (include/cdsbench/nr/, seq/): the targeted
// tests of issue 8 (an idle replica does not stall the log; many wrap-arounds of a tiny log;
// each operation executed exactly once per replica; a read observes every update that
// completed before it began), the distributed readers-writer lock, the sequential
// structures' own properties, and the registry's NR structures at 1, 2 and 3 virtual
// replicas. (Every METHOD.STRUCTURE also runs the registry matrix of test_correctness.cpp
// and the linearizability checks of tests/CMakeLists.txt.) No test measures time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness/trial_context.hpp"
#include "bench/registry/registry.hpp"
#include "cdsbench/nr/flat_combining.hpp"
#include "cdsbench/nr/node_replication.hpp"
#include "cdsbench/nr/rw_locked.hpp"
#include "cdsbench/nr/spin_locked.hpp"
#include "cdsbench/platform/distributed_rw_lock.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/seq/fingerprint.hpp"
#include "cdsbench/seq/pairing_heap.hpp"
#include "cdsbench/seq/skiplist_dict.hpp"
#include "cdsbench/seq/skiplist_pq.hpp"
#include "cdsbench/seq/sorted_set.hpp"
#include "cdsbench/seq/synthetic.hpp"

namespace nr_test {

using namespace cdsb;

// A sequential structure that remembers the order in which it applied its updates: each
// update appends a unique id and returns its position; the read returns the count.
struct AppliedLog {
  enum class Code : std::uint8_t { append, count };
  struct Op {
    Code code = Code::count;
    std::uint64_t id = 0;
  };
  using Result = std::uint64_t;
  static bool is_read_only(const Op& op) noexcept { return op.code == Code::count; }
  Result execute(const Op& op) {
    if (op.code == Code::count) return ids.size();
    ids.push_back(op.id);
    return ids.size() - 1;
  }
  std::string check_invariants() const { return {}; }
  std::size_t memory_bytes() const { return sizeof(*this) + ids.capacity() * sizeof(std::uint64_t); }
  friend bool operator==(const AppliedLog&, const AppliedLog&) = default;
  std::vector<std::uint64_t> ids;
};

// A counter: increment returns the new value, read the current one.
struct Counter {
  struct Op {
    bool read = true;
  };
  using Result = std::uint64_t;
  static bool is_read_only(const Op& op) noexcept { return op.read; }
  Result execute(const Op& op) { return op.read ? value : ++value; }
  std::string check_invariants() const { return {}; }
  std::size_t memory_bytes() const { return sizeof(*this); }
  friend bool operator==(const Counter&, const Counter&) = default;
  std::uint64_t value = 0;
};

// Runs fn(t) on n threads released together, so their operations overlap.
template <class Fn>
void run_together(int n, Fn fn) {
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      fn(t);
    });
  for (auto& th : threads) th.join();
}

NodeReplicationOptions tiny_log(std::size_t entries, int min_batch = 1) {
  NodeReplicationOptions o;
  o.log_entries = entries;
  o.min_batch = min_batch;
  return o;
}

// ---- the targeted tests ---------------------------------------------------------------

// Every thread appends its own ids; afterwards every replica must hold every id exactly once,
// in one order they all agree on, each thread's ids in its program order, and each update's
// returned position must be where that id sits: the response came from the one execution.
void expect_exactly_once(std::vector<int> nodes, int replicas, NodeReplicationOptions options, int per_thread) {
  const int n = static_cast<int>(nodes.size());
  NodeReplicated<AppliedLog> nr(nodes, replicas, options);
  std::vector<std::vector<std::uint64_t>> positions(n);
  run_together(n, [&](int t) {
      std::uint64_t last_count = 0;
      for (int i = 0; i < per_thread; ++i) {
        const std::uint64_t id = (static_cast<std::uint64_t>(t) << 32) | static_cast<std::uint64_t>(i);
        positions[t].push_back(nr.execute(t, {AppliedLog::Code::append, id}));
        if (i % 7 == 0) {  // reads too: they must never go back
          const std::uint64_t count = nr.execute(t, {AppliedLog::Code::count, 0});
          EXPECT_GE(count, last_count);
          EXPECT_GT(count, positions[t].back());  // our own completed append is visible
          last_count = count;
        }
      }
  });

  ASSERT_EQ(nr.check_invariants(), "");  // brings every replica up to date; all equal
  const std::uint64_t total = static_cast<std::uint64_t>(n) * per_thread;
  ASSERT_EQ(nr.log_tail(), total);
  for (int r = 0; r < replicas; ++r) {
    const auto& ids = nr.replica(r).ids;
    ASSERT_EQ(ids.size(), total) << "replica " << r;
    std::vector<std::uint64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "replica " << r << " applied an op twice";
  }
  const auto& ids = nr.replica(0).ids;
  std::vector<std::uint64_t> next(n, 0);  // each thread's ids appear in its program order
  for (std::uint64_t id : ids) {
    const int t = static_cast<int>(id >> 32);
    ASSERT_EQ(id & 0xffffffffu, next[t]++) << "thread " << t << "'s updates out of program order";
  }
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < per_thread; ++i)
      ASSERT_EQ(ids[positions[t][i]], (static_cast<std::uint64_t>(t) << 32) | static_cast<std::uint64_t>(i))
          << "thread " << t << " op " << i << " got the response of another execution";
}

TEST(NodeReplication, EachOperationExecutedExactlyOncePerReplica) {
  // Two replicas with two threads each, a third with none (kept up to date by whoever needs
  // its log space); a log of 8 entries, so space recovery interleaves with batches.
  expect_exactly_once({0, 0, 1, 1}, 3, tiny_log(8), 20'000);
}

TEST(NodeReplication, EachOperationExecutedExactlyOnceWithAMinimumBatch) {
  // Combiners wait for a batch of 3 (of the node's 3 threads) before reserving.
  expect_exactly_once({0, 0, 0, 1}, 2, tiny_log(16, 3), 20'000);
}

TEST(NodeReplication, ManyWrapAroundsOfATinyLog) {
  NodeReplicated<AppliedLog> probe({0, 1, 2}, 3, tiny_log(4));
  ASSERT_EQ(probe.log_capacity(), 4u);  // the smallest log these batches fit (2 x 1 entry, rounded)
  expect_exactly_once({0, 1, 2}, 3, tiny_log(4), 20'000);  // 60,000 entries: 15,000 rounds of the log
}

TEST(NodeReplication, IdleReplicaDoesNotStallTheLog) {
  // One thread on replica 0; replicas 1 and 2 have no thread at all, so nobody of theirs
  // will ever apply the log. With 16 entries the log fills after 16 updates: unless the
  // updater catches the idle replicas up itself, its 17th update waits forever.
  NodeReplicated<Counter> nr({0}, 3, tiny_log(16));
  for (int i = 1; i <= 10'000; ++i) ASSERT_EQ(nr.execute(0, {false}), static_cast<std::uint64_t>(i));
  EXPECT_GT(nr.stats().catch_ups_by_others, 0u);
  EXPECT_GE(nr.local_tail(1), 10'000u - 16);  // kept within one log of the tail
  EXPECT_EQ(nr.check_invariants(), "");
  EXPECT_EQ(nr.replica(2).value, 10'000u);
}

TEST(NodeReplication, IdleReplicaWithRegisteredThreadsDoesNotStallTheLog) {
  // Threads 1 and 2 belong to replica 1 but never run an operation (they went idle).
  NodeReplicated<Counter> nr({0, 1, 1, 0}, 2, tiny_log(8));
  run_together(2, [&](int t) {
    const int tid = t == 0 ? 0 : 3;
    for (int i = 0; i < 20'000; ++i) nr.execute(tid, {t == 1 && i % 3 == 0});
  });
  EXPECT_EQ(nr.check_invariants(), "");
  EXPECT_GT(nr.stats().catch_ups_by_others, 0u);
}

TEST(NodeReplication, ReadObservesEveryUpdateCompletedBeforeItBegan) {
  // Writers on replicas 0 and 1 publish, after each increment returns, the largest value they
  // have seen returned (`completed`). A reader loads `completed`, then reads: the increment
  // that returned that value completed before the read began, so the read must see it, on
  // whatever replica the reader is (2 has no writer at all; 0 shares the writer's).
  NodeReplicated<Counter> nr({0, 1, 2, 0}, 3, tiny_log(64));
  std::atomic<std::uint64_t> completed{0};
  std::atomic<int> writers_left{2};
  std::atomic<std::uint64_t> stale{0}, backwards{0}, reads{0};
  auto writer = [&](int tid) {
    for (int i = 0; i < 50'000; ++i) {
      const std::uint64_t v = nr.execute(tid, {false});
      std::uint64_t seen = completed.load();
      while (seen < v && !completed.compare_exchange_weak(seen, v)) {
      }
    }
    writers_left.fetch_sub(1);
  };
  auto reader = [&](int tid) {
    std::uint64_t last = 0;
    for (int i = 0; i < 1000 || writers_left.load() > 0; ++i) {
      const std::uint64_t before = completed.load();
      const std::uint64_t got = nr.execute(tid, {true});
      stale += got < before;
      backwards += got < last;
      last = got;
      ++reads;
    }
  };
  run_together(4, [&](int tid) { tid < 2 ? writer(tid) : reader(tid); });
  EXPECT_EQ(stale.load(), 0u) << "reads missed a completed update";
  EXPECT_EQ(backwards.load(), 0u) << "a thread's reads went back in time";
  EXPECT_GT(reads.load(), 0u);
  EXPECT_EQ(nr.check_invariants(), "");
  EXPECT_EQ(nr.replica(2).value, 100'000u);
}

// ---- the distributed readers-writer lock ----------------------------------------------

TEST(DistributedRwLock, WritersExcludeEveryone) {
  DistributedRwLock lock(4);
  std::uint64_t a = 0, b = 0;  // written only under the exclusive side, always equal there
  std::atomic<std::uint64_t> torn{0};
  run_together(4, [&](int t) {
    for (int i = 0; i < 20'000; ++i) {
      if ((i + t) % 4 == 0) {
        lock.lock();
        ++a;
        ++b;
        lock.unlock();
      } else {
        lock.lock_shared(t);
        torn += a != b;
        lock.unlock_shared(t);
      }
    }
  });
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_EQ(a, 4u * 5000u);
  EXPECT_EQ(b, a);
}

TEST(DistributedRwLock, ReadersShareAndKeepWritersOut) {
  DistributedRwLock lock(2);
  lock.lock_shared(0);
  EXPECT_FALSE(lock.try_lock());  // a reader is in
  std::thread other([&] {          // would wait forever if readers excluded each other
    lock.lock_shared(1);
    lock.unlock_shared(1);
  });
  other.join();
  lock.unlock_shared(0);
  EXPECT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
}

// ---- the sequential structures ----------------------------------------------------------

TEST(Fingerprint, MatchesTheCheckersModel) {
  // tools/lincheck/models_blackbox_test.go pins the same value for the Go model.
  const std::uint64_t fp = seq::fingerprint_step(seq::fingerprint_step(0, {5, 3}), {7, static_cast<std::uint64_t>(-2)});
  EXPECT_EQ(static_cast<std::int64_t>(fp), 7643945910149597460LL);
}

template <class Q>
void expect_heap_sort(Q& q) {
  Xoshiro256StarStar rng;
  rng.seed(7);
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 200'000; ++i) values.push_back(rng.next() % 1000);  // many duplicates
  for (std::uint64_t v : values) q.insert(v);
  ASSERT_EQ(q.check_invariants(), "");
  std::sort(values.begin(), values.end());
  for (std::uint64_t v : values) ASSERT_EQ(q.delete_min(), v);
  EXPECT_FALSE(q.delete_min().has_value());
  EXPECT_EQ(q.check_invariants(), "");
}

TEST(SequentialStructures, PriorityQueuesSortAndSurviveDeepShapes) {
  seq::SkipListPq pq;
  expect_heap_sort(pq);
  seq::PairingHeap heap;
  expect_heap_sort(heap);
  // 200,000 ascending inserts make a root with 200,000 children: the pairing passes are
  // iterative, a recursive one would overflow the stack here.
  seq::PairingHeap deep;
  for (std::uint64_t v = 0; v < 200'000; ++v) deep.insert(v);
  for (std::uint64_t v = 0; v < 200'000; ++v) ASSERT_EQ(deep.delete_min(), v);
}

// Two instances fed the same operations are equal (NR's replicas rely on it), and differ
// once their operations differ.
template <class D, class Gen>
void expect_deterministic(Gen make_op) {
  D a{}, b{};
  Xoshiro256StarStar rng;
  rng.seed(11);
  for (int i = 0; i < 20'000; ++i) {
    const auto op = make_op(rng);
    EXPECT_TRUE(a.execute(op) == b.execute(op));
  }
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.check_invariants(), "");
  a.execute(make_op(rng));
  b.execute(make_op(rng));
  EXPECT_FALSE(a == b);
}

TEST(SequentialStructures, AreDeterministic) {
  using PqCode = seq::SkipListPq::Code;
  expect_deterministic<seq::SkipListPq>([](auto& g) {
    return seq::SkipListPq::Op{g.next() % 3 ? PqCode::insert : PqCode::delete_min, g.next() % 100};
  });
  using HeapCode = seq::PairingHeap::Code;
  expect_deterministic<seq::PairingHeap>([](auto& g) {
    return seq::PairingHeap::Op{g.next() % 3 ? HeapCode::insert : HeapCode::delete_min, g.next() % 100};
  });
  using DictCode = seq::SkipListDict::Code;
  expect_deterministic<seq::SkipListDict>([](auto& g) {
    return seq::SkipListDict::Op{g.next() % 2 ? DictCode::insert : DictCode::erase, g.next() % 500, g.next()};
  });
  // Short members: the ops are inline, nothing to dispose of.
  expect_deterministic<seq::SortedSet>([](auto& g) {
    std::string member = "m";
    member += std::to_string(g.next() % 300);
    const std::string_view view = member;
    if (g.next() % 5 == 0) return seq::SortedSet::zrem({&view, 1});
    return seq::SortedSet::zincrby(member, static_cast<double>(static_cast<std::int64_t>(g.next() % 21) - 10));
  });
  expect_deterministic<seq::Synthetic>([](auto& g) {
    return seq::Synthetic::Op{seq::Synthetic::Code::update, g.next(), 1 + static_cast<std::int64_t>(g.next() % 9)};
  });
}

TEST(SequentialStructures, SortedSetRanksFollowScoreThenMember) {
  using Z = seq::SortedSet;
  Z z;
  const auto incr = [&](std::string_view m, double by) { return z.execute(Z::zincrby(m, by)); };
  const auto rank = [&](std::string_view m) { return z.execute(Z::zrank(m, false)); };
  EXPECT_EQ(incr("10", 5).integer, 1);  // created
  EXPECT_EQ(incr("20", 5).integer, 1);
  EXPECT_EQ(incr("30", 1).score, 1);
  EXPECT_EQ(rank("30").integer, 0);
  EXPECT_EQ(rank("10").integer, 1);  // tie at 5: member "10" before "20"
  EXPECT_EQ(rank("20").integer, 2);
  const Z::Result moved = incr("10", 1);  // unlinked and reinserted past "20"
  EXPECT_EQ(moved.integer, 0);
  EXPECT_EQ(moved.score, 6);
  EXPECT_EQ(rank("10").integer, 2);
  EXPECT_EQ(incr("30", -7).score, -6);
  EXPECT_EQ(rank("30").integer, 0);
  EXPECT_FALSE(rank("40").ok);
  EXPECT_EQ(z.check_invariants(), "");
}

// The sorted set's replicas stay equal under NR with concurrent updates of every kind, heap
// blocks (long members) included. NR takes each op over and disposes of it once, after every
// replica applied it (the ASan tree reports a block freed early, twice or never).
TEST(SequentialStructures, SortedSetReplicasAgreeUnderNodeReplication) {
  using Z = seq::SortedSet;
  NodeReplicated<Z> nr({0, 0, 1, 1}, 2, tiny_log(16), [] { return Z(42); });
  run_together(4, [&](int t) {
      Xoshiro256StarStar g;
      g.seed(100 + static_cast<std::uint64_t>(t));
      for (int i = 0; i < 3'000; ++i) {
        std::string m = "m";
        m += std::to_string(g.next() % 100);
        if (g.next() % 4 == 0) m += std::string(40, 'L');  // past the inline capacity
        const std::string_view members[] = {m, "m1", "m2"};
        const Z::ScoredMember pairs[] = {{static_cast<double>(g.next() % 9), m}, {1, "m1"}};
        Z::Op op;
        switch (g.next() % 6) {
          case 0: op = Z::zincrby(m, static_cast<double>(static_cast<std::int64_t>(g.next() % 7) - 3)); break;
          case 1: op = Z::zadd(static_cast<std::uint8_t>(g.next() % 2 ? Z::ch : Z::gt), pairs); break;
          case 2: op = Z::zrem(members); break;
          case 3: op = Z::zrank(m, g.next() % 2); break;
          case 4: op = Z::range_by_score({2, false}, {6, true}, g.next() % 2, 1, 10); break;
          default: op = Z::zmscore(members); break;
        }
        const Z::Code code = op.code();
        const Z::Result r = nr.execute(t, op);  // op is NR's now
        if (code == Z::Code::range_by_score) {
          EXPECT_LE(r.items.size(), 10u);
          for (const auto& [member, score] : r.items) EXPECT_TRUE(score >= 2 && score < 6) << member;
        }
      }
  });
  EXPECT_EQ(nr.check_invariants(), "");  // every replica brought up to date, each sound, all equal
  EXPECT_GT(nr.structure().size(), 0u);
}

TEST(SequentialStructures, SyntheticTouchesDistinctEntries) {
  seq::Synthetic s(16, 8);
  EXPECT_EQ(s.execute({seq::Synthetic::Code::update, 3, 2}).touched_sum, 16u);  // 8 entries, +2 each
  EXPECT_EQ(s.execute({seq::Synthetic::Code::read, 3, 0}).touched_sum, 16u);
  EXPECT_EQ(s.execute({seq::Synthetic::Code::update, 3, -5}).touched_sum, static_cast<std::uint64_t>(-24));
  EXPECT_EQ(s.delta_sum(), static_cast<std::uint64_t>(-3));
  EXPECT_EQ(s.delta_count(), 0);
  EXPECT_EQ(s.check_invariants(), "");
}

// ---- the baselines on a structure that shows lost or repeated updates -----------------

template <class M>
void expect_counts_every_update(M& m, int threads) {
  run_together(threads, [&](int t) {
      std::uint64_t last = 0;
      for (int i = 0; i < 10'000; ++i) {
        const std::uint64_t v = m.execute(t, {i % 4 == 0});
        if (i % 4 == 0) {
          EXPECT_GE(v, last);
        }
        last = std::max(last, v);
      }
  });
  EXPECT_EQ(m.structure().value, static_cast<std::uint64_t>(threads) * 7500u);
}

TEST(Baselines, CountEveryUpdateOnce) {
  SpinLocked<Counter> sl(4);
  expect_counts_every_update(sl, 4);
  RwLocked<Counter> rwl(4);
  expect_counts_every_update(rwl, 4);
  FlatCombining<Counter> fc(4);
  expect_counts_every_update(fc, 4);
  FlatCombiningRw<Counter> fcplus(4);
  expect_counts_every_update(fcplus, 4);
  EXPECT_GT(fcplus.combines(), 0u);
}

// A structure whose updates wait inside their critical section until the test opens a gate.
struct Gate {
  struct Op {
    bool read = true;
  };
  using Result = int;
  static bool is_read_only(const Op& op) noexcept { return op.read; }
  Result execute(const Op& op) {
    if (op.read) return 0;
    inside->fetch_add(1);
    while (!open->load(std::memory_order_acquire)) std::this_thread::yield();
    return 1;
  }
  std::atomic<int>* inside;
  std::atomic<bool>* open;
};

// An update holds the lock; a read and an update arrive: each counts one wait, exactly; the
// same operations alone count none.
template <template <class> class Locked>
void expect_lock_waits_counted_exactly() {
  std::atomic<int> inside{0};
  std::atomic<bool> open{false};
  Locked<Gate> locked(3, Gate{&inside, &open});
  std::thread holder([&] { locked.execute(0, Gate::Op{false}); });
  while (inside.load() == 0) std::this_thread::yield();
  std::thread reader([&] { locked.execute(1, Gate::Op{true}); });
  std::thread writer([&] { locked.execute(2, Gate::Op{false}); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (locked.lock_waits() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(locked.lock_waits(), 2u) << "a read and an update found the lock held";
  open.store(true, std::memory_order_release);
  for (std::thread* t : {&holder, &reader, &writer}) t->join();
  locked.execute(1, Gate::Op{true});
  locked.execute(2, Gate::Op{false});
  EXPECT_EQ(locked.lock_waits(), 2u) << "operations alone waited";
}

TEST(Baselines, CountLockWaitsExactly) {
  expect_lock_waits_counted_exactly<SpinLocked>();
  expect_lock_waits_counted_exactly<RwLocked>();
}

TEST(DistributedRwLock, TryLockSharedFailsWhileAWriterHoldsIt) {
  DistributedRwLock lock(2);
  ASSERT_TRUE(lock.try_lock_shared(0));
  EXPECT_TRUE(lock.try_lock_shared(1));  // readers share
  EXPECT_FALSE(lock.try_lock());
  lock.unlock_shared(0);
  lock.unlock_shared(1);
  lock.lock();
  EXPECT_FALSE(lock.try_lock_shared(0));
  lock.unlock();
  EXPECT_TRUE(lock.try_lock());  // the failed try left no reader flag behind
  lock.unlock();
}

// ---- the registry's NR structures at 1, 2 and 3 virtual replicas ----------------------

using bench::Config;
using bench::TrialContext;
using bench::TrialStatus;

std::vector<std::string> nr_structures() {
  std::vector<std::string> out;
  const bench::Registry registry = bench::builtin_registry();
  for (const auto& e : registry.entries())
    if (e.node_replicated) out.push_back(e.name);
  return out;
}

class NrStructure : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(NrStructure, StressTrialValidatesWithReplicasCompared) {
  const auto& [name, replicas] = GetParam();
  const auto registry = bench::builtin_registry();
  const bench::StructureEntry& e = *registry.find(name);
  Config c;
  c.ds = e.name;
  c.threads = 4;  // more than the CPUs of the CI machines: preemption inside combining
  c.key_range = 256;
  c.insert_pct = c.delete_pct = 40;
  c.ops = 40'000;
  c.seed = 5;
  c.nr_replicas = replicas;
  c.nr_log_entries = 32;  // wraps the log over a thousand times
  c.reclaimer = e.default_variant().reclaimer;
  c.allocator = e.default_variant().allocator;
  static const Topology topology;
  const std::vector<int> cpus(c.total_threads(), -1);
  const auto out = e.run_trial(TrialContext{c, topology, cpus, 0, c.seed});
  EXPECT_EQ(out.status, TrialStatus::ok) << out.report.dump(1);
  EXPECT_EQ(out.report["validation"], "PASS");
  EXPECT_EQ(out.report["nr_replicas"], replicas);
  EXPECT_GT(out.report["nr_log_wraps"].get<std::uint64_t>(), 100u);
}

INSTANTIATE_TEST_SUITE_P(Registry, NrStructure,
                         ::testing::Combine(::testing::ValuesIn(nr_structures()), ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           std::string s = std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "_replicas";
                           std::replace(s.begin(), s.end(), '.', '_');
                           return s;
                         });

}  // namespace nr_test
