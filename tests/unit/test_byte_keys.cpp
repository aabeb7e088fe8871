// Byte-string keys (Key = std::string_view) in every map of ours: the keyed hash (SipHash, checked
// against the paper's test vector), the maps' own copies of the keys, every operation against
// std::map, keys whose hashes are all equal (Feldman's overflow chains, one probe run, one
// bucket), and threads racing on such keys with values that must stay their key's.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
#include "support/map_checks.hpp"
#include "support/stats_figures.hpp"

namespace byte_keys_test {

using namespace cdsb;
using reclaim::EpochBased;
using reclaim::HazardPointers;
using reclaim::SystemAllocator;
using cdsb::testing::figure;

// SipHash-2-4 of the paper's example (Aumasson & Bernstein, appendix A): key 00 01 .. 0f,
// message 00 01 .. 0e (a last word of 7 bytes and the length).
TEST(SipHash, GivesThePapersTestVector) {
  std::string message;
  for (char c = 0; c < 15; ++c) message.push_back(c);
  EXPECT_EQ((hash::siphash<2, 4>(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, message)), 0xa129ca6149be45e5ULL);
  // The reference implementation's first vector: the empty message (a last word of the length only).
  EXPECT_EQ((hash::siphash<2, 4>(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, "")), 0x726fdb47dd0e0e31ULL);
}

// The map hash of byte strings: keyed by the seed; the length is part of the input (so
// trailing zero bytes count), as are bytes past the last whole word.
TEST(SipHash, EvenHashesByteStringsBySeedLengthAndEveryByte) {
  const hash::Even a{1}, b{2};
  const std::string key = "cdsbench:key:123";
  EXPECT_NE(a(std::string_view(key)), b(std::string_view(key)));
  EXPECT_EQ(a(std::string_view(key)), a(std::string_view(std::string(key))));
  EXPECT_NE(a(std::string_view("")), a(std::string_view("\0", 1)));
  EXPECT_NE(a(std::string_view("abcdefghi")), a(std::string_view("abcdefghj")));
}

TEST(ByteString, OwnsACopyOfItsBytes) {
  std::string source("bytes\0with a zero", 17);
  const ByteString copy{std::string_view(source)};
  source[0] = 'X';
  EXPECT_EQ(copy.view(), std::string_view("bytes\0with a zero", 17));
  EXPECT_EQ(ByteString().view(), "");
  const ByteString again(copy);
  EXPECT_EQ(again.view(), copy.view());
  EXPECT_NE(again.view().data(), copy.view().data());
}

// The workload's integers as byte strings of 8 to 64 bytes: decoded back exactly.
TEST(KeyCodec, ByteStringsDecodeToTheirKeysAndVaryInLength) {
  using Codec = bench::KeyCodec<std::string_view>;
  std::map<std::size_t, int> lengths;
  for (std::uint64_t k = 1; k <= 10'000; ++k) {
    const auto encoded = Codec::encode(k);
    const std::string_view bytes = encoded;
    ASSERT_EQ(Codec::decode(bytes), k);
    ++lengths[bytes.size()];
  }
  EXPECT_EQ(lengths.begin()->first, Codec::min_length);
  EXPECT_EQ(lengths.rbegin()->first, Codec::max_length);
  EXPECT_EQ(lengths.size(), Codec::max_length - Codec::min_length + 1);
  EXPECT_EQ(Codec::decode(Codec::encode(~0ull)), ~0ull);
}

// Every hash equal: all keys meet in one bucket, one probe run, one overflow chain.
struct OneHash {
  static constexpr std::string_view name = "one";
  std::uint64_t operator()(std::string_view) const { return 0x5a5a'0123'4567'89abULL; }
};

// Keys of 0 to 40 bytes, many sharing prefixes, some with zero bytes.
std::string key_for(std::uint64_t r) {
  const std::size_t length = r % 41;
  std::string key(length, 'k');
  for (std::size_t i = 0; i < length; ++i)
    if ((r >> (i % 48)) & 1) key[i] = static_cast<char>((r >> 7) + i);
  if (length > 3 && r % 7 == 0) key[length / 2] = '\0';
  return key;
}

// r mapped into [0, key_space): the keys repeat, so operations meet present keys.
std::uint64_t mix64_key(std::uint64_t r, std::uint64_t key_space) { return hash::mix64(r % key_space); }

template <class Map>
void matches_std_map(int ops, std::uint64_t key_space, std::uint64_t seed) {
  const auto map = bench::make_structure<Map>(1, /*reclaim_eager=*/true, 64);
  cdsb::testing::matches_std_map(*map, [&](std::uint64_t r) { return key_for(mix64_key(r, key_space)); }, ops, seed);
}

template <class Map>
class ByteKeyedMap : public ::testing::Test {};
template <class H>
using MapsHashedBy =
    ::testing::Types<DedupChainingMap<std::string_view, std::uint64_t, H>,
                     MichaelHashMap<HazardPointers<SystemAllocator>, std::string_view, std::uint64_t, H>,
                     SplitOrderedMap<HazardPointers<SystemAllocator>, std::string_view, std::uint64_t, H>,
                     FeldmanWaitFreeMap<EpochBased<SystemAllocator>, std::string_view, std::uint64_t, H>,
                     SeqlockProbeMap<EpochBased<SystemAllocator>, std::string_view, H>>;
using EvenMaps = MapsHashedBy<hash::Even>;
TYPED_TEST_SUITE(ByteKeyedMap, EvenMaps);

TYPED_TEST(ByteKeyedMap, MatchesStdMap) { ASSERT_NO_FATAL_FAILURE(matches_std_map<TypeParam>(40'000, 3'000, 7)); }

template <class Map>
class ByteKeysWithOneHash : public ::testing::Test {};
using OneHashMaps = MapsHashedBy<OneHash>;
TYPED_TEST_SUITE(ByteKeysWithOneHash, OneHashMaps);

// Every key collides: the maps tell keys apart by their bytes alone.
TYPED_TEST(ByteKeysWithOneHash, MatchesStdMap) { ASSERT_NO_FATAL_FAILURE(matches_std_map<TypeParam>(6'000, 150, 11)); }

// Threads insert, erase, assign, find_or_insert and find colliding keys; each value carries its
// key's index, so a find that returns another key's value, or a lost or doubled key, fails.
TYPED_TEST(ByteKeysWithOneHash, ConcurrentUpdatesKeepValuesWithTheirKeys) {
  constexpr int threads = 4;
  constexpr std::uint64_t keys = 24;
  const auto map = bench::make_structure<TypeParam>(threads, /*reclaim_eager=*/true, 16);
  std::vector<std::string> names;
  for (std::uint64_t k = 0; k < keys; ++k) names.push_back("key/" + std::string(k % 5, 'x') + std::to_string(k));
  std::atomic<bool> wrong{false};
  cdsb::testing::run_together(threads, [&](int t) {
    Xoshiro256StarStar rng;
    rng.seed(300 + t);
    for (std::uint64_t i = 0; i < 20'000; ++i) {
      const std::uint64_t r = rng.next(), k = (r >> 8) % keys, v = (((std::uint64_t(t) << 24) | i) << 32) | k;
      const std::string_view key = names[k];
      std::optional<std::uint64_t> got;
      switch (r % 5) {
        case 0: map->insert(t, key, v); break;
        case 1: map->erase(t, key); break;
        case 2: map->assign(t, key, v); break;
        case 3: got = map->find_or_insert(t, key, v).first; break;
        default: got = map->find(t, key);
      }
      if (got && (*got & 0xffffffffu) != k) wrong = true;
    }
  });
  EXPECT_FALSE(wrong.load()) << "an operation returned another key's value";
  std::map<std::string, int> seen;
  map->for_each_entry([&](std::string_view k, std::uint64_t v) {
    ++seen[std::string(k)];
    EXPECT_EQ(names[v & 0xffffffffu], k);
  });
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;
  EXPECT_EQ(map->check_invariants(), "");
}

// Feldman's map with byte keys: equal hashes reach the deepest level, where they share a chain.
TEST(FeldmanWaitFreeMap, ChainsByteKeysWhoseHashesAreEqual) {
  FeldmanWaitFreeMap<EpochBased<SystemAllocator>, std::string_view, std::uint64_t, OneHash> map(1);
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back("chained-" + std::to_string(i));
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(map.insert(0, keys[i], i));
  EXPECT_EQ(figure(map.stats(), "longest_overflow_chain"), keys.size());
  EXPECT_EQ(figure(map.stats(), "deepest_key_depth"), static_cast<std::uint64_t>(map.deepest_level() + 1));
  for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_TRUE(map.erase(0, keys[i]));
  for (std::size_t i = 1; i < keys.size(); i += 2) ASSERT_TRUE(map.assign(0, keys[i], 1000 + i));
  for (std::size_t i = 0; i < keys.size(); ++i)
    ASSERT_EQ(map.find(0, keys[i]), i % 2 ? std::optional<std::uint64_t>(1000 + i) : std::nullopt) << i;
  EXPECT_EQ(figure(map.stats(), "longest_overflow_chain"), keys.size() / 2);
  EXPECT_EQ(map.check_invariants(), "");
}

}  // namespace byte_keys_test
