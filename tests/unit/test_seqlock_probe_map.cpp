// seqlock_probe_map's own properties: it agrees with std::map while it grows from its smallest
// table, its growth policy (2^20 keys: 2^19 buckets of 64 bytes, 32 bytes a key; the peak while
// doubling reported), and doubling under concurrent updates and finds. The scripted tests
// (test_hash_maps_scripted.cpp) force a find's torn read and a resize that meets a held lock;
// the registry's matrix runs the differential, stress, lincheck and sanitizer tests.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/hash/seqlock_probe_map.hpp"
#include "support/map_checks.hpp"
#include "support/stats_figures.hpp"

namespace seqlock_probe_map_test {

using namespace cdsb;
using reclaim::EpochBased;
using reclaim::NoReclaim;
using reclaim::ReclaimOptions;
using reclaim::SystemAllocator;
using Map = SeqlockProbeMap<EpochBased<SystemAllocator>>;

using cdsb::testing::figure;

// Random operations over 30,000 keys from the smallest table (16 buckets): it doubles about 10
// times on the way, with keys erased, re-inserted and assigned between the doublings.
template <class M>
void matches_std_map(std::uint64_t seed) {
  M map(1, ReclaimOptions{.eager = true}, SizeHint{1});
  EXPECT_EQ(map.bucket_count(), M::min_buckets);
  ASSERT_NO_FATAL_FAILURE(cdsb::testing::matches_std_map(map, [](std::uint64_t r) { return r % 30'000; }, 300'000, seed));
  EXPECT_GE(figure(map.stats(), "resizes"), 8u);
}

TEST(SeqlockProbeMap, MatchesStdMapWhileItGrows) { matches_std_map<Map>(1); }
TEST(SeqlockProbeMap, MatchesStdMapWhileItGrowsWithoutReclamation) {
  matches_std_map<SeqlockProbeMap<NoReclaim<SystemAllocator>>>(2);
}

// 2^20 keys inserted from the smallest table end in 2^19 buckets (3/4 of 2^19 x 3 slots is
// 1,179,648 > 2^20): 32 MiB, 32 bytes a key. The last doubling held the old table (16 MiB)
// and the new one at once; with ebr the old ones are freed once the epoch moves on.
TEST(SeqlockProbeMap, HoldsThirtyTwoBytesAKeyAt2To20Keys) {
  Map map(1, ReclaimOptions{.eager = true}, SizeHint{1});
  constexpr std::uint64_t keys = std::uint64_t{1} << 20;
  for (std::uint64_t k = 1; k <= keys; ++k) ASSERT_TRUE(map.insert(0, k, k));
  for (std::uint64_t k = 1; k <= 10'000; ++k) ASSERT_EQ(map.find(0, k), k);  // operations: the epoch moves on
  EXPECT_EQ(map.bucket_count(), std::uint64_t{1} << 19);
  const StatsReport stats = map.stats();
  const std::uint64_t table = (std::uint64_t{1} << 19) * Map::bucket_bytes;
  EXPECT_GE(figure(stats, "bytes_held"), table);
  EXPECT_LT(figure(stats, "bytes_held"), table + 4096);  // the old tables freed
  EXPECT_GE(figure(stats, "bytes_held_peak"), table + table / 2);  // old and new at the last doubling
  EXPECT_EQ(map.check_invariants(), "");
}

// Four threads insert their own keys (each its quarter of 1..100,000) from the smallest table
// while finding keys they inserted before: the table doubles about 13 times under them. A find
// of a key its thread inserted must succeed, with its value, whatever doubling is under way;
// at the end every key is there once.
TEST(SeqlockProbeMap, DoublesUnderConcurrentInsertsAndFinds) {
  constexpr int threads = 4;
  constexpr std::uint64_t per_thread = 25'000;
  Map map(threads, ReclaimOptions{.eager = true}, SizeHint{1});
  std::atomic<std::uint64_t> misses{0};
  cdsb::testing::run_together(threads, [&](int t) {
    Xoshiro256StarStar rng;
    rng.seed(40 + t);
    for (std::uint64_t i = 0; i < per_thread; ++i) {
      const std::uint64_t k = 1 + i * threads + t;
      map.insert(t, k, k * 3);
      const std::uint64_t earlier = 1 + (rng.next() % (i + 1)) * threads + t;
      if (map.find(t, earlier) != earlier * 3) misses.fetch_add(1);
    }
  });
  EXPECT_EQ(misses.load(), 0u);
  for (std::uint64_t k = 1; k <= per_thread * threads; ++k) ASSERT_EQ(map.find(0, k), k * 3) << k;
  EXPECT_EQ(map.check_invariants(), "");
  EXPECT_GE(figure(map.stats(), "resizes"), 10u);
}

// Inserts and erases at a fixed size (about 3/4 full, so keys are displaced past full buckets
// all the time), on 4 threads: the counts of keys passed must come back exactly as keys leave
// (else finds and inserts would scan ever further), and the table must not grow.
TEST(SeqlockProbeMap, ChurnAtAFixedSizeKeepsExactCounts) {
  constexpr int threads = 4;
  Map map(threads, ReclaimOptions{.eager = true}, SizeHint{9'000});  // 4,096 buckets, 12,288 slots
  const std::size_t buckets = map.bucket_count();
  for (std::uint64_t k = 1; k <= 9'000; ++k) map.insert(0, k, k);
  cdsb::testing::run_together(threads, [&](int t) {
    Xoshiro256StarStar rng;
    rng.seed(60 + t);
    for (int i = 0; i < 200'000; ++i) {
      const std::uint64_t k = 1 + rng.next() % 18'000;  // about half present
      if (i % 2) map.insert(t, k, k);
      else map.erase(t, k);
    }
  });
  EXPECT_EQ(map.check_invariants(), "");
  EXPECT_LE(map.bucket_count(), 2 * buckets);
}

}  // namespace seqlock_probe_map_test
