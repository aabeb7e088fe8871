// The sorted-set server's key space and commands, in process and under threads (so the ASan and
// TSan trees see them): keys created, emptied, deleted and flushed while other threads use them,
// with every method, checked exactly at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "apps/zset_server/commands.hpp"
#include "apps/zset_server/keyspace.hpp"

namespace zset_keyspace_test {

using namespace cdsb::zset;

// A server without the network: the commands as the workers call them.
struct InProcess {
  explicit InProcess(Method method, int threads, int replicas = 1)
      : keys(KeyspaceConfig{.method = method, .threads = threads, .nr_replicas = replicas, .nr_log_entries = 64, .seed = 7}),
        status(threads),
        commands(keys, settings, status) {}
  std::string call(int tid, std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    Session session{.authenticated = true};
    commands.execute(tid, views, session, out);
    return out;
  }
  Keyspace keys;
  ServerSettings settings;
  ServerStatus status;
  Commands commands;
};

const Method methods[] = {Method::nr, Method::sl, Method::rwl, Method::fc, Method::fcplus};

std::string bulk(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }

TEST(ZsetKeyspace, AKeyLivesFromItsFirstMemberToItsLast) {
  for (Method m : methods) {
    SCOPED_TRACE(method_name(m));
    InProcess s(m, 2);
    EXPECT_EQ(s.call(0, {"EXISTS", "k"}), ":0\r\n");
    EXPECT_EQ(s.call(0, {"ZADD", "k", "XX", "1", "a"}), ":0\r\n");  // XX creates nothing
    EXPECT_EQ(s.call(1, {"EXISTS", "k"}), ":0\r\n");
    EXPECT_EQ(s.call(0, {"ZADD", "k", "1", "a", "2", "b"}), ":2\r\n");
    EXPECT_EQ(s.call(1, {"TYPE", "k"}), "+zset\r\n");
    EXPECT_EQ(s.call(1, {"DBSIZE"}), ":1\r\n");
    EXPECT_EQ(s.call(1, {"ZREM", "k", "a"}), ":1\r\n");
    EXPECT_EQ(s.call(0, {"EXISTS", "k"}), ":1\r\n");
    EXPECT_EQ(s.call(1, {"ZREM", "k", "b", "c"}), ":1\r\n");  // the last member: the key goes
    EXPECT_EQ(s.call(0, {"EXISTS", "k"}), ":0\r\n");
    EXPECT_EQ(s.call(0, {"DBSIZE"}), ":0\r\n");
    EXPECT_EQ(s.call(0, {"ZINCRBY", "k", "5", "c"}), bulk("5"));  // a new set for the same key
    EXPECT_EQ(s.call(1, {"ZRANGE", "k", "0", "-1", "WITHSCORES"}), "*2\r\n" + bulk("c") + bulk("5"));
    EXPECT_EQ(s.call(1, {"DEL", "k", "k", "other"}), ":1\r\n");
    EXPECT_EQ(s.call(0, {"ZCARD", "k"}), ":0\r\n");
    const KeyspaceCounts c = s.keys.counts();
    EXPECT_EQ(c.keys, 0);
    EXPECT_EQ(c.created, 2u);
    EXPECT_EQ(c.removed, 2u);
  }
}

// Each thread owns its members ("t<thread>:<i>") in four shared keys and adds, increments and
// removes only them, so it knows their scores exactly; sets empty and die and keys are created
// again all the time (the members are few), racing the other threads' ZADDs into the same key.
TEST(ZsetKeyspace, ThreadsCreatingAndEmptyingSharedKeysLoseNothing) {
  constexpr int threads = 4, members = 3, steps = 3000;
  const std::vector<std::string> keys{"k0", "k1", "k2", "k3"};
  for (Method m : methods) {
    SCOPED_TRACE(method_name(m));
    InProcess s(m, threads, m == Method::nr ? 2 : 1);
    std::vector<std::map<std::pair<std::string, std::string>, long>> expected(threads);
    std::vector<std::string> failures(threads);
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t)
      team.emplace_back([&, t] {
        std::mt19937 rng(static_cast<unsigned>(t) + 1);
        auto& mine = expected[t];
        for (int i = 0; i < steps && failures[t].empty(); ++i) {
          const std::string& key = keys[rng() % keys.size()];
          const std::string member = "t" + std::to_string(t) + ":" + std::to_string(rng() % members);
          const auto slot = std::make_pair(key, member);
          const bool present = mine.count(slot) > 0;
          std::string want, got;
          if (rng() % 3 == 0) {
            got = s.call(t, {"ZREM", key, member});
            want = present ? ":1\r\n" : ":0\r\n";
            mine.erase(slot);
          } else {
            got = s.call(t, {"ZINCRBY", key, "1", member});
            const long score = (present ? mine[slot] : 0) + 1;
            mine[slot] = score;
            want = bulk(std::to_string(score));
          }
          if (got != want) failures[t] = key + " " + member + ": got " + got + ", want " + want;
        }
      });
    for (auto& th : team) th.join();
    for (const auto& f : failures) EXPECT_EQ(f, "");
    long live_keys = 0;
    for (const std::string& key : keys) {
      std::map<std::string, long> want;
      for (const auto& mine : expected)
        for (const auto& [slot, score] : mine)
          if (slot.first == key) want[slot.second] = score;
      std::string reply = "*" + std::to_string(2 * want.size()) + "\r\n";
      // Scores first, then members: ZRANGE's order.
      std::vector<std::pair<long, std::string>> order;
      for (const auto& [member, score] : want) order.emplace_back(score, member);
      std::sort(order.begin(), order.end());
      for (const auto& [score, member] : order) reply += bulk(member) + bulk(std::to_string(score));
      EXPECT_EQ(s.call(0, {"ZRANGE", key, "0", "-1", "WITHSCORES"}), reply) << key;
      EXPECT_EQ(s.call(0, {"EXISTS", key}), want.empty() ? ":0\r\n" : ":1\r\n") << key;
      live_keys += !want.empty();
    }
    EXPECT_EQ(s.keys.counts().keys, live_keys);
    EXPECT_EQ(s.call(0, {"DBSIZE"}), ":" + std::to_string(live_keys) + "\r\n");
  }
}

// DEL and FLUSHALL race ZADDs into the same keys: afterwards every key that exists is a sound
// set (ZCARD agrees with ZRANGE), DBSIZE counts exactly the keys that exist, and a final
// FLUSHALL leaves nothing (the sanitizers check that what DEL removed was freed, once, safely).
TEST(ZsetKeyspace, DeletesAndFlushesRacingWritersLeaveAConsistentKeySpace) {
  constexpr int threads = 4, steps = 2000, key_count = 6;
  for (Method m : methods) {
    SCOPED_TRACE(method_name(m));
    InProcess s(m, threads);
    std::vector<std::thread> team;
    std::atomic<int> bad{0};
    for (int t = 0; t < threads; ++t)
      team.emplace_back([&, t] {
        std::mt19937 rng(static_cast<unsigned>(t) + 11);
        for (int i = 0; i < steps; ++i) {
          const std::string key = "k" + std::to_string(rng() % key_count);
          const unsigned dice = rng() % 100;
          std::string reply;
          if (t == 0 && dice < 3) reply = s.call(t, {"FLUSHALL"});
          else if (dice < 15) reply = s.call(t, {"DEL", key, "k" + std::to_string(rng() % key_count)});
          else if (dice < 70) reply = s.call(t, {"ZADD", key, std::to_string(rng() % 10), "m" + std::to_string(rng() % 20)});
          else reply = s.call(t, {"ZRANGE", key, "0", "-1"});
          if (reply.empty() || reply[0] == '-') bad.fetch_add(1);
        }
      });
    for (auto& th : team) th.join();
    EXPECT_EQ(bad.load(), 0);
    long exists = 0;
    for (int k = 0; k < key_count; ++k) {
      const std::string key = "k" + std::to_string(k);
      const std::string card = s.call(0, {"ZCARD", key});
      const std::string range = s.call(0, {"ZRANGE", key, "0", "-1"});
      // ":n\r\n" against "*n\r\n...": the same count
      EXPECT_EQ(card.substr(1, card.find('\r') - 1), range.substr(1, range.find('\r') - 1)) << key;
      exists += s.call(0, {"EXISTS", key}) == ":1\r\n";
    }
    EXPECT_EQ(s.keys.counts().keys, exists);
    EXPECT_EQ(s.call(1, {"FLUSHALL"}), "+OK\r\n");
    EXPECT_EQ(s.call(0, {"DBSIZE"}), ":0\r\n");
    EXPECT_EQ(s.keys.counts().created, s.keys.counts().removed);
  }
}

}  // namespace zset_keyspace_test
