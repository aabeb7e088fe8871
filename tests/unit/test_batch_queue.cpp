// The batch queue (include/cdsbench/queue/batch_queue.hpp): batches against std::deque
// sequentially (batches of up to 70 items: chains of segments, and dequeues across segments),
// and under threads every batch contiguous and in order in whatever a consumer took, every
// item exactly once, each producer's items in order.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <random>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "cdsbench/queue/batch_queue.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"

namespace batch_queue_test {

using namespace cdsb;
using namespace cdsb::reclaim;

TEST(BatchQueue, BatchesAgreeWithADequeAcrossSegmentsAndChains) {
  BatchQueue<EpochBased<>> q(1, ReclaimOptions{.eager = true});
  std::deque<std::uint64_t> reference;
  std::mt19937_64 rng(5);
  std::uint64_t next = 1;
  std::vector<std::uint64_t> batch(80), out(80);
  for (int op = 0; op < 20'000; ++op) {
    const std::size_t k = 1 + rng() % 70;  // above 64: a chain of two segments
    if (rng() % 2) {
      for (std::size_t j = 0; j < k; ++j) reference.push_back(batch[j] = next++);
      q.enqueue_batch(0, std::span<const std::uint64_t>(batch.data(), k));
    } else {
      const std::size_t n = q.dequeue_batch(0, k, out.data());
      ASSERT_EQ(n, std::min(k, reference.size())) << "fewer than max while the queue held more, at op " << op;
      for (std::size_t j = 0; j < n; ++j, reference.pop_front()) ASSERT_EQ(out[j], reference.front()) << "at op " << op;
    }
    if (op % 1000 == 0) {
      ASSERT_EQ(q.check_invariants(), "");
    }
  }
  std::vector<std::uint64_t> listed;
  q.for_each_item([&](std::uint64_t v) { listed.push_back(v); });
  EXPECT_EQ(listed, std::vector<std::uint64_t>(reference.begin(), reference.end()));
  EXPECT_EQ(q.check_invariants(), "");
  // Single operations are batches of one.
  q.enqueue(0, 99);
  while (!reference.empty()) {
    ASSERT_EQ(q.dequeue(0), reference.front());
    reference.pop_front();
  }
  EXPECT_EQ(q.dequeue(0), 99u);
  EXPECT_EQ(q.dequeue(0), std::nullopt);
}

// Items: producer << 40 | sequence, and two flags: the first and the last item of its batch.
constexpr std::uint64_t first_flag = std::uint64_t{1} << 62, last_flag = std::uint64_t{1} << 61;
constexpr std::uint64_t flags = first_flag | last_flag;

template <class Q>
void contiguous_batches(int producers, int consumers, std::uint64_t per_producer) {
  Q q(producers + consumers, ReclaimOptions{.eager = true});
  std::atomic<int> producing{producers};
  std::vector<std::vector<std::vector<std::uint64_t>>> takes(consumers);  // each consumer's dequeue_batch results
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      std::mt19937_64 rng(p);
      std::vector<std::uint64_t> batch(70);
      for (std::uint64_t s = 0; s < per_producer;) {
        const std::size_t k = std::min<std::uint64_t>(1 + rng() % 70, per_producer - s);
        for (std::size_t j = 0; j < k; ++j)
          batch[j] = std::uint64_t(p) << 40 | (s + j) | (j == 0 ? first_flag : 0) | (j + 1 == k ? last_flag : 0);
        q.enqueue_batch(p, std::span<const std::uint64_t>(batch.data(), k));
        s += k;
      }
      producing.fetch_sub(1, std::memory_order_release);
    });
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&, c] {
      std::mt19937_64 rng(100 + c);
      std::vector<std::uint64_t> out(70);
      for (;;) {
        const bool last_look = producing.load(std::memory_order_acquire) == 0;
        const std::size_t n = q.dequeue_batch(producers + c, 1 + rng() % 70, out.data());
        if (n) takes[c].emplace_back(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
        else if (last_look) return;
      }
    });
  for (auto& t : threads) t.join();
  std::set<std::uint64_t> seen;
  for (const auto& consumer : takes) {
    std::vector<std::int64_t> last(producers, -1);
    for (const auto& take : consumer) {
      for (std::size_t j = 0; j < take.size(); ++j) {
        const std::uint64_t item = take[j] & ~flags;
        const int p = static_cast<int>(item >> 40);
        const auto s = static_cast<std::int64_t>(item & ((std::uint64_t{1} << 40) - 1));
        ASSERT_LT(p, producers);
        ASSERT_GT(s, last[p]) << "producer " << p << "'s items out of order";
        last[p] = s;
        ASSERT_TRUE(seen.insert(item).second) << "item dequeued twice";
        // Within one take, an item that does not end its batch is followed by the next item
        // of the same batch: a batch's items are contiguous in the queue.
        if (j + 1 < take.size() && !(take[j] & last_flag)) {
          ASSERT_EQ(take[j + 1] & ~flags, item + 1) << "a batch was split";
        }
        if (j + 1 < take.size() && (take[j] & last_flag)) {
          ASSERT_TRUE(take[j + 1] & first_flag) << "a batch was entered midway";
        }
      }
    }
  }
  EXPECT_EQ(seen.size(), producers * per_producer);
  EXPECT_EQ(q.dequeue(0), std::nullopt);
  EXPECT_EQ(q.check_invariants(), "");
}

TEST(BatchQueue, BatchesStayContiguousUnderThreads) {
  contiguous_batches<BatchQueue<EpochBased<>>>(2, 2, 100'000);
  contiguous_batches<BatchQueue<NoReclaim<>>>(3, 1, 50'000);
  contiguous_batches<BatchQueue<EpochBased<PoolAllocator<SystemAllocator>>>>(1, 3, 100'000);
}

}  // namespace batch_queue_test
