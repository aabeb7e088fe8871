// The user-space RCU (reclaim/rcu.hpp): a grace period waits for every read-side section in
// progress when it starts, and for no section that starts after it.
//
// The first tests play several thread ids on one OS thread (as test_reclaim.cpp does), so
// every interleaving is deterministic; the last ones use real threads, and a broken grace
// period shows there as a wrong value read, a use-after-free (ASan) or a race (TSan).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "cdsbench/platform/pause.hpp"
#include "cdsbench/reclaim/rcu.hpp"

namespace rcu_test {

using cdsb::reclaim::Rcu;

TEST(Rcu, NoReaderMeansNoWait) {
  Rcu rcu(3);
  rcu.start_grace_period(0);
  EXPECT_TRUE(rcu.grace_period_elapsed(0));
  rcu.synchronize(0);  // returns at once
}

TEST(Rcu, WaitsForAReaderThatStartedBefore) {
  Rcu rcu(3);
  rcu.read_lock(0);
  rcu.start_grace_period(2);
  EXPECT_FALSE(rcu.grace_period_elapsed(2));
  EXPECT_FALSE(rcu.grace_period_elapsed(2));  // polling changes nothing
  rcu.read_unlock(0);
  EXPECT_TRUE(rcu.grace_period_elapsed(2));
}

TEST(Rcu, DoesNotWaitForAReaderThatStartedAfter) {
  Rcu rcu(3);
  rcu.read_lock(0);
  rcu.start_grace_period(2);
  rcu.read_lock(1);  // after the grace period started
  EXPECT_FALSE(rcu.grace_period_elapsed(2));
  rcu.read_unlock(0);
  EXPECT_TRUE(rcu.grace_period_elapsed(2)) << "waited for a section that began after the grace period";
  EXPECT_TRUE(rcu.in_read_section(1));
  rcu.read_unlock(1);
}

// The same thread leaving and entering again: its new section began after the grace period.
TEST(Rcu, ANewSectionOfTheSameThreadDoesNotCount) {
  Rcu rcu(2);
  rcu.read_lock(0);
  rcu.start_grace_period(1);
  rcu.read_unlock(0);
  rcu.read_lock(0);
  EXPECT_TRUE(rcu.grace_period_elapsed(1));
  rcu.read_unlock(0);
}

// Two updaters' grace periods are independent: each waits for the readers it saw.
TEST(Rcu, ConcurrentGracePeriodsAreIndependent) {
  Rcu rcu(4);
  rcu.read_lock(0);
  rcu.start_grace_period(2);  // sees reader 0
  rcu.read_unlock(0);
  rcu.read_lock(1);
  rcu.start_grace_period(3);  // sees reader 1 only
  EXPECT_TRUE(rcu.grace_period_elapsed(2));
  EXPECT_FALSE(rcu.grace_period_elapsed(3));
  rcu.read_unlock(1);
  EXPECT_TRUE(rcu.grace_period_elapsed(3));
}

// synchronize() on another thread stays blocked while a pre-existing reader is inside, and
// returns once it leaves, although a reader that entered later is still inside.
TEST(Rcu, SynchronizeBlocksUntilPreExistingReadersLeave) {
  Rcu rcu(3);
  rcu.read_lock(0);
  std::atomic<bool> done{false};
  std::thread updater([&] {
    rcu.synchronize(2);
    done.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load()) << "synchronize returned while a reader that began before it was inside";
  // Reader 1 enters; it may or may not count (it races with the updater's snapshot), so it
  // leaves before reader 0 does.
  rcu.read_lock(1);
  rcu.read_unlock(1);
  EXPECT_FALSE(done.load());
  rcu.read_unlock(0);
  updater.join();
  EXPECT_TRUE(done.load());
}

// Readers follow a shared pointer and read its payload inside their sections; the updater
// swaps in a new object, waits for a grace period, poisons the old one and frees it. Without
// a correct grace period a reader sees the poison (always checked), or touches freed memory
// (ASan) or races with the poisoning write (TSan).
TEST(Rcu, UpdaterFreesOnlyAfterReadersAreDone) {
  struct Payload {
    std::uint64_t a, b;  // plain fields: a reader and the poisoning write must not overlap
  };
  constexpr int readers = 3;
  constexpr int updates = 2'000;
  Rcu rcu(readers + 1);
  std::atomic<Payload*> shared{new Payload{1, 1}};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bad{0}, reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < readers; ++t)
    threads.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        auto section = rcu.read_section(t);
        const Payload* p = shared.load(std::memory_order_acquire);
        const std::uint64_t a = p->a;
        for (int i = 0; i < 64; ++i) cdsb::cpu_relax();  // widen the window a broken RCU would leave
        if (a == 0 || a != p->b) bad.fetch_add(1, std::memory_order_relaxed);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  // Updates overlap reads: at least `updates` of them, and until the readers made progress;
  // but past 200 updates, no longer than 5 s (each grace period can take a time slice of a
  // descheduled reader on a loaded machine, under sanitizers).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (std::uint64_t i = 2; (i < updates + 2 || reads.load(std::memory_order_relaxed) < 20'000) &&
                            (i < 200 + 2 || std::chrono::steady_clock::now() < deadline);
       ++i) {
    Payload* old = shared.exchange(new Payload{i, i}, std::memory_order_acq_rel);
    rcu.synchronize(readers);
    old->a = 0;  // poison: a reader still inside would see it
    old->b = 0;
    delete old;
  }
  stop.store(true);
  for (auto& th : threads) th.join();
  delete shared.load();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
}

}  // namespace rcu_test
