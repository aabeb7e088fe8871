// feldman_wait_free_map's own properties: paths that run to the deepest level (keys that only
// their last bits tell apart), the depth a weak hash costs on digests, and the bound on every
// operation's steps under contention. The scripted tests (test_hash_maps_scripted.cpp) force
// the states the bound rests on; the registry's matrix runs the differential, stress,
// lincheck and sanitizer tests.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/hash/feldman_wait_free_map.hpp"
#include "cdsbench/set/hash/hashes.hpp"
#include "support/map_checks.hpp"
#include "support/stats_figures.hpp"

namespace feldman_wait_free_map_test {

using namespace cdsb;
using reclaim::EpochBased;
using reclaim::NoReclaim;
using reclaim::ReclaimOptions;
using reclaim::SystemAllocator;

// Every key hashes to 0: a path is then decided by the key's own bits alone, after 64 zero
// bits, so keys that differ only in their top bits share every level but the deepest.
struct ZeroHash {
  std::uint64_t operator()(std::uint64_t) const { return 0; }
  std::uint64_t operator()(const Digest160&) const { return 0; }
};

using cdsb::testing::figure;

using DeepMap = FeldmanWaitFreeMap<EpochBased<SystemAllocator>, std::uint64_t, std::uint64_t, ZeroHash>;

// A 64-bit key's last path chunk is its top 4 bits.
std::uint64_t with_top(std::uint64_t low, std::uint64_t top) { return low | top << 60; }

TEST(FeldmanWaitFreeMap, KeysThatDifferInTheirLastBitsMeetAtTheDeepestLevel) {
  DeepMap map(1, ReclaimOptions{.eager = true}, SizeHint{1});
  ASSERT_EQ(map.head_bits(), 8);
  ASSERT_EQ(map.deepest_level(), 30);  // (64 + 64 - 8) / 4
  for (std::uint64_t top = 0; top < 16; ++top) ASSERT_TRUE(map.insert(0, with_top(5, top), top));
  for (std::uint64_t top = 0; top < 16; ++top) ASSERT_EQ(map.find(0, with_top(5, top)), top);
  EXPECT_EQ(figure(map.stats(), "deepest_key_depth"), 31u);  // the head and 30 arrays
  EXPECT_EQ(figure(map.stats(), "child_arrays"), 30u);        // one chain of arrays
  // At the deepest level: erase, a second erase, assign of an absent key, re-insert, assign.
  EXPECT_TRUE(map.erase(0, with_top(5, 3)));
  EXPECT_FALSE(map.erase(0, with_top(5, 3)));
  EXPECT_FALSE(map.assign(0, with_top(5, 3), 99));
  EXPECT_EQ(map.find(0, with_top(5, 3)), std::nullopt);
  EXPECT_EQ(map.find_or_insert(0, with_top(5, 3), 33), (std::pair<std::uint64_t, bool>(33, true)));
  EXPECT_EQ(map.find_or_insert(0, with_top(5, 3), 34), (std::pair<std::uint64_t, bool>(33, false)));
  EXPECT_TRUE(map.assign(0, with_top(5, 3), 35));
  EXPECT_EQ(map.find(0, with_top(5, 3)), 35u);
  EXPECT_EQ(map.check_invariants(), "");
  std::uint64_t entries = 0;
  map.for_each_entry([&](std::uint64_t, std::uint64_t) { ++entries; });
  EXPECT_EQ(entries, 16u);
}

// Random operations on keys that crowd a few deep paths (3 low values x 4 top values x a few
// middle bits: paths that split at many levels), against std::map, with an eager reclaimer (so a
// node read after its retirement would be a use-after-free under ASan).
template <class Map>
void matches_std_map_on_deep_paths(std::uint64_t seed) {
  Map map(1, ReclaimOptions{.eager = true}, SizeHint{1});
  cdsb::testing::matches_std_map(map, [](std::uint64_t r) { return with_top(r % 3 | ((r >> 4) % 4) << 40, (r >> 8) % 4); },
                           200'000, seed);
}

TEST(FeldmanWaitFreeMap, MatchesStdMapOnDeepPaths) { matches_std_map_on_deep_paths<DeepMap>(1); }
TEST(FeldmanWaitFreeMap, MatchesStdMapOnDeepPathsWithoutReclamation) {
  matches_std_map_on_deep_paths<FeldmanWaitFreeMap<NoReclaim<SystemAllocator>, std::uint64_t, std::uint64_t, ZeroHash>>(2);
}

// What the dedup study's clustering costs this map: bytesum uses 13 of the 64 hash bits, so
// digests sharing a sum share every level until the hash is used up, then part by their own
// bits; an even hash parts them near the head.
TEST(FeldmanWaitFreeMap, AWeakHashShowsAsDepth) {
  Xoshiro256StarStar rng;
  rng.seed(7);
  std::vector<Digest160> digests(98'317);
  for (auto& d : digests)
    for (std::size_t i = 0; i < d.bytes.size(); ++i) d.bytes[i] = static_cast<std::uint8_t>(rng.next());
  FeldmanWaitFreeMap<NoReclaim<SystemAllocator>, Digest160, std::uint64_t, hash::ByteSum> weak(1, {}, SizeHint{98'317});
  FeldmanWaitFreeMap<NoReclaim<SystemAllocator>, Digest160, std::uint64_t, hash::Even> even(1, {}, SizeHint{98'317});
  for (const auto& d : digests) {
    weak.insert(0, d, 1);
    even.insert(0, d, 1);
  }
  // head 2^17 slots: bytesum's values (< 5,101) fill at most 5,101 of them; the hash's bits 17
  // to 63 are zero, 12 levels of arrays, before the digest's bits part the keys. An even hash
  // leaves about 1 key in 20 below depth 2 (seed 7: 4,535 of 98,317; the deepest 7).
  const auto mean_depth = [](const auto& map) {
    double sum = 0, keys = 0;
    map.for_each_key_depth([&](const Digest160&, std::size_t depth) { sum += static_cast<double>(depth), keys += 1; });
    return sum / keys;
  };
  EXPECT_GE(mean_depth(weak), 13.0);
  EXPECT_LE(mean_depth(even), 1.7);
  EXPECT_GE(figure(weak.stats(), "deepest_key_depth"), 14u);
  EXPECT_EQ(weak.check_invariants(), "");
  EXPECT_EQ(even.check_invariants(), "");
}

// Threads insert, erase, assign, find_or_insert and find keys that crowd one deep path, so
// that slots keep changing under every operation; no operation may take more steps than the
// bound, and every value read belongs to its key.
template <class Map>
void every_operation_within_the_bound(std::uint64_t (*key_of)(std::uint64_t)) {
  constexpr int threads = 4;
  Map map(threads, ReclaimOptions{.eager = true}, SizeHint{1});
  std::atomic<bool> wrong{false};
  cdsb::testing::run_together(threads, [&](int t) {
    Xoshiro256StarStar rng;
    rng.seed(300 + t);
    for (int i = 0; i < 100'000; ++i) {
      const std::uint64_t r = rng.next(), k = key_of(r >> 8), v = (r >> 40) << 32 | (k & 0xffffffffu);
      switch (r % 5) {
        case 0: map.insert(t, k, v); break;
        case 1: map.erase(t, k); break;
        case 2: map.assign(t, k, v); break;
        case 3:
          if ((map.find_or_insert(t, k, v).first & 0xffffffffu) != (k & 0xffffffffu)) wrong = true;
          break;
        default:
          if (const auto got = map.find(t, k); got && (*got & 0xffffffffu) != (k & 0xffffffffu)) wrong = true;
      }
    }
  });
  EXPECT_FALSE(wrong.load()) << "a value of another key was read";
  EXPECT_EQ(map.check_invariants(), "");
  const StatsReport stats = map.stats();
  EXPECT_LE(figure(stats, "max_steps"), static_cast<std::uint64_t>(map.steps_bound()));
  EXPECT_GT(figure(stats, "expansions"), 0u);
}

TEST(FeldmanWaitFreeMap, EveryOperationWithinTheBoundOnOneDeepPath) {
  // 8 keys: 2 low values x 4 top values: paths shared down to the deepest level.
  every_operation_within_the_bound<DeepMap>([](std::uint64_t r) { return with_top(r % 2, (r >> 4) % 4); });
}
TEST(FeldmanWaitFreeMap, EveryOperationWithinTheBoundOnCollidingHeadSlots) {
  // 64 keys, an even hash, a head of 256 slots: collisions and expansions near the head.
  every_operation_within_the_bound<FeldmanWaitFreeMap<EpochBased<SystemAllocator>>>([](std::uint64_t r) { return 1 + r % 64; });
}

}  // namespace feldman_wait_free_map_test
