// The unit tests' producer-consumer check of a queue (tests/unit/test_lcrq.cpp,
// test_wait_free_queue.cpp): P producers, C consumers, each item named by its producer and
// sequence number. Every item exactly once, each producer's items in order at every consumer,
// and the queue empty and consistent at the end; then the caller's own checks of the queue.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>
#include <vector>

#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb::testing {

template <class Q, class Also>
void exchange(int producers, int consumers, std::uint64_t per_producer, Also also) {
  auto make = [&] {  // eager reclamation where the queue takes a reclaimer's options
    if constexpr (std::is_constructible_v<Q, int, reclaim::ReclaimOptions>)
      return Q(producers + consumers, reclaim::ReclaimOptions{.eager = true});
    else
      return Q(producers + consumers);
  };
  Q q = make();
  std::atomic<int> producing{producers};
  std::vector<std::vector<std::uint64_t>> got(consumers);
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (std::uint64_t i = 0; i < per_producer; ++i) q.enqueue(p, (std::uint64_t(p) << 32) | i);
      producing.fetch_sub(1, std::memory_order_release);
    });
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&, c] {
      const int tid = producers + c;
      for (;;) {
        const bool last_look = producing.load(std::memory_order_acquire) == 0;  // before the dequeue
        if (const auto v = q.dequeue(tid)) got[c].push_back(*v);
        else if (last_look) return;
      }
    });
  for (auto& t : threads) t.join();
  std::set<std::uint64_t> seen;
  std::size_t total = 0;
  for (const auto& items : got) {
    std::vector<std::int64_t> last(producers, -1);
    for (const std::uint64_t v : items) {
      const int p = static_cast<int>(v >> 32);
      const auto sequence = static_cast<std::int64_t>(v & 0xffffffff);
      ASSERT_LT(p, producers);
      ASSERT_GT(sequence, last[p]) << "producer " << p << "'s items out of order";
      last[p] = sequence;
      seen.insert(v);
      ++total;
    }
  }
  EXPECT_EQ(total, producers * per_producer);
  EXPECT_EQ(seen.size(), total) << "an item dequeued twice";
  EXPECT_EQ(q.dequeue(0), std::nullopt);
  EXPECT_EQ(q.check_invariants(), "");
  also(q);
}

template <class Q>
void exchange(int producers, int consumers, std::uint64_t per_producer) {
  exchange<Q>(producers, consumers, per_producer, [](const Q&) {});
}

}  // namespace cdsb::testing
