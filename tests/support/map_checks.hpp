// What the hash maps' unit tests share: a run of random map operations checked one by one
// against std::map, and threads released together so that their operations overlap.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "cdsbench/random/generators.hpp"

namespace cdsb::testing {

// `ops` random operations (insert, erase, find_or_insert, assign, find) by thread 0, key k =
// key_of(r) for a random r (an integer, or a std::string for a byte-keyed map), each result
// compared with std::map's; then the map's invariants and its entries, each held once. Use
// inside ASSERT_NO_FATAL_FAILURE.
template <class Map, class KeyOf>
void matches_std_map(Map& map, KeyOf key_of, int ops, std::uint64_t seed) {
  using Key = std::decay_t<decltype(key_of(std::uint64_t{}))>;
  std::map<Key, std::uint64_t> model;
  Xoshiro256StarStar rng;
  rng.seed(seed);
  for (int i = 0; i < ops; ++i) {
    const std::uint64_t r = rng.next(), v = r >> 20;
    const Key k = key_of(r >> 8);
    switch (r % 5) {
      case 0: ASSERT_EQ(map.insert(0, k, v), model.emplace(k, v).second) << "op " << i; break;
      case 1: ASSERT_EQ(map.erase(0, k), model.erase(k) == 1) << "op " << i; break;
      case 2: {
        const auto [it, inserted] = model.emplace(k, v);
        ASSERT_EQ(map.find_or_insert(0, k, v), std::pair(it->second, inserted)) << "op " << i;
        break;
      }
      case 3: {
        const auto it = model.find(k);
        ASSERT_EQ(map.assign(0, k, v), it != model.end()) << "op " << i;
        if (it != model.end()) it->second = v;
        break;
      }
      default: {
        const auto it = model.find(k);
        ASSERT_EQ(map.find(0, k), it == model.end() ? std::nullopt : std::optional(it->second)) << "op " << i;
      }
    }
  }
  ASSERT_EQ(map.check_invariants(), "");
  std::map<Key, std::uint64_t> held;
  map.for_each_entry([&](const auto& k, std::uint64_t v) { EXPECT_TRUE(held.emplace(k, v).second) << "a key held twice"; });
  EXPECT_EQ(held, model);
}

// Runs body(tid) on `threads` threads released together, so that their operations overlap.
template <class Body>
void run_together(int threads, Body body) {
  std::atomic<int> waiting{threads};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      body(t);
    });
  for (auto& th : pool) th.join();
}

}  // namespace cdsb::testing
