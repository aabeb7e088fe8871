#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "cdsbench/platform/rw_lock.hpp"
#include "cdsbench/platform/spin_lock.hpp"

namespace locks_test {

TEST(SpinLock, MutualExclusionCountsEveryIncrement) {
  cdsb::SpinLock lock;
  std::uint64_t counter = 0;  // plain: only correct if the lock excludes
  constexpr int threads = 4, rounds = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        std::scoped_lock g(lock);
        ++counter;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(counter, std::uint64_t{threads} * rounds);
}

TEST(SpinLock, TryLockFailsWhileHeld) {
  cdsb::SpinLock lock;
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(RwSpinLock, WritersExcludeReadersAndWriters) {
  cdsb::RwSpinLock lock;
  std::uint64_t a = 0, b = 0;  // a writer keeps them equal; a reader must never see them differ
  std::atomic<int> torn{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        std::scoped_lock g(lock);
        ++a;
        ++b;
      }
    });
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        std::shared_lock g(lock);
        if (a != b) torn.fetch_add(1);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(a, 40000u);
  EXPECT_EQ(b, 40000u);
  EXPECT_EQ(torn.load(), 0);
}

TEST(RwSpinLock, ReadersShareTheLock) {
  cdsb::RwSpinLock lock;
  lock.lock_shared();
  std::atomic<bool> second_reader_in{false};
  // Would deadlock (and time out) if a reader excluded other readers.
  std::thread t([&] {
    lock.lock_shared();
    second_reader_in = true;
    lock.unlock_shared();
  });
  t.join();
  EXPECT_TRUE(second_reader_in.load());
  lock.unlock_shared();
  lock.lock();  // no reader left: a writer gets in
  lock.unlock();
}

}  // namespace locks_test
