// LockedRingQueue (PARSEC dedup's ring) and PipelineQueue (the termination protocol over any
// queue): sequential FIFO against std::deque, contiguous batches under concurrency, blocking
// when full, the wake-ups a batch or a dequeue owes to several waiters, and the producers-done
// protocol (every item exactly once, every consumer finished, the last items never lost).
// Every multi-threaded test runs its threads under Team, which fails the test instead of
// hanging when a thread does not return.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "cdsbench/queue/locked_ring_queue.hpp"
#include "cdsbench/queue/pipeline_queue.hpp"
#include "cdsbench/random/generators.hpp"

namespace locked_ring_queue_test {

using namespace std::chrono_literals;
using cdsb::LockedRingQueue;
using cdsb::PipelineQueue;

// Per wait; the tests themselves take milliseconds (a second or so under the sanitizers).
constexpr auto limit = 10s;

// Runs bodies on threads of their own. join() waits up to `limit` for all of them; if some
// has not returned by then the test fails, `unblock` (which must let every body return:
// drain the queue, finish the protocol) is called again and again for up to another `limit`,
// and a thread that still hangs aborts the binary with a message instead of hanging ctest.
// An exception escaping a body fails the test. The destructor joins.
class Team {
 public:
  explicit Team(std::function<void()> unblock = {}) : unblock_(std::move(unblock)) {}
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  ~Team() { join(); }

  void spawn(std::function<void()> body) {
    threads_.emplace_back([this, body = std::move(body)] {
      std::string error;
      try {
        body();
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "an exception of unknown type";
      }
      std::lock_guard lock(mutex_);
      if (!error.empty()) errors_.push_back(error);
      ++finished_;
      cv_.notify_all();
    });
  }

  // True if every thread returned within the limit.
  bool join() {
    if (joined_) return in_time_;
    joined_ = true;
    std::unique_lock lock(mutex_);
    const auto all = [&] { return finished_ == threads_.size(); };
    in_time_ = cv_.wait_for(lock, limit, all);
    if (!in_time_) {
      ADD_FAILURE() << threads_.size() - finished_ << " of " << threads_.size() << " threads still blocked after "
                    << std::chrono::seconds(limit).count() << " s";
      const auto deadline = std::chrono::steady_clock::now() + limit;
      while (!all()) {
        if (std::chrono::steady_clock::now() > deadline) {
          std::fprintf(stderr, "test_locked_ring_queue: threads still blocked after unblocking; aborting\n");
          std::abort();
        }
        lock.unlock();
        if (unblock_) unblock_();
        lock.lock();
        cv_.wait_for(lock, 10ms, all);
      }
    }
    lock.unlock();
    for (auto& t : threads_) t.join();
    for (const auto& e : errors_) ADD_FAILURE() << "a thread threw: " << e;
    return in_time_;
  }

 private:
  std::function<void()> unblock_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::size_t finished_ = 0;
  std::vector<std::string> errors_;
  bool joined_ = false, in_time_ = true;
};

// Polls pred until it holds or the limit passes.
template <class Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Long enough for a thread that is going to return at once to do so, so that one still
// running afterwards is (almost certainly) blocked. A check made after it can fail only for a
// wrong queue: a thread late to arrive is still blocked.
void settle() { std::this_thread::sleep_for(30ms); }

// What the unblocking of a failed test does to a queue with the protocol: drain it (frees
// blocked producers) and finish the protocol (frees blocked consumers).
template <class Q>
void drain_and_finish(Q& q, int tid) {
  while (q.dequeue(tid)) {
  }
  try {
    for (;;) q.producer_done();
  } catch (const std::logic_error&) {
  }
}

// A plain queue with no protocol and no native batch: PipelineQueue's generic path.
class MutexDequeQueue {
 public:
  explicit MutexDequeQueue(int /*max_threads*/) {}
  void enqueue(int /*tid*/, std::uint64_t v) {
    std::lock_guard lock(mutex_);
    items_.push_back(v);
  }
  std::optional<std::uint64_t> dequeue(int /*tid*/) {
    std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    const std::uint64_t v = items_.front();
    items_.pop_front();
    return v;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::deque<std::uint64_t> items_;
};

static_assert(cdsb::ConcurrentQueue<MutexDequeQueue> && !cdsb::HasTermination<MutexDequeQueue>);
static_assert(cdsb::HasTermination<PipelineQueue<MutexDequeQueue>> && !cdsb::HasNativeBatch<PipelineQueue<MutexDequeQueue>>);
static_assert(cdsb::HasTermination<PipelineQueue<LockedRingQueue>> && cdsb::HasNativeBatch<PipelineQueue<LockedRingQueue>>);

std::uint64_t stat(const cdsb::StatsReport& r, const std::string& name) {
  for (const auto& [n, v] : r.values)
    if (n == name) return v;
  ADD_FAILURE() << "no statistic " << name;
  return 0;
}

std::vector<std::uint64_t> contents(const LockedRingQueue& q) {
  std::vector<std::uint64_t> items;
  q.for_each_item([&](std::uint64_t v) { items.push_back(v); });
  return items;
}

// ---- sequential ------------------------------------------------------------------------------

TEST(LockedRingQueue, RoundsCapacityUpAndRejectsBadArguments) {
  EXPECT_EQ(LockedRingQueue(1, 5).capacity(), 8u);
  EXPECT_EQ(LockedRingQueue(1, 1).capacity(), 1u);
  EXPECT_EQ(LockedRingQueue(1, 16).capacity(), 16u);
  EXPECT_THROW(LockedRingQueue(1, 0), std::invalid_argument);
  EXPECT_THROW(LockedRingQueue(1, 4, -1), std::invalid_argument);

  LockedRingQueue q(1, 4);
  EXPECT_GE(q.memory_bytes(), sizeof(LockedRingQueue) + 4 * sizeof(std::uint64_t));
  const std::vector<std::uint64_t> five{1, 2, 3, 4, 5};
  EXPECT_THROW(q.enqueue_batch(0, five), std::invalid_argument);
  EXPECT_EQ(q.size(), 0u) << "a rejected batch must place nothing";
  std::uint64_t out[1];
  EXPECT_THROW(q.dequeue_batch_wait(0, 0, out), std::invalid_argument);
  q.producer_done();
  EXPECT_THROW(q.producer_done(), std::logic_error);
  EXPECT_EQ(q.check_invariants(), "");
}

TEST(LockedRingQueue, RandomSingleAndBatchOperationsMatchDeque) {
  LockedRingQueue q(1, 16);
  std::deque<std::uint64_t> model;
  cdsb::Xoshiro256StarStar rng;
  rng.seed(20240611);
  std::uint64_t next_value = 1;
  std::vector<std::uint64_t> batch, out(32);
  for (int i = 0; i < 20000; ++i) {
    const std::size_t room = q.capacity() - model.size();
    switch (rng.next() % 4) {
      case 0:  // enqueue (only with room: it would block)
        if (room > 0) {
          q.enqueue(0, next_value);
          model.push_back(next_value++);
        }
        break;
      case 1: {  // enqueue_batch of 0..room items (at most 7)
        batch.clear();
        const std::size_t k = rng.next() % (std::min<std::size_t>(room, 7) + 1);
        for (std::size_t j = 0; j < k; ++j) batch.push_back(next_value++);
        q.enqueue_batch(0, batch);
        model.insert(model.end(), batch.begin(), batch.end());
        break;
      }
      case 2: {  // dequeue
        const auto v = q.dequeue(0);
        if (model.empty()) {
          ASSERT_FALSE(v.has_value()) << "op " << i;
        } else {
          ASSERT_TRUE(v.has_value()) << "op " << i;
          ASSERT_EQ(*v, model.front()) << "op " << i;
          model.pop_front();
        }
        break;
      }
      case 3: {  // dequeue_batch of up to 0..20
        const std::size_t max = rng.next() % 21;
        const std::size_t n = q.dequeue_batch(0, max, out.data());
        ASSERT_EQ(n, std::min(max, model.size())) << "op " << i;
        for (std::size_t j = 0; j < n; ++j) {
          ASSERT_EQ(out[j], model.front()) << "op " << i << " item " << j;
          model.pop_front();
        }
        break;
      }
    }
    ASSERT_EQ(q.size(), model.size()) << "op " << i;
    if (i % 97 == 0) {
      ASSERT_EQ(q.check_invariants(), "") << "op " << i;
      ASSERT_EQ(contents(q), std::vector<std::uint64_t>(model.begin(), model.end())) << "op " << i;
    }
  }
  EXPECT_GT(next_value, 10000u);  // the ring wrapped many times
  const auto r = q.stats();
  EXPECT_EQ(stat(r, "waits_full"), 0u);
  EXPECT_EQ(stat(r, "waits_empty"), 0u);
}

TEST(LockedRingQueue, BlockingDequeuesDrainThenReportFinished) {
  LockedRingQueue q(1, 8);
  const std::vector<std::uint64_t> items{10, 11, 12, 13, 14};
  q.enqueue_batch(0, items);
  q.producer_done();
  EXPECT_EQ(q.dequeue_wait(0), std::optional<std::uint64_t>(10));
  std::uint64_t out[8];
  ASSERT_EQ(q.dequeue_batch_wait(0, 3, out), 3u);
  EXPECT_EQ(std::vector<std::uint64_t>(out, out + 3), (std::vector<std::uint64_t>{11, 12, 13}));
  ASSERT_EQ(q.dequeue_batch_wait(0, 8, out), 1u);
  EXPECT_EQ(out[0], 14u);
  EXPECT_EQ(q.dequeue_wait(0), std::nullopt);
  EXPECT_EQ(q.dequeue_batch_wait(0, 8, out), 0u);
}

// ---- batches under concurrency ---------------------------------------------------------------

// Producers enqueue batches of tagged items while consumers take chunks with dequeue_batch.
// A batch is contiguous in the ring and a chunk is a contiguous run of it, so inside a chunk
// the item after x is x's successor in its batch, or else x ends its batch and the next item
// starts one. And per producer, each consumer sees the items in order; all, exactly once.
TEST(LockedRingQueue, ConcurrentBatchesStayContiguousInOrderAndExactlyOnce) {
  constexpr int producers = 3, consumers = 3, batches = 300;
  LockedRingQueue q(producers + consumers + 1, 64);
  // Item = producer << 32 | seq. batch_of[p][seq]: the producer's batch number of each item,
  // filled before the item is enqueued (read after join).
  std::vector<std::vector<std::uint32_t>> batch_of(producers);
  std::vector<std::uint32_t> produced(producers);
  std::vector<std::vector<std::vector<std::uint64_t>>> chunks(consumers);
  std::atomic<std::uint64_t> taken{0};
  std::atomic<std::uint64_t> total{0};
  std::atomic<int> producing{producers};
  Team team([&] { drain_and_finish(q, producers + consumers); });
  for (int p = 0; p < producers; ++p)
    team.spawn([&, p] {
      cdsb::Xoshiro256StarStar rng;
      rng.seed(100 + p);
      std::uint32_t seq = 0;
      std::vector<std::uint64_t> batch;
      batch_of[p].reserve(batches * 8);
      for (std::uint32_t b = 0; b < batches; ++b) {
        batch.clear();
        const std::size_t k = 1 + rng.next() % 8;
        for (std::size_t j = 0; j < k; ++j) {
          batch_of[p].push_back(b);
          batch.push_back(std::uint64_t(p) << 32 | seq++);
        }
        q.enqueue_batch(p, batch);
      }
      produced[p] = seq;
      total.fetch_add(seq);
      producing.fetch_sub(1);
    });
  for (int c = 0; c < consumers; ++c)
    team.spawn([&, c] {
      const int tid = producers + c;
      cdsb::Xoshiro256StarStar rng;
      rng.seed(200 + c);
      std::vector<std::uint64_t> out(16);
      for (;;) {
        const std::size_t n = q.dequeue_batch(tid, 1 + rng.next() % 16, out.data());
        if (n > 0) {
          chunks[c].emplace_back(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
          taken.fetch_add(n);
        } else if (producing.load() == 0 && taken.load() == total.load()) {
          return;
        } else {
          std::this_thread::yield();
        }
      }
    });
  ASSERT_TRUE(team.join());

  std::vector<std::vector<int>> seen(producers);
  for (int p = 0; p < producers; ++p) seen[p].assign(produced[p], 0);
  const auto producer = [](std::uint64_t v) { return static_cast<int>(v >> 32); };
  const auto seq = [](std::uint64_t v) { return static_cast<std::uint32_t>(v); };
  for (int c = 0; c < consumers; ++c) {
    std::vector<std::int64_t> last(producers, -1);
    for (const auto& chunk : chunks[c]) {
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        const std::uint64_t v = chunk[i];
        const int p = producer(v);
        ASSERT_TRUE(p >= 0 && p < producers && seq(v) < produced[p]) << "unknown item " << v;
        ++seen[p][seq(v)];
        ASSERT_GT(std::int64_t{seq(v)}, last[p]) << "consumer " << c << " got producer " << p << "'s items out of order";
        last[p] = seq(v);
        if (i + 1 < chunk.size()) {
          const std::uint64_t w = chunk[i + 1];
          const int pw = producer(w);
          ASSERT_TRUE(pw >= 0 && pw < producers && seq(w) < produced[pw]) << "unknown item " << w;
          const bool ends = seq(v) + 1 == produced[p] || batch_of[p][seq(v) + 1] != batch_of[p][seq(v)];
          const bool successor = !ends && w == v + 1;
          const bool starts = seq(w) == 0 || batch_of[pw][seq(w) - 1] != batch_of[pw][seq(w)];
          ASSERT_TRUE(successor || (ends && starts))
              << "a batch was interleaved with other items: " << std::hex << v << " then " << w;
        }
      }
    }
  }
  for (int p = 0; p < producers; ++p)
    for (std::uint32_t s = 0; s < produced[p]; ++s)
      ASSERT_EQ(seen[p][s], 1) << "producer " << p << " item " << s << " dequeued " << seen[p][s] << " times";
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.check_invariants(), "");
}

// ---- blocking --------------------------------------------------------------------------------

TEST(LockedRingQueue, EnqueueBlocksWhileFullUntilADequeue) {
  LockedRingQueue q(3, 4);
  for (std::uint64_t v = 1; v <= 4; ++v) q.enqueue(0, v);
  std::atomic<bool> started{false}, enqueued{false};
  Team team([&] { drain_and_finish(q, 2); });
  team.spawn([&] {
    started = true;
    q.enqueue(1, 5);
    enqueued = true;
  });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  settle();
  EXPECT_FALSE(enqueued.load()) << "enqueue returned although the ring was full";
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.dequeue(0), std::optional<std::uint64_t>(1));
  EXPECT_TRUE(eventually([&] { return enqueued.load(); })) << "enqueue did not resume after a dequeue";
  ASSERT_TRUE(team.join());
  EXPECT_EQ(contents(q), (std::vector<std::uint64_t>{2, 3, 4, 5}));
  EXPECT_LE(stat(q.stats(), "waits_full"), 1u);
}

TEST(LockedRingQueue, BatchWaitsForRoomForAllItsItems) {
  LockedRingQueue q(3, 4);
  q.enqueue(0, 1);
  q.enqueue(0, 2);
  std::atomic<bool> started{false}, enqueued{false};
  Team team([&] { drain_and_finish(q, 2); });
  team.spawn([&] {
    started = true;
    const std::vector<std::uint64_t> batch{10, 11, 12};
    q.enqueue_batch(1, batch);
    enqueued = true;
  });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  settle();
  EXPECT_FALSE(enqueued.load()) << "a batch of 3 went into a ring with room for 2";
  EXPECT_EQ(contents(q), (std::vector<std::uint64_t>{1, 2})) << "part of a waiting batch was placed";
  EXPECT_EQ(q.dequeue(0), std::optional<std::uint64_t>(1));
  EXPECT_TRUE(eventually([&] { return enqueued.load(); }));
  ASSERT_TRUE(team.join());
  EXPECT_EQ(contents(q), (std::vector<std::uint64_t>{2, 10, 11, 12}));
}

// Two producers wait for room of different sizes; a dequeue that frees one slot must wake the
// one that fits (a single notify could wake the batch, which waits on, and lose the other).
TEST(LockedRingQueue, FreedRoomWakesTheProducerThatFits) {
  LockedRingQueue q(4, 4);
  for (std::uint64_t v = 1; v <= 4; ++v) q.enqueue(0, v);
  std::atomic<int> started{0};
  std::atomic<bool> batch_done{false}, single_done{false};
  Team team([&] { drain_and_finish(q, 3); });
  team.spawn([&] {
    ++started;
    const std::vector<std::uint64_t> batch{20, 21, 22};
    q.enqueue_batch(1, batch);
    batch_done = true;
  });
  team.spawn([&] {
    ++started;
    q.enqueue(2, 10);
    single_done = true;
  });
  ASSERT_TRUE(eventually([&] { return started.load() == 2; }));
  settle();
  EXPECT_FALSE(batch_done.load());
  EXPECT_FALSE(single_done.load());
  EXPECT_EQ(q.dequeue(0), std::optional<std::uint64_t>(1));  // room for 1
  EXPECT_TRUE(eventually([&] { return single_done.load(); })) << "the producer that fits was not woken";
  settle();
  EXPECT_FALSE(batch_done.load());
  std::uint64_t out[3];
  EXPECT_EQ(q.dequeue_batch(0, 3, out), 3u);  // room for 3
  EXPECT_TRUE(eventually([&] { return batch_done.load(); }));
  ASSERT_TRUE(team.join());
  EXPECT_EQ(contents(q), (std::vector<std::uint64_t>{10, 20, 21, 22}));
}

// A batch of k items into an empty ring with several consumers blocked must wake k of them (one
// notify would leave the others asleep next to items); fewer items than waiters leave the rest
// blocked until the protocol ends.
TEST(LockedRingQueue, BatchWakesAsManyBlockedConsumersAsItHasItems) {
  constexpr int consumers = 3;
  LockedRingQueue q(consumers + 2, 8);
  std::atomic<int> started{0}, returned{0};
  std::vector<std::optional<std::uint64_t>> got(consumers);
  Team team([&] { drain_and_finish(q, consumers + 1); });
  for (int c = 0; c < consumers; ++c)
    team.spawn([&, c] {
      ++started;
      got[c] = q.dequeue_wait(c);
      ++returned;
    });
  ASSERT_TRUE(eventually([&] { return started.load() == consumers; }));
  settle();
  EXPECT_EQ(returned.load(), 0);
  const std::vector<std::uint64_t> two{7, 8};
  q.enqueue_batch(consumers, two);
  EXPECT_TRUE(eventually([&] { return returned.load() == 2; })) << "a batch of 2 woke fewer than 2 consumers";
  settle();
  EXPECT_EQ(returned.load(), 2);
  q.producer_done();
  ASSERT_TRUE(team.join());
  std::vector<std::uint64_t> values;
  int finished = 0;
  for (const auto& g : got) {
    if (g) values.push_back(*g);
    else ++finished;
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, two);
  EXPECT_EQ(finished, 1);
  EXPECT_LE(stat(q.stats(), "waits_empty"), std::uint64_t{consumers});
}

// ---- the termination protocol (LockedRingQueue, and PipelineQueue's two paths) ------------------

template <class Q>
struct QueueMaker;
template <>
struct QueueMaker<LockedRingQueue> {
  static std::unique_ptr<LockedRingQueue> make(int threads, std::size_t capacity) {
    return std::make_unique<LockedRingQueue>(threads, capacity);
  }
};
template <>
struct QueueMaker<PipelineQueue<LockedRingQueue>> {
  static std::unique_ptr<PipelineQueue<LockedRingQueue>> make(int threads, std::size_t capacity) {
    return std::make_unique<PipelineQueue<LockedRingQueue>>(threads, capacity);
  }
};
template <>
struct QueueMaker<PipelineQueue<MutexDequeQueue>> {
  static std::unique_ptr<PipelineQueue<MutexDequeQueue>> make(int threads, std::size_t /*unbounded*/) {
    return std::make_unique<PipelineQueue<MutexDequeQueue>>(threads);
  }
};

template <class Q>
class Termination : public ::testing::Test {};
using TerminationQueues = ::testing::Types<LockedRingQueue, PipelineQueue<LockedRingQueue>, PipelineQueue<MutexDequeQueue>>;
class TerminationNames {
 public:
  template <class T>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<T, LockedRingQueue>) return "LockedRing";
    else if constexpr (std::is_same_v<T, PipelineQueue<LockedRingQueue>>) return "PipelineOverLockedRing";
    else return "PipelineOverMutexDeque";
  }
};
TYPED_TEST_SUITE(Termination, TerminationQueues, TerminationNames);

// Many short rounds on a ring of 2: producers mix single and batch enqueues and end with a
// batch right before producer_done; consumers run until finished, all with dequeue_wait, all
// with dequeue_batch_wait, or mixed (by round: a consumer of one kind that gives up early is
// otherwise covered by one of the other kind). Every item arrives exactly once, in each producer's order per consumer,
// and every consumer returns finished.
TYPED_TEST(Termination, EveryItemExactlyOnceAndEveryConsumerFinishes) {
  constexpr int producers = 3, consumers = 3, items = 24, rounds = 150;
  for (int round = 0; round < rounds; ++round) {
    auto q = QueueMaker<TypeParam>::make(producers + consumers + 1, 2);
    q->set_producers(producers);
    std::vector<std::vector<std::uint64_t>> got(consumers);
    std::vector<int> finished(consumers, 0);
    {
      Team team([&] { drain_and_finish(*q, producers + consumers); });
      for (int p = 0; p < producers; ++p)
        team.spawn([&, p] {
          cdsb::Xoshiro256StarStar rng;
          rng.seed(std::uint64_t(round) * 31 + p);
          std::uint32_t seq = 0;
          while (seq < items) {
            const std::uint32_t left = items - seq;
            const std::uint32_t k = left <= 2 ? left : 1 + static_cast<std::uint32_t>(rng.next() % 2);
            if (k == 1 && rng.next() % 2) {
              q->enqueue(p, std::uint64_t(p) << 32 | seq++);
            } else {
              std::vector<std::uint64_t> batch;
              for (std::uint32_t j = 0; j < k; ++j) batch.push_back(std::uint64_t(p) << 32 | seq++);
              q->enqueue_batch(p, batch);  // the last batch: right before producer_done
            }
          }
          q->producer_done();
        });
      for (int c = 0; c < consumers; ++c)
        team.spawn([&, c] {
          const int tid = producers + c;
          if (round % 3 == 0 || (round % 3 == 2 && c % 2 == 0)) {
            while (auto v = q->dequeue_wait(tid)) got[c].push_back(*v);
          } else {
            std::uint64_t out[3];
            while (const std::size_t n = q->dequeue_batch_wait(tid, 3, out)) got[c].insert(got[c].end(), out, out + n);
          }
          finished[c] = 1;
        });
      ASSERT_TRUE(team.join()) << "round " << round;
    }
    std::vector<std::vector<int>> seen(producers, std::vector<int>(items, 0));
    for (int c = 0; c < consumers; ++c) {
      EXPECT_EQ(finished[c], 1) << "round " << round << " consumer " << c;
      std::vector<std::int64_t> last(producers, -1);
      for (const std::uint64_t v : got[c]) {
        const auto p = static_cast<int>(v >> 32);
        const auto s = static_cast<std::uint32_t>(v);
        ASSERT_TRUE(p < producers && s < items) << "unknown item " << v;
        ++seen[p][s];
        ASSERT_GT(std::int64_t{s}, last[p]) << "round " << round << ": producer " << p << " out of order";
        last[p] = s;
      }
    }
    for (int p = 0; p < producers; ++p)
      for (int s = 0; s < items; ++s)
        ASSERT_EQ(seen[p][s], 1) << "round " << round << ": producer " << p << " item " << s << " dequeued "
                                 << seen[p][s] << " times" << (s >= items - 2 ? " (one of its last)" : "");
    // Finished stays finished.
    EXPECT_EQ(q->dequeue_wait(0), std::nullopt);
  }
}

// Consumers blocked on an empty queue with no item ever enqueued: the first producer_done
// does not release them, the last one does.
TYPED_TEST(Termination, BlockedConsumersFinishAtTheLastProducerDone) {
  auto q = QueueMaker<TypeParam>::make(4, 4);
  q->set_producers(2);
  std::atomic<int> started{0}, returned{0};
  std::optional<std::uint64_t> single = 99;
  std::size_t batch = 99;
  Team team([&] { drain_and_finish(*q, 3); });
  team.spawn([&] {
    ++started;
    single = q->dequeue_wait(0);
    ++returned;
  });
  team.spawn([&] {
    ++started;
    std::uint64_t out[4];
    batch = q->dequeue_batch_wait(1, 4, out);
    ++returned;
  });
  ASSERT_TRUE(eventually([&] { return started.load() == 2; }));
  settle();
  EXPECT_EQ(returned.load(), 0) << "a consumer returned while no producer was done";
  q->producer_done();
  settle();
  EXPECT_EQ(returned.load(), 0) << "a consumer returned while a producer was not done";
  q->producer_done();
  ASSERT_TRUE(team.join()) << "the last producer_done did not release the blocked consumers";
  EXPECT_EQ(single, std::nullopt);
  EXPECT_EQ(batch, 0u);
  EXPECT_THROW(q->producer_done(), std::logic_error);
}

// ---- PipelineQueue specifics -------------------------------------------------------------------

// A plain queue whose dequeue, the first time it finds the queue empty, runs a hook after
// its lock hold: the hook acts in the window between a consumer's empty dequeue and what the
// consumer does next, on every run.
class HookedQueue : public MutexDequeQueue {
 public:
  explicit HookedQueue(int max_threads) : MutexDequeQueue(max_threads) {}
  std::function<void()> on_first_empty;
  std::optional<std::uint64_t> dequeue(int tid) {
    auto v = MutexDequeQueue::dequeue(tid);
    if (!v && on_first_empty) std::exchange(on_first_empty, nullptr)();
    return v;
  }
};

// The generic protocol's order: the last producer enqueues and calls producer_done right after
// a consumer's dequeue found the queue empty. A consumer that read the count only after that
// dequeue would see every producer done and return finished, losing the item; one that read
// it before (the wrapper's order) tries again and gets it.
TEST(PipelineQueue, ItemEnqueuedJustAfterAnEmptyDequeueIsNotLost) {
  {
    PipelineQueue<HookedQueue> q(2);
    q.queue().on_first_empty = [&] {
      q.enqueue(1, 42);
      q.producer_done();
    };
    EXPECT_EQ(q.dequeue_wait(0), std::optional<std::uint64_t>(42));
    EXPECT_EQ(q.dequeue_wait(0), std::nullopt);
  }
  {
    PipelineQueue<HookedQueue> q(2);
    q.queue().on_first_empty = [&] {
      q.enqueue(1, 43);
      q.producer_done();
    };
    std::uint64_t out[4];
    ASSERT_EQ(q.dequeue_batch_wait(0, 4, out), 1u);
    EXPECT_EQ(out[0], 43u);
    EXPECT_EQ(q.dequeue_batch_wait(0, 4, out), 0u);
  }
}

TEST(PipelineQueue, GenericPathRejectsMisuse) {
  PipelineQueue<MutexDequeQueue> q(1);
  EXPECT_THROW(q.set_producers(-1), std::invalid_argument);
  q.set_producers(1);
  std::uint64_t out[1];
  EXPECT_THROW(q.dequeue_batch_wait(0, 0, out), std::invalid_argument);
  q.enqueue(0, 5);
  q.producer_done();
  EXPECT_THROW(q.producer_done(), std::logic_error);
  EXPECT_EQ(q.queue().size(), 1u);
  EXPECT_EQ(q.dequeue_wait(0), std::optional<std::uint64_t>(5));
  EXPECT_EQ(q.dequeue_wait(0), std::nullopt);
}

TEST(PipelineQueue, GenericPathBatchesKeepOrder) {
  PipelineQueue<MutexDequeQueue> q(1);
  const std::vector<std::uint64_t> items{1, 2, 3, 4, 5};
  q.enqueue_batch(0, items);
  std::uint64_t out[8];
  ASSERT_EQ(q.dequeue_batch_wait(0, 3, out), 3u);
  EXPECT_EQ(std::vector<std::uint64_t>(out, out + 3), (std::vector<std::uint64_t>{1, 2, 3}));
  q.producer_done();
  ASSERT_EQ(q.dequeue_batch_wait(0, 8, out), 2u);
  EXPECT_EQ(std::vector<std::uint64_t>(out, out + 2), (std::vector<std::uint64_t>{4, 5}));
  EXPECT_EQ(q.dequeue_batch_wait(0, 8, out), 0u);
}

TEST(PipelineQueue, ForwardsToTheNativeProtocol) {
  PipelineQueue<LockedRingQueue> q(2, 5, 3);  // LockedRingQueue(2, 5, 3)
  EXPECT_EQ(q.queue().capacity(), 8u);
  const std::vector<std::uint64_t> items{1, 2, 3};
  q.enqueue_batch(0, items);
  EXPECT_EQ(q.queue().size(), 3u);
  std::uint64_t out[2];
  EXPECT_EQ(q.dequeue_batch(0, 2, out), 2u);
  q.set_producers(1);  // forwarded: one producer_done now finishes
  q.producer_done();
  EXPECT_THROW(q.queue().producer_done(), std::logic_error) << "the ring did not count the forwarded producer_done";
  EXPECT_EQ(q.dequeue_wait(1), std::optional<std::uint64_t>(3));
  EXPECT_EQ(q.dequeue_wait(1), std::nullopt);
}

}  // namespace locked_ring_queue_test
