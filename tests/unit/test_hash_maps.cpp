// The hash maps' own properties (set/hash/): PARSEC's table sizes, the named hashes and the
// clustering the dedup study traced to them, digest keys whose hashes collide, and the map
// operations under concurrency (find_or_insert's single winner, values that always belong to
// their key). The registry's matrix runs every map through the differential, stress,
// lincheck and sanitizer tests besides these.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness/make_structure.hpp"
#include "bench/workloads/key_codec.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/set/hash/dedup_chaining_map.hpp"
#include "cdsbench/set/hash/feldman_wait_free_map.hpp"
#include "cdsbench/set/hash/hashes.hpp"
#include "cdsbench/set/hash/michael_hash_map.hpp"
#include "cdsbench/set/hash/seqlock_probe_map.hpp"
#include "cdsbench/set/hash/split_ordered_map.hpp"
#include "cdsbench/set/list/harris_michael.hpp"
#include "support/map_checks.hpp"
#include "support/stats_figures.hpp"

namespace hash_maps_test {

using namespace cdsb;
using reclaim::EpochBased;
using reclaim::HazardPointers;
using reclaim::SystemAllocator;

using cdsb::testing::figure;

Digest160 random_digest(Xoshiro256StarStar& rng) {
  Digest160 d;
  for (std::size_t i = 0; i < d.bytes.size(); i += 4) {
    const std::uint64_t r = rng.next();
    for (std::size_t j = 0; j < 4; ++j) d.bytes[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
  }
  return d;
}

// The workload's integer keys as digests: decoded back exactly, and as varied as SHA-1 output
// where the named hashes look (the first 4 bytes, the byte sum).
TEST(KeyCodec, DigestsDecodeToTheirKeysAndLookRandom) {
  using Codec = bench::KeyCodec<Digest160>;
  std::set<std::uint32_t> prefixes;
  double sum_of_sums = 0;
  constexpr std::uint64_t n = 100'000;
  for (std::uint64_t k = 1; k <= n; ++k) {
    const Digest160 d = Codec::encode(k);
    ASSERT_EQ(Codec::decode(d), k);
    prefixes.insert(static_cast<std::uint32_t>(hash::Parsec3{}(d)));
    sum_of_sums += static_cast<double>(hash::ByteSum{}(d));
  }
  EXPECT_GT(prefixes.size(), n - 10);                  // 32-bit prefixes of 100,000 keys: ~1 collision
  EXPECT_NEAR(sum_of_sums / n, 20 * 127.5, 5.0);       // each byte uniform: mean byte sum 2,550
  EXPECT_EQ(Codec::decode(Codec::encode(~0ull)), ~0ull);
}

TEST(DedupChainingMap, TakesPARSECsBucketCounts) {
  using M = DedupChainingMap<>;
  EXPECT_EQ(M::bucket_count_for(M::dedup_minimum), 98'317u);  // what dedup's table has
  EXPECT_EQ(M(1).bucket_count(), 98'317u);
  EXPECT_EQ(M::bucket_count_for(0), 53u);
  EXPECT_EQ(M::bucket_count_for(53), 97u);  // strictly above the minimum, as PARSEC picks
  EXPECT_EQ(M::bucket_count_for(500'000), 786'433u);
  EXPECT_EQ(M::bucket_count_for(std::uint64_t{1} << 40), 1'610'612'741u);
  EXPECT_EQ(M(1, SizeHint{1'000}).bucket_count(), 1'543u);
}

TEST(MichaelHashMap, SizesItsArrayToThePowerOfTwoAtOrAboveTheHint) {
  using M = MichaelHashMap<EpochBased<SystemAllocator>>;
  EXPECT_EQ(M(1, {}, SizeHint{1'000}).bucket_count(), 1'024u);
  EXPECT_EQ(M(1, {}, SizeHint{1'024}).bucket_count(), 1'024u);
  EXPECT_EQ(M(1, {}, SizeHint{1}).bucket_count(), 1u);
  EXPECT_EQ(M(1).bucket_count(), M::default_buckets);
}

TEST(NamedHashes, ComputeWhatTheirNamesSay) {
  Digest160 d;
  for (std::size_t i = 0; i < d.bytes.size(); ++i) d.bytes[i] = static_cast<std::uint8_t>(i + 1);
  EXPECT_EQ(hash::ByteSum{}(d), 210u);                         // 1 + 2 + ... + 20
  EXPECT_EQ(hash::Parsec3{}(d), 0x04030201u);                  // the first 4 bytes, little-endian
  EXPECT_EQ(hash::ByteSum{}(std::uint64_t{0x0102030405060708}), 36u);
  EXPECT_EQ(hash::Parsec3{}(std::uint64_t{0x1122334455667788}), 0x55667788u);
  Digest160 max;
  max.bytes.fill(0xff);
  EXPECT_EQ(hash::ByteSum{}(max), 5'100u);  // bytesum's largest value
  // `even`: digests that differ in their last byte only, or share their first 16 bytes,
  // hash apart; a seed changes every hash.
  Digest160 e = d;
  e.bytes[19] ^= 1;
  EXPECT_NE(hash::Even{}(d), hash::Even{}(e));
  EXPECT_NE(hash::Even{}(std::uint64_t{5}), hash::Even{.seed = 1}(std::uint64_t{5}));
  std::set<std::uint64_t> low_bits;
  for (std::uint64_t k = 0; k < 4'096; ++k) low_bits.insert(hash::Even{}(k) & 4'095);
  EXPECT_GT(low_bits.size(), 2'400u);  // about 4,096 (1 - 1/e) = 2,589 for a random function
}

// The study's clustering: with PARSEC's 98,317 buckets and SHA-1 digests, bytesum reaches at
// most 5,101 buckets however many keys there are; the first-32-bits hash of PARSEC 3.0 and
// `even` spread the same keys over about 1 - 1/e of them.
TEST(DedupChainingMap, BytesumCrowdsDigestsIntoFewBuckets) {
  Xoshiro256StarStar rng;
  rng.seed(7);
  std::vector<Digest160> digests(98'317);
  for (auto& d : digests) d = random_digest(rng);
  auto occupancy = [&]<class Hash>(Hash) {
    DedupChainingMap<Digest160, std::uint64_t, Hash> map(1);
    for (std::size_t i = 0; i < digests.size(); ++i) EXPECT_TRUE(map.insert(0, digests[i], i));
    EXPECT_EQ(map.check_invariants(), "");
    return std::pair{figure(map.stats(), "buckets_used"), figure(map.stats(), "longest_chain")};
  };
  const auto [bytesum_used, bytesum_longest] = occupancy(hash::ByteSum{});
  const auto [parsec3_used, parsec3_longest] = occupancy(hash::Parsec3{});
  const auto [even_used, even_longest] = occupancy(hash::Even{});
  EXPECT_LE(bytesum_used, 5'101u);
  EXPECT_GE(bytesum_longest, 98'317u / 5'101u);  // at least the mean chain of the buckets used
  for (std::uint64_t used : {parsec3_used, even_used}) {
    EXPECT_GT(used, 58'000u);  // 98,317 (1 - 1/e) = 62,148 expected
    EXPECT_LT(used, 66'000u);
  }
  EXPECT_LT(parsec3_longest, 16u);
  EXPECT_LT(even_longest, 16u);
}

constexpr int threads = 4;  // oversubscribed on 2 cores: preemption inside operations

// A map for `threads` threads, reclaiming eagerly, sized for `keys`.
template <class Map>
std::unique_ptr<Map> make_map(std::uint64_t keys) {
  return bench::make_structure<Map>(threads, /*reclaim_eager=*/true, keys);
}

template <class Body>
void run_together(Body body) {
  cdsb::testing::run_together(threads, body);
}

// Digests that share their first 16 bytes (and so their parsec3 hash): every one lands in the
// same bucket, and the maps still keep them apart.
template <class Map>
void distinguishes_colliding_digests() {
  const auto owned = make_map<Map>(64);
  Map& map = *owned;
  std::vector<Digest160> keys(300);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    keys[i].bytes.fill(0xab);
    keys[i].bytes[16] = static_cast<std::uint8_t>(i);
    keys[i].bytes[19] = static_cast<std::uint8_t>(i >> 8);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(map.insert(0, keys[i], i));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(map.find(0, keys[i]), i);
    ASSERT_FALSE(map.insert(0, keys[i], 0));
  }
  for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_TRUE(map.erase(0, keys[i]));
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(map.contains(0, keys[i]), i % 2 == 1) << i;
  EXPECT_EQ(map.check_invariants(), "");
  if constexpr (requires { map.bucket_count(); }) {
    EXPECT_EQ(figure(map.stats(), "buckets_used"), 1u);
    EXPECT_EQ(figure(map.stats(), "longest_chain"), keys.size() / 2);
  }
}

TEST(DedupChainingMap, DistinguishesDigestsWithACollidingPrefix) {
  distinguishes_colliding_digests<DedupChainingMap<Digest160, std::uint64_t, hash::Parsec3>>();
}
TEST(MichaelHashMap, DistinguishesDigestsWithACollidingPrefix) {
  distinguishes_colliding_digests<MichaelHashMap<HazardPointers<SystemAllocator>, Digest160, std::uint64_t, hash::Parsec3>>();
}
// One parsec3 hash: the digests' own bits part them, below the hash's 64 bits.
TEST(FeldmanWaitFreeMap, DistinguishesDigestsWithACollidingPrefix) {
  distinguishes_colliding_digests<FeldmanWaitFreeMap<EpochBased<SystemAllocator>, Digest160, std::uint64_t, hash::Parsec3>>();
}

// With the parsec3 hash, digests sharing their first 16 bytes have equal split-order keys:
// the list orders them by the digest itself.
TEST(SplitOrderedMap, DistinguishesDigestsWithACollidingPrefix) {
  using Map = SplitOrderedMap<HazardPointers<SystemAllocator>, Digest160, std::uint64_t, hash::Parsec3>;
  const auto map = bench::make_structure<Map>(1, true);
  std::vector<Digest160> keys(300);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    keys[i].bytes.fill(0xab);
    keys[i].bytes[16] = static_cast<std::uint8_t>(i);
    keys[i].bytes[19] = static_cast<std::uint8_t>(i >> 8);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(map->insert(0, keys[i], i));
  for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_TRUE(map->erase(0, keys[i]));
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(map->find(0, keys[i]), i % 2 ? std::optional<std::uint64_t>(i) : std::nullopt);
  EXPECT_EQ(map->check_invariants(), "");
}

// The table doubles as items arrive (never shrinks), keeping at most max_load items per bucket
// on average, and a bucket's sentinel is linked only once an operation needs it.
TEST(SplitOrderedMap, DoublesItsTableAsItGrows) {
  SplitOrderedMap<EpochBased<SystemAllocator>> map(1);
  EXPECT_EQ(map.bucket_count(), 2u);
  for (std::uint64_t k = 1; k <= 100'000; ++k) map.insert(0, k, k);
  EXPECT_EQ(map.bucket_count(), 65'536u);  // 100,000 items: above 2 x 32,768, not above 2 x 65,536
  // Only buckets that an insert touched (or a parent of one): a simulation of this growth with
  // random hashes initialises 43,900 to 44,100 of the 65,536; these keys give 44,161.
  EXPECT_GT(figure(map.stats(), "buckets_initialised"), 32'768u + 10'000u);
  EXPECT_LT(figure(map.stats(), "buckets_initialised"), 32'768u + 16'000u);
  for (std::uint64_t k = 1; k <= 100'000; ++k) map.erase(0, k);
  EXPECT_EQ(map.bucket_count(), 65'536u);
  EXPECT_EQ(map.check_invariants(), "");
}

// ---- concurrency: the dedup pattern -------------------------------------------------------

// Every thread find_or_inserts every key (in its own order) with a value of its own. For each
// key exactly one thread inserts, and every thread learns the winner's value.
template <class Map>
void find_or_insert_has_one_winner(std::uint64_t keys) {
  const auto map = make_map<Map>(keys / 4);  // chains of about 4: races inside a chain
  std::vector<std::vector<std::pair<std::uint64_t, bool>>> seen(threads, std::vector<std::pair<std::uint64_t, bool>>(keys + 1));
  run_together([&](int t) {
    Xoshiro256StarStar rng;
    rng.seed(100 + t);
    std::vector<std::uint64_t> order(keys);
    for (std::uint64_t k = 0; k < keys; ++k) order[k] = k + 1;
    for (std::uint64_t i = keys - 1; i > 0; --i) std::swap(order[i], order[rng.next() % (i + 1)]);
    for (std::uint64_t k : order) seen[t][k] = map->find_or_insert(t, k, (std::uint64_t(t) << 32) | k);
  });
  for (std::uint64_t k = 1; k <= keys; ++k) {
    int winners = 0;
    for (int t = 0; t < threads; ++t) winners += seen[t][k].second;
    ASSERT_EQ(winners, 1) << "key " << k;
    const std::uint64_t value = map->find(0, k).value();
    ASSERT_EQ(value & 0xffffffffu, k);
    for (int t = 0; t < threads; ++t) ASSERT_EQ(seen[t][k].first, value) << "key " << k << ", thread " << t;
  }
  EXPECT_EQ(map->check_invariants(), "");
}

// Threads insert, erase, assign and find over a small key range; every value written is the
// key in its low 32 bits, so a find or a final entry that returns another key's value (or a
// torn one) fails.
template <class Map>
void values_always_belong_to_their_key() {
  constexpr std::uint64_t keys = 64;
  const auto map = make_map<Map>(16);
  std::atomic<bool> wrong{false};
  run_together([&](int t) {
    Xoshiro256StarStar rng;
    rng.seed(200 + t);
    for (std::uint64_t i = 0; i < 100'000; ++i) {
      const std::uint64_t r = rng.next(), k = 1 + (r >> 8) % keys, v = (((std::uint64_t(t) << 24) | i) << 32) | k;
      switch (r & 3) {
        case 0: map->insert(t, k, v); break;
        case 1: map->erase(t, k); break;
        case 2: map->assign(t, k, v); break;
        default:
          if (const auto got = map->find(t, k); got && (*got & 0xffffffffu) != k) wrong = true;
      }
    }
  });
  EXPECT_FALSE(wrong.load()) << "a find returned another key's value";
  map->for_each_entry([&](std::uint64_t k, std::uint64_t v) { EXPECT_EQ(v & 0xffffffffu, k); });
  EXPECT_EQ(map->check_invariants(), "");
}

template <class Map>
class ConcurrentMapOperations : public ::testing::Test {};
using Maps = ::testing::Types<DedupChainingMap<>, MichaelHashMap<EpochBased<SystemAllocator>>,
                              MichaelHashMap<HazardPointers<SystemAllocator>>, SplitOrderedMap<EpochBased<SystemAllocator>>,
                              SplitOrderedMap<HazardPointers<SystemAllocator>>, FeldmanWaitFreeMap<EpochBased<SystemAllocator>>,
                              SeqlockProbeMap<EpochBased<SystemAllocator>>,
                              HarrisMichaelList<HazardPointers<SystemAllocator>>>;
TYPED_TEST_SUITE(ConcurrentMapOperations, Maps);

TYPED_TEST(ConcurrentMapOperations, FindOrInsertHasOneWinnerPerKey) {
  // The list walks its one chain: fewer keys. (The split-ordered map grows from 2 buckets
  // while the threads race.)
  find_or_insert_has_one_winner<TypeParam>(requires(const TypeParam& m) { m.bucket_count(); } ? 20'000 : 2'000);
}
TYPED_TEST(ConcurrentMapOperations, ValuesAlwaysBelongToTheirKey) { values_always_belong_to_their_key<TypeParam>(); }

}  // namespace hash_maps_test
