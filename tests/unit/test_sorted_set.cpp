// The Redis sorted set (include/cdsbench/seq/sorted_set.hpp): a differential test against a
// brute-force model of Redis 7.0's semantics over long random sequences of every op; the Redis
// edge cases, each checked on a real redis-server 7.0.15 (the redis-cli command and its reply
// are quoted above each assertion; the replies were the same with the key a listpack and a skip
// list, -0 aside, whose test says which); determinism (equal op sequences give equal instances);
// the op's inline and heap storage (an ASan run reports a block dispose() failed to free); the
// table growing in updates only and shrinking after removals; reads on one instance from
// several threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cdsbench/random/generators.hpp"
#include "cdsbench/seq/sorted_set.hpp"

namespace sorted_set_test {

using cdsb::seq::SortedSet;
using Code = SortedSet::Code;
using Result = SortedSet::Result;
using Items = std::vector<std::pair<std::string, double>>;
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

// Runs op on z and disposes of it (bulk work; checked once at the end).
Result apply(SortedSet& z, const SortedSet::Op& op) {
  Result r = z.execute(op);
  SortedSet::dispose(op);
  return r;
}

// Runs op on z, disposes of it, checks the invariants after an update.
Result run(SortedSet& z, const SortedSet::Op& op) {
  Result r = z.execute(op);
  const bool update = !SortedSet::is_read_only(op);
  SortedSet::dispose(op);
  if (update) {
    const std::string inv = z.check_invariants();
    EXPECT_EQ(inv, "");
  }
  return r;
}

Result zadd(SortedSet& z, std::uint8_t flags, std::vector<SortedSet::ScoredMember> items) {
  return run(z, SortedSet::zadd(flags, items));
}
Result zrem(SortedSet& z, std::vector<std::string_view> members) { return run(z, SortedSet::zrem(members)); }
Result zmscore(SortedSet& z, std::vector<std::string_view> members) { return run(z, SortedSet::zmscore(members)); }
Items by_rank(SortedSet& z, std::int64_t start, std::int64_t stop, bool reverse = false) {
  return run(z, SortedSet::range_by_rank(start, stop, reverse)).items;
}
Items by_score(SortedSet& z, SortedSet::ScoreBound min, SortedSet::ScoreBound max, bool reverse = false,
               std::int64_t offset = 0, std::int64_t count = -1) {
  return run(z, SortedSet::range_by_score(min, max, reverse, offset, count)).items;
}
std::vector<std::string> names(const Items& items) {
  std::vector<std::string> out;
  for (const auto& [m, s] : items) out.push_back(m);
  return out;
}
using Names = std::vector<std::string>;

// prefix + i, built by appending ("m" + std::to_string(i) draws GCC 12's false -Wrestrict at -O3).
std::string numbered(std::string_view prefix, std::uint64_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

// ---- the model: Redis's semantics written the plain way -----------------------------------

// A description of an op, from which both the Op and the model's answer are made.
struct Spec {
  Code code = Code::zcard;
  std::uint8_t flags = 0;
  std::vector<std::pair<double, std::string>> items;  // zadd; zincrby: one (increment, member)
  std::vector<std::string> members;                   // zrem, zmscore, zscore, zrank: members[0]
  bool reverse = false;
  SortedSet::ScoreBound min{0, false}, max{0, false};
  std::int64_t start = 0, stop = 0, offset = 0, count = -1;

  SortedSet::Op make() const {
    std::vector<SortedSet::ScoredMember> pairs;
    for (const auto& [s, m] : items) pairs.push_back({s, m});
    std::vector<std::string_view> views(members.begin(), members.end());
    switch (code) {
      case Code::zadd: return SortedSet::zadd(flags, pairs);
      case Code::zincrby: return SortedSet::zincrby(items[0].second, items[0].first);
      case Code::zrem: return SortedSet::zrem(views);
      case Code::clear: return SortedSet::clear();
      case Code::zscore: return SortedSet::zscore(members[0]);
      case Code::zmscore: return SortedSet::zmscore(views);
      case Code::zrank: return SortedSet::zrank(members[0], reverse);
      case Code::zcard: return SortedSet::zcard();
      case Code::zcount: return SortedSet::zcount(min, max);
      case Code::range_by_rank: return SortedSet::range_by_rank(start, stop, reverse);
      case Code::range_by_score: return SortedSet::range_by_score(min, max, reverse, offset, count);
    }
    return SortedSet::zcard();
  }
};

struct Model {
  std::map<std::string, double> scores;
  // Whether Redis would keep the set as a listpack (at most 128 members of at most 64 bytes:
  // once outgrown, a skip list until emptied), where a score of -0 is stored as 0.
  bool listpack = true;
  double store(double v) const { return listpack && v == 0 ? 0.0 : v; }

  // Every member in (score, member) order; std::string compares bytes unsigned, shorter first.
  Items sorted() const {
    Items v(scores.begin(), scores.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.second < b.second || (a.second == b.second && a.first < b.first);
    });
    return v;
  }
  static bool in_range(double s, const Spec& o) {
    const bool above_min = o.min.exclusive ? s > o.min.value : s >= o.min.value;
    const bool below_max = o.max.exclusive ? s < o.max.value : s <= o.max.value;
    return above_min && below_max;
  }

  Result apply(const Spec& o) {
    Result r;
    switch (o.code) {
      case Code::zadd:
      case Code::zincrby: {
        const std::uint8_t f = o.code == Code::zincrby ? std::uint8_t{SortedSet::incr} : o.flags;
        std::int64_t added = 0, changed = 0;
        bool any = false;
        double last = 0;
        for (const auto& [given, m] : o.items) {
          const auto it = scores.find(m);
          if (it == scores.end()) {
            if (f & SortedSet::xx) continue;
            if (scores.size() >= 128 || m.size() > 64) listpack = false;
            scores[m] = store(given);
            ++added, any = true, last = given;
            continue;
          }
          if (f & SortedSet::nx) continue;
          const double now = (f & SortedSet::incr) ? it->second + given : given;
          if (std::isnan(now)) return Result{.nan = true};
          if ((f & SortedSet::gt) && !(now > it->second)) continue;
          if ((f & SortedSet::lt) && !(now < it->second)) continue;
          any = true, last = now;
          if (now != it->second) it->second = store(now), ++changed;
        }
        if (f & SortedSet::incr) {
          r.ok = any;
          r.score = any ? last : 0;
          r.integer = added;
        } else {
          r.integer = (f & SortedSet::ch) ? added + changed : added;
        }
        return r;
      }
      case Code::zrem:
        for (const auto& m : o.members) r.integer += static_cast<std::int64_t>(scores.erase(m));
        if (scores.empty()) listpack = true;
        return r;
      case Code::clear:
        r.integer = static_cast<std::int64_t>(scores.size());
        scores.clear();
        listpack = true;
        return r;
      case Code::zscore:
        if (const auto it = scores.find(o.members[0]); it != scores.end()) r.ok = true, r.score = it->second;
        return r;
      case Code::zmscore:
        for (const auto& m : o.members) {
          const auto it = scores.find(m);
          r.scores.push_back(it == scores.end() ? std::nullopt : std::optional<double>(it->second));
        }
        return r;
      case Code::zrank: {
        const Items v = sorted();
        for (std::size_t i = 0; i < v.size(); ++i)
          if (v[i].first == o.members[0]) r.ok = true, r.integer = static_cast<std::int64_t>(o.reverse ? v.size() - 1 - i : i);
        return r;
      }
      case Code::zcard: r.integer = static_cast<std::int64_t>(scores.size()); return r;
      case Code::zcount:
        for (const auto& [m, s] : scores) r.integer += in_range(s, o);
        return r;
      case Code::range_by_rank: {
        Items v = sorted();
        if (o.reverse) std::reverse(v.begin(), v.end());
        // Every index i whose position, positive or counted from the end, lies in [start, stop].
        const auto n = static_cast<std::int64_t>(v.size());
        const std::int64_t start = o.start < 0 ? std::max<std::int64_t>(0, n + o.start) : o.start;
        const std::int64_t stop = o.stop < 0 ? n + o.stop : o.stop;
        for (std::int64_t i = 0; i < n; ++i)
          if (i >= start && i <= stop) r.items.push_back(v[static_cast<std::size_t>(i)]);
        return r;
      }
      case Code::range_by_score: {
        Items v = sorted();
        if (o.reverse) std::reverse(v.begin(), v.end());
        if (o.offset < 0) return r;  // Redis walks "while (offset--)" off the end
        std::int64_t skip = o.offset, left = o.count;
        for (const auto& item : v) {
          if (!in_range(item.second, o)) continue;
          if (skip > 0) {
            --skip;
            continue;
          }
          if (left == 0) break;
          r.items.push_back(item);
          --left;  // from a negative count: never reaches 0
        }
        return r;
      }
    }
    return r;
  }
};

// ---- random op specs -----------------------------------------------------------------------

struct Generator {
  cdsb::Xoshiro256StarStar rng;
  std::vector<std::string> pool;
  std::size_t size_hint = 0;  // the set's size, for ranks and offsets near it

  Generator(std::uint64_t seed, std::size_t short_members, std::size_t long_members) {
    rng.seed(seed);
    // Prefixes of one another, empty, zero and high bytes (order by bytes, shorter first).
    for (const char* s : {"", "a", "aa", "ab", "b"}) pool.emplace_back(s);
    pool.push_back(std::string("a\0", 2));
    pool.push_back(std::string("a\0\x01", 3));
    pool.push_back(std::string("\x80", 1));
    pool.push_back(std::string("\xff", 1));
    pool.push_back(std::string(24, 'x'));  // the longest inline member
    pool.push_back(std::string(25, 'x'));  // the shortest heap member
    pool.push_back(std::string(64, 'y'));  // the longest a listpack keeps
    pool.push_back(std::string(65, 'y'));  // too long for a listpack
    for (std::size_t i = 0; i < short_members; ++i) pool.push_back(numbered("m", i));
    for (std::size_t i = 0; i < long_members; ++i)
      pool.push_back(numbered("a long member, past the inline capacity, number ", i));
  }

  std::uint64_t below(std::uint64_t n) { return rng.next() % n; }
  bool chance(int percent) { return below(100) < static_cast<std::uint64_t>(percent); }
  const std::string& member() { return pool[below(pool.size())]; }
  // Few distinct values (ties broken by member), infinities, -0 and a fraction.
  double score() {
    switch (below(12)) {
      case 0: return inf;
      case 1: return -inf;
      case 2: return -0.0;
      case 3: return 0.5;
      default: return static_cast<double>(static_cast<std::int64_t>(below(11)) - 5);
    }
  }
  SortedSet::ScoreBound bound() { return {score(), chance(40)}; }
  std::int64_t index() {
    const auto n = static_cast<std::int64_t>(size_hint);
    switch (below(10)) {
      case 0: return int64_min;
      case 1: return int64_max;
      default: return static_cast<std::int64_t>(below(static_cast<std::uint64_t>(2 * n + 7))) - n - 3;
    }
  }

  Spec next() {
    Spec o;
    const std::uint64_t kind = below(100);
    if (kind < 30) {
      o.code = Code::zadd;
      std::uint8_t f = 0;
      switch (below(4)) {  // at most one of NX / XX, at most one of NX / GT / LT
        case 1: f |= SortedSet::nx; break;
        case 2: f |= SortedSet::xx; break;
        default: break;
      }
      if (!(f & SortedSet::nx)) {
        if (chance(20)) f |= SortedSet::gt;
        else if (chance(20)) f |= SortedSet::lt;
      }
      if (chance(50)) f |= SortedSet::ch;
      const std::size_t n = chance(30) ? 1 : 1 + below(5);
      if (n == 1 && chance(40)) f |= SortedSet::incr;
      o.flags = f;
      for (std::size_t i = 0; i < n; ++i) o.items.emplace_back(score(), member());
      if (n > 1 && chance(30)) o.items.emplace_back(score(), o.items[0].second);  // a duplicate
    } else if (kind < 45) {
      o.code = Code::zincrby;
      o.items.emplace_back(chance(50) ? static_cast<double>(static_cast<std::int64_t>(below(7)) - 3) : score(), member());
    } else if (kind < 55) {
      o.code = Code::zrem;
      for (std::size_t i = 0, n = 1 + below(4); i < n; ++i) o.members.push_back(member());
    } else if (kind < 56 && chance(30)) {
      o.code = Code::clear;
    } else if (kind < 62) {
      o.code = Code::zscore;
      o.members.push_back(member());
    } else if (kind < 66) {
      o.code = Code::zmscore;
      for (std::size_t i = 0, n = 1 + below(4); i < n; ++i) o.members.push_back(member());
    } else if (kind < 74) {
      o.code = Code::zrank;
      o.members.push_back(member());
      o.reverse = chance(50);
    } else if (kind < 76) {
      o.code = Code::zcard;
    } else if (kind < 82) {
      o.code = Code::zcount;
      o.min = bound(), o.max = bound();
    } else if (kind < 90) {
      o.code = Code::range_by_rank;
      o.start = index(), o.stop = index();
      o.reverse = chance(50);
    } else {
      o.code = Code::range_by_score;
      o.min = bound(), o.max = bound();
      o.reverse = chance(50);
      const auto n = static_cast<std::int64_t>(size_hint);
      o.offset = chance(50) ? 0 : static_cast<std::int64_t>(below(static_cast<std::uint64_t>(n + 4))) - 2;
      o.count = chance(40) ? -1 : static_cast<std::int64_t>(below(static_cast<std::uint64_t>(n + 4))) - 2;
    }
    return o;
  }
};

// A result as text, scores with their sign ("%.17g": -0 is not 0), so that == sees every bit Redis replies.
std::string score_text(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}
std::string render(const Result& r) {
  std::string s = "ok=" + std::to_string(r.ok) + " nan=" + std::to_string(r.nan) + " integer=" + std::to_string(r.integer) +
                  " score=" + score_text(r.score) + " items=[";
  for (const auto& [m, sc] : r.items) s += m + ":" + score_text(sc) + " ";
  s += "] scores=[";
  for (const auto& sc : r.scores) s += (sc ? score_text(*sc) : "nil") + " ";
  return s + "]";
}
std::string render(const Items& items) {
  Result r;
  r.items = items;
  return render(r);
}

std::string describe(const Spec& o, int step) {
  std::string s = "step " + std::to_string(step) + ": code " + std::to_string(static_cast<int>(o.code)) + " flags " +
                  std::to_string(o.flags) + " reverse " + std::to_string(o.reverse);
  for (const auto& [sc, m] : o.items) s += " (" + std::to_string(sc) + ", " + m + ")";
  for (const auto& m : o.members) s += " [" + m + "]";
  return s;
}

Items contents(const SortedSet& z) {
  Items v;
  z.for_each_item([&](std::string_view m, double s) { v.emplace_back(std::string(m), s); });
  return v;
}

void differential(std::uint64_t seed, int steps, std::size_t short_members, std::size_t long_members) {
  Generator gen(seed, short_members, long_members);
  SortedSet z(seed);
  Model model;
  std::size_t heap_ops = 0, inline_ops = 0, nans = 0, nils = 0, non_empty_ranges = 0;
  for (int step = 0; step < steps; ++step) {
    gen.size_hint = model.scores.size();
    const Spec spec = gen.next();
    const SortedSet::Op op = spec.make();
    (op.on_heap() ? heap_ops : inline_ops) += op.member_count() > 0;
    const Result got = run(z, op);
    const Result want = model.apply(spec);
    ASSERT_EQ(render(got), render(want)) << describe(spec, step) << " (seed " << seed << ")";
    ASSERT_EQ(got, want);  // the fields render() may not show apart
    nans += got.nan;
    nils += (spec.code == Code::zadd && (spec.flags & SortedSet::incr) && !got.ok);
    non_empty_ranges += !got.items.empty();
    ASSERT_EQ(z.size(), model.scores.size());
  }
  EXPECT_EQ(render(contents(z)), render(model.sorted()));
  // The run reached what it is for (a generator that stopped producing them would pass vacuously).
  EXPECT_GT(heap_ops, 0u);
  EXPECT_GT(inline_ops, 0u);
  EXPECT_GT(nans, 0u);
  EXPECT_GT(nils, 0u);
  EXPECT_GT(non_empty_ranges, 0u);
}

TEST(SortedSetDifferential, FewMembersManyTies) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) differential(seed, 20'000, 20, 6);
}

TEST(SortedSetDifferential, ManyMembers) { differential(99, 30'000, 1'500, 300); }

// ---- Redis's edge cases, as redis-server 7.0.15 answered them -------------------------------

TEST(SortedSetRedis, DuplicatesInOneZaddLaterWins) {
  SortedSet z;
  // ZADD z 1 a 1 a -> (integer) 1
  EXPECT_EQ(zadd(z, 0, {{1, "a"}, {1, "a"}}).integer, 1);
  // ZADD z CH 2 a 3 a 1 b -> (integer) 3 (a changed twice, b added)
  EXPECT_EQ(zadd(z, SortedSet::ch, {{2, "a"}, {3, "a"}, {1, "b"}}).integer, 3);
  // ZRANGE z 0 -1 WITHSCORES -> b 1 a 3
  EXPECT_EQ(by_rank(z, 0, -1), (Items{{"b", 1}, {"a", 3}}));
  // ZADD z 5 a 7 a -> 0; ZADD z CH 7 a -> 0 (same score: no change); ZADD z CH 8 a 8 a -> 1
  EXPECT_EQ(zadd(z, 0, {{5, "a"}, {7, "a"}}).integer, 0);
  EXPECT_EQ(zadd(z, SortedSet::ch, {{7, "a"}}).integer, 0);
  EXPECT_EQ(zadd(z, SortedSet::ch, {{8, "a"}, {8, "a"}}).integer, 1);
}

TEST(SortedSetRedis, NxXxGtLtWithCh) {
  SortedSet z;
  zadd(z, 0, {{8, "a"}});
  // ZADD z NX CH 100 a 1 c -> 1 (a skipped, c added)
  EXPECT_EQ(zadd(z, SortedSet::nx | SortedSet::ch, {{100, "a"}, {1, "c"}}).integer, 1);
  // ZADD z XX CH 100 a 1 d -> 1 (a changed, d not added)
  EXPECT_EQ(zadd(z, SortedSet::xx | SortedSet::ch, {{100, "a"}, {1, "d"}}).integer, 1);
  EXPECT_FALSE(run(z, SortedSet::zscore("d")).ok);
  // ZADD z GT CH 50 a 2 e -> 1 (50 <= 100: a kept; GT does not prevent adding e)
  EXPECT_EQ(zadd(z, SortedSet::gt | SortedSet::ch, {{50, "a"}, {2, "e"}}).integer, 1);
  // ZADD z LT CH 60 a 1 e -> 2
  EXPECT_EQ(zadd(z, SortedSet::lt | SortedSet::ch, {{60, "a"}, {1, "e"}}).integer, 2);
  // ZADD z GT CH 40 a -> 0; ZADD z LT CH 0.5 e -> 1; ZADD z GT CH 60 a -> 0 (equal: not greater)
  EXPECT_EQ(zadd(z, SortedSet::gt | SortedSet::ch, {{40, "a"}}).integer, 0);
  EXPECT_EQ(zadd(z, SortedSet::lt | SortedSet::ch, {{0.5, "e"}}).integer, 1);
  EXPECT_EQ(zadd(z, SortedSet::gt | SortedSet::ch, {{60, "a"}}).integer, 0);
  EXPECT_EQ(run(z, SortedSet::zscore("a")).score, 60);
  EXPECT_EQ(run(z, SortedSet::zscore("e")).score, 0.5);
}

TEST(SortedSetRedis, Incr) {
  SortedSet z;
  const auto incr = [&](std::uint8_t flags, double by, std::string_view m) {
    return zadd(z, static_cast<std::uint8_t>(flags | SortedSet::incr), {{by, m}});
  };
  // ZADD z INCR 1 zz -> "1" (created)
  Result r = incr(0, 1, "zz");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.score, 1);
  EXPECT_EQ(r.integer, 1);
  // ZADD z INCR NX 1 zz -> (nil)
  EXPECT_FALSE(incr(SortedSet::nx, 1, "zz").ok);
  // ZADD z INCR XX 1 nope -> (nil)
  EXPECT_FALSE(incr(SortedSet::xx, 1, "nope").ok);
  EXPECT_FALSE(run(z, SortedSet::zscore("nope")).ok);
  // ZADD z INCR GT -1 zz -> (nil)
  EXPECT_FALSE(incr(SortedSet::gt, -1, "zz").ok);
  // ZADD z INCR LT -1 zz -> "0"
  r = incr(SortedSet::lt, -1, "zz");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.score, 0);
  EXPECT_EQ(r.integer, 0);
  // ZADD z INCR LT 0 zz -> (nil) (0 is not less than 0)
  EXPECT_FALSE(incr(SortedSet::lt, 0, "zz").ok);
  // ZADD z INCR 0 zz -> "0" and ZADD z INCR CH 0 zz -> "0": unchanged, yet a reply
  r = incr(SortedSet::ch, 0, "zz");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.score, 0);
  // ZADD z INCR CH 1 zz -> "1" (the score, whatever CH)
  r = incr(SortedSet::ch, 1, "zz");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.score, 1);
  // ZADD z INCR GT 1 newgt -> "1"; ZADD z INCR LT 1 newlt -> "1" (GT/LT never prevent adding)
  EXPECT_EQ(incr(SortedSet::gt, 1, "newgt").score, 1);
  EXPECT_TRUE(incr(SortedSet::lt, 1, "newlt").ok);
  EXPECT_EQ(run(z, SortedSet::zcard()).integer, 3);
}

TEST(SortedSetRedis, InfinitiesAndNan) {
  SortedSet z;
  // ZADD z +inf inf -> 1
  EXPECT_EQ(zadd(z, 0, {{inf, "inf"}}).integer, 1);
  // ZADD z INCR -inf inf -> ERR resulting score is not a number (NaN)
  Result r = zadd(z, SortedSet::incr, {{-inf, "inf"}});
  EXPECT_TRUE(r.nan);
  EXPECT_FALSE(r.ok);
  // ZINCRBY z -inf inf -> the same error; ZSCORE z inf -> "inf" (unchanged)
  EXPECT_TRUE(run(z, SortedSet::zincrby("inf", -inf)).nan);
  r = run(z, SortedSet::zscore("inf"));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.score, inf);
  // ZINCRBY z +inf inf -> "inf"; ZINCRBY z -inf newinf -> "-inf"
  r = run(z, SortedSet::zincrby("inf", inf));
  EXPECT_FALSE(r.nan);
  EXPECT_EQ(r.score, inf);
  EXPECT_EQ(r.integer, 0);
  r = run(z, SortedSet::zincrby("newinf", -inf));
  EXPECT_EQ(r.score, -inf);
  EXPECT_EQ(r.integer, 1);
  EXPECT_EQ(by_rank(z, 0, -1), (Items{{"newinf", -inf}, {"inf", inf}}));
}

bool negative_zero(double d) { return d == 0 && std::signbit(d); }
double score_of(SortedSet& z, std::string_view m) { return run(z, SortedSet::zscore(m)).score; }

// Redis 7.0.15 with its default zset-max-listpack-entries 128 and -value 64: a small set is a
// listpack, which stores -0 as 0; a set that outgrew it (OBJECT ENCODING: skiplist) keeps -0.
TEST(SortedSetRedis, NegativeZeroAsTheEncodingRedisWouldUseStoresIt) {
  SortedSet n;
  // ZADD n -0 a -> 1; ZSCORE n a -> "0"
  EXPECT_EQ(zadd(n, 0, {{-0.0, "a"}}).integer, 1);
  EXPECT_FALSE(std::signbit(score_of(n, "a")));
  // ZADD n3 INCR -0 x -> "-0" (the computed score); ZSCORE n3 x -> "0"; ZINCRBY n3 -0 y -> "-0"
  EXPECT_TRUE(negative_zero(zadd(n, SortedSet::incr, {{-0.0, "x"}}).score));
  EXPECT_FALSE(std::signbit(score_of(n, "x")));
  EXPECT_TRUE(negative_zero(run(n, SortedSet::zincrby("y", -0.0)).score));
  // ZADD n3 CH -0 x -> 0 (0 == -0: no change)
  EXPECT_EQ(zadd(n, SortedSet::ch, {{-0.0, "x"}}).integer, 0);

  // ZADD e1 -0 a 1 <64 bytes> -> 2 (listpack); ZADD e1 -0 b 1 <65 bytes> -> 2 (skiplist: b was
  // added before the conversion); ZADD e1 -0 c -> 1; ZRANGE e1 0 2 WITHSCORES -> a 0 b 0 c -0
  SortedSet e1;
  EXPECT_EQ(zadd(e1, 0, {{-0.0, "a"}, {1, std::string(64, 'L')}}).integer, 2);
  EXPECT_EQ(zadd(e1, 0, {{-0.0, "b"}, {1, std::string(65, 'L')}}).integer, 2);
  EXPECT_EQ(zadd(e1, 0, {{-0.0, "c"}}).integer, 1);
  const Items first = by_rank(e1, 0, 2);
  ASSERT_EQ(names(first), (Names{"a", "b", "c"}));
  EXPECT_FALSE(std::signbit(first[0].second));
  EXPECT_FALSE(std::signbit(first[1].second));
  EXPECT_TRUE(negative_zero(first[2].second));

  // ZADD e2 1 <65 bytes> -0 a -> 2 (skiplist from the start); ZSCORE e2 a -> "-0"
  SortedSet e2;
  zadd(e2, 0, {{1, std::string(65, 'L')}, {-0.0, "a"}});
  EXPECT_TRUE(negative_zero(score_of(e2, "a")));
  // ZINCRBY e4 1 <65 bytes>; ZADD e4 -0 g; ZSCORE e4 g -> "-0"
  SortedSet e4;
  run(e4, SortedSet::zincrby(std::string(65, 'L'), 1));
  zadd(e4, 0, {{-0.0, "g"}});
  EXPECT_TRUE(negative_zero(score_of(e4, "g")));

  // ZADD e3 i mi for i in 1..127; ZADD e3 -0 a -> ZCARD 128, listpack; ZADD e3 -0 b -> skiplist;
  // ZSCORE e3 a -> "0", ZSCORE e3 b -> "-0"
  SortedSet e3;
  for (int i = 1; i <= 127; ++i) zadd(e3, 0, {{static_cast<double>(i), numbered("m", i)}});
  zadd(e3, 0, {{-0.0, "a"}});
  EXPECT_EQ(e3.size(), 128u);
  zadd(e3, 0, {{-0.0, "b"}});
  EXPECT_FALSE(std::signbit(score_of(e3, "a")));
  EXPECT_TRUE(negative_zero(score_of(e3, "b")));
  // ZREM e3 m1 .. m127 -> ZCARD 3, still skiplist; ZADD e3 -0 d; ZSCORE e3 d -> "-0"
  for (int i = 1; i <= 127; ++i) zrem(e3, {numbered("m", i)});
  zadd(e3, 0, {{-0.0, "d"}});
  EXPECT_TRUE(negative_zero(score_of(e3, "d")));
  // ZREM e3 a b d -> 3 (the key is deleted); ZADD e3 -0 f -> listpack; ZSCORE e3 f -> "0"
  EXPECT_EQ(zrem(e3, {"a", "b", "d"}).integer, 3);
  zadd(e3, 0, {{-0.0, "f"}});
  EXPECT_FALSE(std::signbit(score_of(e3, "f")));
  // DEL starts a new set too.
  zadd(e3, 0, {{1, std::string(65, 'L')}});
  run(e3, SortedSet::clear());
  zadd(e3, 0, {{-0.0, "f"}});
  EXPECT_FALSE(std::signbit(score_of(e3, "f")));
}

TEST(SortedSetRedis, XxOnAnEmptySet) {
  SortedSet z;
  // ZADD nokey XX 1 a -> 0; ZADD nokey XX INCR 1 a -> (nil); EXISTS nokey -> 0
  EXPECT_EQ(zadd(z, SortedSet::xx, {{1, "a"}}).integer, 0);
  EXPECT_FALSE(zadd(z, SortedSet::xx | SortedSet::incr, {{1, "a"}}).ok);
  EXPECT_EQ(z.size(), 0u);
}

// ZADD z 1 a 2 b 3 c 4 d 5 e
SortedSet five() {
  SortedSet z;
  zadd(z, 0, {{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}, {5, "e"}});
  return z;
}

TEST(SortedSetRedis, RankRanges) {
  SortedSet z = five();
  EXPECT_EQ(names(by_rank(z, -2, -1)), (Names{"d", "e"}));              // ZRANGE z -2 -1 -> d e
  EXPECT_EQ(names(by_rank(z, -100, 1)), (Names{"a", "b"}));             // ZRANGE z -100 1 -> a b
  EXPECT_EQ(names(by_rank(z, 3, 1)), Names{});                          // ZRANGE z 3 1 -> (empty)
  EXPECT_EQ(names(by_rank(z, 5, 10)), Names{});                         // ZRANGE z 5 10 -> (empty)
  EXPECT_EQ(names(by_rank(z, 4, 10)), (Names{"e"}));                    // ZRANGE z 4 10 -> e
  EXPECT_EQ(names(by_rank(z, -1, -100)), Names{});                      // ZRANGE z -1 -100 -> (empty)
  EXPECT_EQ(names(by_rank(z, int64_min, int64_max)), (Names{"a", "b", "c", "d", "e"}));  // ZRANGE z -9223372036854775808 9223372036854775807
  EXPECT_EQ(names(by_rank(z, 1, -2)), (Names{"b", "c", "d"}));          // ZRANGE z 1 -2 -> b c d
  EXPECT_EQ(names(by_rank(z, 0, 1, true)), (Names{"e", "d"}));          // ZREVRANGE z 0 1 -> e d
  EXPECT_EQ(names(by_rank(z, -2, -1, true)), (Names{"b", "a"}));        // ZREVRANGE z -2 -1 -> b a
  EXPECT_EQ(names(by_rank(z, 1, -2, true)), (Names{"d", "c", "b"}));    // ZREVRANGE z 1 -2 -> d c b
  EXPECT_EQ(names(by_rank(z, 3, 100, true)), (Names{"b", "a"}));        // ZREVRANGE z 3 100 -> b a
  EXPECT_EQ(names(by_rank(z, -100, 0, true)), (Names{"e"}));            // ZREVRANGE z -100 0 -> e
  EXPECT_EQ(by_rank(z, 0, 0, true), (Items{{"e", 5}}));
}

TEST(SortedSetRedis, RanksScoresAndRemoval) {
  SortedSet z = five();
  const auto rank = [&](std::string_view m, bool reverse) { return run(z, SortedSet::zrank(m, reverse)); };
  EXPECT_EQ(rank("a", false).integer, 0);  // ZRANK z a -> 0
  EXPECT_EQ(rank("a", true).integer, 4);   // ZREVRANK z a -> 4
  EXPECT_EQ(rank("e", true).integer, 0);   // ZREVRANK z e -> 0
  EXPECT_TRUE(rank("e", true).ok);
  EXPECT_FALSE(rank("nope", false).ok);    // ZRANK z nope -> (nil)
  EXPECT_FALSE(rank("nope", true).ok);     // ZREVRANK z nope -> (nil)
  // ZREM z a a nope b -> 2; ZCARD z -> 3
  EXPECT_EQ(zrem(z, {"a", "a", "nope", "b"}).integer, 2);
  EXPECT_EQ(run(z, SortedSet::zcard()).integer, 3);
  // ZMSCORE z c nope c -> 3 (nil) 3
  EXPECT_EQ(zmscore(z, {"c", "nope", "c"}).scores, (std::vector<std::optional<double>>{3, std::nullopt, 3}));
  // ZSCORE z nope -> (nil)
  EXPECT_FALSE(run(z, SortedSet::zscore("nope")).ok);
  // ZMSCORE nokey a b -> (nil) (nil)
  SortedSet empty;
  EXPECT_EQ(zmscore(empty, {"a", "b"}).scores, (std::vector<std::optional<double>>{std::nullopt, std::nullopt}));
  // DEL: every member removed
  EXPECT_EQ(run(z, SortedSet::clear()).integer, 3);
  EXPECT_EQ(z.size(), 0u);
  EXPECT_EQ(run(z, SortedSet::clear()).integer, 0);
}

TEST(SortedSetRedis, ScoreRangesAndLimit) {
  SortedSet z = five();
  const SortedSet::ScoreBound lo{-inf, false}, hi{inf, false};
  // ZRANGEBYSCORE z -inf +inf LIMIT -1 2 -> (empty); LIMIT -1 -1 -> (empty)
  EXPECT_EQ(names(by_score(z, lo, hi, false, -1, 2)), Names{});
  EXPECT_EQ(names(by_score(z, lo, hi, false, -1, -1)), Names{});
  // LIMIT 0 -1 -> a b c d e; LIMIT 0 0 -> (empty); LIMIT 2 -5 -> c d e
  EXPECT_EQ(names(by_score(z, lo, hi, false, 0, -1)), (Names{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(names(by_score(z, lo, hi, false, 0, 0)), Names{});
  EXPECT_EQ(names(by_score(z, lo, hi, false, 2, -5)), (Names{"c", "d", "e"}));
  // LIMIT 5 1 -> (empty); LIMIT 4 10 -> e
  EXPECT_EQ(names(by_score(z, lo, hi, false, 5, 1)), Names{});
  EXPECT_EQ(names(by_score(z, lo, hi, false, 4, 10)), (Names{"e"}));
  // ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2 -> d c; LIMIT -1 2 -> (empty)
  EXPECT_EQ(names(by_score(z, lo, hi, true, 1, 2)), (Names{"d", "c"}));
  EXPECT_EQ(names(by_score(z, lo, hi, true, -1, 2)), Names{});
  // ZRANGE z +inf -inf BYSCORE REV LIMIT 1 2 -> d c (REV's bounds are max min)
  EXPECT_EQ(by_score(z, lo, hi, true, 1, 2), (Items{{"d", 4}, {"c", 3}}));
  // ZRANGEBYSCORE z (1 (5 -> b c d; (3 3 -> (empty); 3 3 -> c; 4 3 -> (empty)
  EXPECT_EQ(names(by_score(z, {1, true}, {5, true})), (Names{"b", "c", "d"}));
  EXPECT_EQ(names(by_score(z, {3, true}, {3, false})), Names{});
  EXPECT_EQ(names(by_score(z, {3, false}, {3, false})), (Names{"c"}));
  EXPECT_EQ(names(by_score(z, {4, false}, {3, false})), Names{});
  // ZRANGEBYSCORE z (-inf (+inf -> a b c d e
  EXPECT_EQ(names(by_score(z, {-inf, true}, {inf, true})).size(), 5u);
}

TEST(SortedSetRedis, CountAndInfiniteScores) {
  SortedSet z = five();
  const auto count = [&](SortedSet::ScoreBound min, SortedSet::ScoreBound max) {
    return run(z, SortedSet::zcount(min, max)).integer;
  };
  EXPECT_EQ(count({3, true}, {3, false}), 0);     // ZCOUNT z (3 3 -> 0
  EXPECT_EQ(count({3, false}, {3, false}), 1);    // ZCOUNT z 3 3 -> 1
  EXPECT_EQ(count({4, false}, {3, false}), 0);    // ZCOUNT z 4 3 -> 0
  EXPECT_EQ(count({1, true}, {inf, false}), 4);   // ZCOUNT z (1 +inf -> 4
  EXPECT_EQ(count({-inf, false}, {-inf, true}), 0);  // ZCOUNT z -inf (-inf -> 0
  EXPECT_EQ(count({inf, true}, {inf, false}), 0);    // ZCOUNT z (+inf +inf -> 0

  // ZADD w -inf lo 1 a 2 b 2 c +inf hi +inf hj -> 6
  SortedSet w;
  EXPECT_EQ(zadd(w, 0, {{-inf, "lo"}, {1, "a"}, {2, "b"}, {2, "c"}, {inf, "hi"}, {inf, "hj"}}).integer, 6);
  EXPECT_EQ(run(w, SortedSet::zcount({2, true}, {inf, false})).integer, 2);  // ZCOUNT w (2 +inf -> 2
  EXPECT_EQ(run(w, SortedSet::zcount({2, true}, {inf, true})).integer, 0);   // ZCOUNT w (2 (+inf -> 0
  EXPECT_EQ(names(by_score(w, {inf, false}, {inf, false})), (Names{"hi", "hj"}));    // ZRANGEBYSCORE w +inf +inf -> hi hj
  EXPECT_EQ(by_score(w, {-inf, false}, {-inf, false}), (Items{{"lo", -inf}}));       // ZRANGEBYSCORE w -inf -inf WITHSCORES
  // ZREVRANGEBYSCORE w (+inf (-inf LIMIT 1 5 -> b a
  EXPECT_EQ(names(by_score(w, {-inf, true}, {inf, true}, true, 1, 5)), (Names{"b", "a"}));
  // ZREVRANGEBYSCORE w 2 2 LIMIT 0 1 -> c; ZRANGEBYSCORE w 2 2 LIMIT 1 1 -> c
  EXPECT_EQ(names(by_score(w, {2, false}, {2, false}, true, 0, 1)), (Names{"c"}));
  EXPECT_EQ(names(by_score(w, {2, false}, {2, false}, false, 1, 1)), (Names{"c"}));
  // ZINCRBY w 0 c -> "2"; ZINCRBY w 1 a -> "2"; ZRANGE w 0 -1 -> lo a b c hi hj (ties by member)
  EXPECT_EQ(run(w, SortedSet::zincrby("c", 0)).score, 2);
  EXPECT_EQ(run(w, SortedSet::zincrby("a", 1)).score, 2);
  EXPECT_EQ(names(by_rank(w, 0, -1)), (Names{"lo", "a", "b", "c", "hi", "hj"}));
}

TEST(SortedSetRedis, MembersOrderedByBytesShorterFirst) {
  SortedSet t;
  // ZADD t 1 b 1 a 1 ab 1 "" 1 aa 0 zz -> 6, then 1 "a\x00" 1 "a\x00\x01" 1 "\x80" -> 3, 1 "\xff"
  EXPECT_EQ(zadd(t, 0, {{1, "b"}, {1, "a"}, {1, "ab"}, {1, ""}, {1, "aa"}, {0, "zz"}}).integer, 6);
  const std::string a0("a\0", 2), a01("a\0\x01", 3);
  EXPECT_EQ(zadd(t, 0, {{1, a0}, {1, a01}, {1, "\x80"}, {1, "\xff"}}).integer, 4);
  // ZRANGE t 0 -1 -> zz "" a "a\x00" "a\x00\x01" aa ab b "\x80" "\xff"; ZRANK t "\x80" -> 8
  EXPECT_EQ(names(by_rank(t, 0, -1)), (Names{"zz", "", "a", a0, a01, "aa", "ab", "b", "\x80", "\xff"}));
  EXPECT_EQ(run(t, SortedSet::zrank("\x80", false)).integer, 8);
  EXPECT_EQ(run(t, SortedSet::zrank(a0, false)).integer, 3);
}

// ---- the structure ------------------------------------------------------------------------

TEST(SortedSetStructure, OpsKeepShortMembersInlineAndLongOnesInOneBlock) {
  EXPECT_LE(sizeof(SortedSet::Op), 64u);
  const std::string fits(SortedSet::Op::inline_capacity, 'i'), over(SortedSet::Op::inline_capacity + 1, 'h');
  const SortedSet::Op a = SortedSet::zincrby(fits, 2.5);
  EXPECT_FALSE(a.on_heap());
  EXPECT_EQ(a.member(), fits);
  EXPECT_EQ(a.score(), 2.5);
  SortedSet::dispose(a);  // nothing to free
  const SortedSet::Op b = SortedSet::zscore(over);
  EXPECT_TRUE(b.on_heap());
  EXPECT_EQ(b.member(), over);
  // A copy shares the block (NR's log, FC's slots): both read it; one dispose frees it.
  const SortedSet::Op copy = b;
  EXPECT_EQ(copy.member().data(), b.member().data());
  SortedSet::dispose(copy);
  // Several members always take a block, every pair in order, duplicates kept.
  const std::vector<SortedSet::ScoredMember> pairs{{1, "x"}, {2, over}, {3, "x"}, {4, ""}};
  const SortedSet::Op c = SortedSet::zadd(SortedSet::ch, pairs);
  ASSERT_TRUE(c.on_heap());
  ASSERT_EQ(c.member_count(), 4u);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(c.member(i), pairs[i].member);
    EXPECT_EQ(c.score(i), pairs[i].score);
  }
  SortedSet z;
  EXPECT_EQ(z.execute(c).integer, 4);  // x added, over added, x changed, "" added
  SortedSet::dispose(c);
  EXPECT_EQ(SortedSet::zcard().member_count(), 0u);
  // The op's bytes are its own: the caller's buffer may change after the op is made.
  std::string buffer = "member";
  const SortedSet::Op d = SortedSet::zincrby(buffer, 1);
  buffer = "changed";
  EXPECT_EQ(d.member(), "member");
}

TEST(SortedSetStructure, EqualOpSequencesGiveEqualInstances) {
  Generator gen(7, 200, 20);
  SortedSet a(5), b(5);
  for (int i = 0; i < 20'000; ++i) {
    gen.size_hint = a.size();
    const SortedSet::Op op = gen.next().make();
    ASSERT_EQ(a.execute(op), b.execute(op));
    SortedSet::dispose(op);
  }
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.check_invariants(), "");
  // One more member in one of them: no longer equal.
  const SortedSet::ScoredMember extra{1, "extra"};
  a.execute(SortedSet::zadd(0, {&extra, 1}));
  EXPECT_FALSE(a == b);
  b.execute(SortedSet::zadd(0, {&extra, 1}));
  EXPECT_TRUE(a == b);
  // The same members after other updates: a third insertion drew one more tower height.
  SortedSet c(5), d(5);
  zadd(c, 0, {{1, "p"}, {2, "q"}});
  zadd(d, 0, {{1, "p"}, {2, "q"}, {3, "r"}});
  zrem(d, {"r"});
  EXPECT_EQ(contents(c), contents(d));
  EXPECT_FALSE(c == d);
  SortedSet e(6);
  zadd(e, 0, {{1, "p"}, {2, "q"}});
  EXPECT_FALSE(c == e);  // another hash seed
}

TEST(SortedSetStructure, ScoreUpdatesInPlaceOrByReinsertion) {
  SortedSet z;
  zadd(z, 0, {{1, "a"}, {2, "b"}, {3, "c"}});
  // Between its neighbours' scores: in place; past a neighbour: reinserted; the table follows.
  for (double s : {2.5, 1.5, 10.0, 2.0, -1.0, 3.0}) {
    zadd(z, 0, {{s, "b"}});
    const Result r = run(z, SortedSet::zscore("b"));
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.score, s);
  }
  EXPECT_EQ(names(by_rank(z, 0, -1)), (Names{"a", "b", "c"}));  // a 1, b 3, c 3: ties by member
  // Many reinsertions of one long member keep the list and table consistent.
  const std::string m(100, 'q');
  for (int i = 0; i < 2'000; ++i) run(z, SortedSet::zincrby(m, i % 2 ? -3.0 : 4.0));
  EXPECT_EQ(run(z, SortedSet::zscore(m)).score, 1'000.0);
}

TEST(SortedSetStructure, TableGrowsInUpdatesAndShrinksAfterRemovals) {
  SortedSet z;
  const std::size_t empty = z.memory_bytes();
  std::vector<std::string> members;
  for (int i = 0; i < 10'000; ++i) members.push_back(numbered("member-", i));
  for (const auto& m : members) apply(z, SortedSet::zincrby(m, 1));
  EXPECT_EQ(z.check_invariants(), "");
  const std::size_t full = z.memory_bytes();
  EXPECT_GT(full, empty + 10'000 * (members[0].size() + 24));  // nodes with their bytes
  // Reads change nothing, memory included.
  for (const auto& m : members) ASSERT_TRUE(apply(z, SortedSet::zscore(m)).ok);
  run(z, SortedSet::range_by_rank(0, -1, false));
  EXPECT_EQ(z.memory_bytes(), full);
  // All but ten removed: a table that never shrank would keep 16,384+ slots (128+ KiB).
  for (std::size_t i = 10; i < members.size(); ++i) {
    const std::string_view m = members[i];
    apply(z, SortedSet::zrem({&m, 1}));
  }
  EXPECT_EQ(z.size(), 10u);
  EXPECT_EQ(z.check_invariants(), "");
  EXPECT_LT(z.memory_bytes(), empty + 4'096);
  EXPECT_EQ(run(z, SortedSet::clear()).integer, 10);
  EXPECT_LE(z.memory_bytes(), empty);
}

TEST(SortedSetStructure, ReadsRunConcurrentlyOnOneInstance) {
  SortedSet z(3);
  for (int i = 0; i < 2'000; ++i) apply(z, SortedSet::zincrby(numbered("m", i), i % 50));
  const Items all = contents(z);
  const std::size_t bytes = z.memory_bytes();
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const std::string m = numbered("m", (i * 7 + t) % 2'000);
        const SortedSet::Op rank = SortedSet::zrank(m, false);
        const Result r = z.execute(rank);
        failures[t] += !r.ok || all[static_cast<std::size_t>(r.integer)].first != m;
        const Result range = z.execute(SortedSet::range_by_score({10, false}, {12, true}, t % 2, 3, 5));
        failures[t] += range.items.size() != 5;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, (std::vector<int>(4, 0)));
  EXPECT_EQ(z.memory_bytes(), bytes);
  EXPECT_EQ(z.check_invariants(), "");
}

}  // namespace sorted_set_test
