// Redis's sorted set (zset, Redis 7.0 semantics): a hash table from member to its skip-list node
// plus a skip list ordered by (score, member) whose links carry spans, so ranks are O(log n)
// (detail/zset_skiplist.hpp; Pugh's "A Skip List Cookbook", 1990, §3.4 for the spans). The
// structure of Calciu et al.'s Redis case study (ASPLOS 2017, §7), here the set behind the
// Redis-protocol server (apps/zset_server/) and the harness's black-box sorted-set workload.
//
// Sequential: not thread-safe, no progress guarantee of its own. Node Replication and the
// black-box constructions (include/cdsbench/nr/) make it concurrent; for them it is
// deterministic (equal op sequences give equal states: tower heights come from the instance's
// constant-seeded generator, p = 1/4 as Redis's) and its read-only ops write nothing.
//
// Members are byte strings, scores doubles (+-inf allowed, never NaN). Order: by score, then by
// the member's bytes as Redis's sdscmp (memcmp, then the shorter first). Each member's bytes
// are stored once, in its node after the tower; the table (detail/member_table.hpp) holds node
// pointers, hashed by the member with hash::Even{hash_seed} (SipHash-1-3 keyed by the seed: all
// replicas hash alike, and a client that does not know the seed cannot fill one probe run).
//
// The ops (each an Op made by the static function of its name; Redis's reply in brackets):
//   zadd(flags, items)     ZADD [NX|XX] [GT|LT] [CH] [INCR], per pair in order (a later
//                          duplicate wins). Existing member: NX skips; INCR makes the new score
//                          old + score (NaN: nan, nothing changed, [error]); GT/LT skip unless
//                          new > / < old; a new score equal to the old is no change. Absent
//                          member: XX skips, else it is added (GT/LT never prevent adding).
//                          integer = added (+ changed with CH) [integer]; with INCR: ok iff the
//                          pair was not skipped, score = the new score [score or nil], integer
//                          = 1 iff created.
//   zincrby(m, d)          ZINCRBY: ZADD INCR without flags [the new score].
//   zrem(members)          ZREM: integer = members removed (a repeated one counts once).
//   clear()                removes every member (DEL): integer = members removed.
//   zscore(m)              ZSCORE: ok iff present, score [score or nil].             read-only
//   zmscore(members)       ZMSCORE: scores, one optional per member asked.            read-only
//   zrank(m, reverse)      ZRANK / ZREVRANK: ok iff present, integer = the 0-based rank
//                          counted from the lowest (from the highest when reverse).    read-only
//   zcard()                ZCARD: integer = members.                                  read-only
//   zcount(min, max)       ZCOUNT: integer = members with min <= score <= max (bounds maybe
//                          exclusive), a difference of two ranks.                     read-only
//   range_by_rank(start, stop, reverse)   ZRANGE / ZREVRANGE: items in reply order.   read-only
//   range_by_score(min, max, reverse, offset, count)   ZRANGEBYSCORE / ZREVRANGEBYSCORE /
//                          ZRANGE BYSCORE [REV] [LIMIT]: items in reply order.         read-only
// Updates change the score of a member in place when it keeps its place, else unlink and
// reinsert it (Redis's zslUpdateScore), the table's slot following the node. The table grows
// only in updates and shrinks after removals (hysteresis); reads never resize it.
//
// A score of -0: Redis keeps a small set in a listpack (at most 128 members of at most 64
// bytes: the defaults of zset-max-listpack-entries/-value), which stores -0 as 0; a set that
// outgrew it is a skip list for good (until it is emptied, which deletes the key) and keeps -0.
// So does this set (compact_ says which Redis would use): ZSCORE answers "0" or "-0" as Redis
// 7.0.15 does. A ZADD INCR / ZINCRBY reply is the computed score, -0 included, in both.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/seq/detail/member_table.hpp"
#include "cdsbench/seq/detail/zset_skiplist.hpp"
#include "cdsbench/set/hash/hashes.hpp"

namespace cdsb::seq {

class SortedSet {
 public:
  enum class Code : std::uint8_t { zadd, zincrby, zrem, clear, zscore, zmscore, zrank, zcard, zcount, range_by_rank, range_by_score };
  // ZADD's flags. The caller validates them as Redis does: never NX with XX, never two of
  // NX/GT/LT, INCR only with one pair.
  enum Flag : std::uint8_t { nx = 1, xx = 2, gt = 4, lt = 8, ch = 16, incr = 32 };
  struct ScoreBound {  // "(1.5" is {1.5, true}; -inf and +inf allowed
    double value;
    bool exclusive;
  };
  struct ScoredMember {
    double score;
    std::string_view member;
  };

  // One operation with copies of the bytes it carries: one member of up to inline_capacity
  // bytes inline (no allocation: the harness's 8-byte members, a server's usual ones), else one
  // heap block holding every (score, member). Trivially copyable (NR copies it into its log, FC
  // into its slots): a copy shares the block, and dispose() frees it once, after the op's last
  // execute. 40 bytes.
  struct Op {
    static constexpr std::size_t inline_capacity = 24;

    Code code() const noexcept { return code_; }
    // The members carried (zadd: its pairs; zrem, zmscore: the members asked; zincrby, zscore,
    // zrank: one; other codes: none), each with its score (zadd's; zincrby's increment; else 0).
    std::size_t member_count() const noexcept {
      return storage_ == Storage::heap ? payload_.block->count : storage_ == Storage::inline_one ? 1 : 0;
    }
    std::string_view member(std::size_t i) const noexcept {
      if (storage_ == Storage::inline_one) return {payload_.one.bytes, inline_size_};
      if (storage_ == Storage::none) return {};
      const Entry& e = payload_.block->entries()[i];
      return {payload_.block->bytes() + e.offset, e.size};
    }
    double score(std::size_t i) const noexcept {
      if (storage_ == Storage::inline_one) return payload_.one.score;
      if (storage_ == Storage::none) return 0;
      return payload_.block->entries()[i].score;
    }
    // The (first) member and its score, of a one-member op (zincrby, zscore, zrank, a one-pair zadd).
    std::string_view member() const noexcept { return member(0); }
    double score() const noexcept { return score(0); }
    bool on_heap() const noexcept { return storage_ == Storage::heap; }

   private:
    friend class SortedSet;
    enum class Storage : std::uint8_t { none, inline_one, heap };
    struct Entry {
      double score;
      std::uint32_t offset, size;  // of the member's bytes after the entries
    };
    struct Block {  // followed by `count` entries, then every member's bytes
      std::uint64_t count;
      const Entry* entries() const noexcept { return reinterpret_cast<const Entry*>(this + 1); }
      Entry* entries() noexcept { return reinterpret_cast<Entry*>(this + 1); }
      const char* bytes() const noexcept { return reinterpret_cast<const char*>(entries() + count); }
    };
    struct Inline {
      double score;
      char bytes[inline_capacity];
    };
    struct Scores {  // zcount, range_by_score
      double min, max;
      std::int64_t offset, count;
    };
    struct Ranks {  // range_by_rank
      std::int64_t start, stop;
    };

    Code code_ = Code::zcard;
    std::uint8_t flags_ = 0;         // zadd's Flag bits
    bool reverse_ = false;           // zrank, range_*
    std::uint8_t exclusive_ = 0;     // score bounds: 1 = min exclusive, 2 = max exclusive
    std::uint8_t inline_size_ = 0;   // the inline member's bytes
    Storage storage_ = Storage::none;
    union Payload {
      Inline one;
      const Block* block;
      Scores scores;
      Ranks ranks;
    } payload_{};
  };
  static_assert(std::is_trivially_copyable_v<Op> && sizeof(Op) == 40);

  // Every field a code does not list stays at its default.
  struct Result {
    bool ok = false;           // zscore, zrank, zincrby, zadd with incr: a value exists (false: nil)
    bool nan = false;          // zincrby, zadd incr: the new score would be NaN; nothing changed
    std::int64_t integer = 0;  // zadd: added (+ changed with ch); zrem, clear: removed; zcard;
                               // zcount; zrank: the rank; zincrby, zadd incr: 1 iff created
    double score = 0;          // zscore, zincrby, zadd incr: the score
    std::vector<std::pair<std::string, double>> items;  // range_*: (member, score) in reply order
    std::vector<std::optional<double>> scores;          // zmscore: one per member asked
    friend bool operator==(const Result&, const Result&) = default;
  };

  // ---- making ops (each copies the bytes it is given; see Op) ------------------------------
  // items non-empty; flags validated by the caller (see Flag).
  static Op zadd(std::uint8_t flags, std::span<const ScoredMember> items) {
    Op op = carrying(Code::zadd, items.size(), [&](std::size_t i) { return items[i].member; },
                     [&](std::size_t i) { return items[i].score; });
    op.flags_ = flags;
    return op;
  }
  static Op zincrby(std::string_view member, double increment) {
    const ScoredMember item{increment, member};
    Op op = zadd(Flag::incr, {&item, 1});
    op.code_ = Code::zincrby;
    return op;
  }
  static Op zrem(std::span<const std::string_view> members) { return carrying_members(Code::zrem, members); }
  static Op clear() { return plain(Code::clear); }
  static Op zscore(std::string_view member) { return carrying_members(Code::zscore, {&member, 1}); }
  static Op zmscore(std::span<const std::string_view> members) { return carrying_members(Code::zmscore, members); }
  static Op zrank(std::string_view member, bool reverse) {
    Op op = carrying_members(Code::zrank, {&member, 1});
    op.reverse_ = reverse;
    return op;
  }
  static Op zcard() { return plain(Code::zcard); }
  static Op zcount(ScoreBound min, ScoreBound max) { return by_score(Code::zcount, min, max, false, 0, -1); }
  // Redis's indices: negative ones count from the end; clamped as Redis clamps them.
  static Op range_by_rank(std::int64_t start, std::int64_t stop, bool reverse) {
    Op op = plain(Code::range_by_rank);
    op.reverse_ = reverse;
    op.payload_.ranks = {start, stop};
    return op;
  }
  // min <= max semantically, also when reverse (descending order); LIMIT as Redis: a negative
  // offset gives nothing, count < 0 gives all from the offset on.
  static Op range_by_score(ScoreBound min, ScoreBound max, bool reverse, std::int64_t offset, std::int64_t count) {
    return by_score(Code::range_by_score, min, max, reverse, offset, count);
  }

  // Frees op's heap block, if any. Called once per op (not per copy), after its last execute.
  static void dispose(const Op& op) noexcept {
    if (op.storage_ == Op::Storage::heap) ::operator delete(const_cast<Op::Block*>(op.payload_.block));
  }

  static bool is_read_only(const Op& op) noexcept {
    switch (op.code_) {
      case Code::zadd:
      case Code::zincrby:
      case Code::zrem:
      case Code::clear: return false;
      default: return true;
    }
  }

  explicit SortedSet(std::uint64_t hash_seed = 0) : hash_{hash_seed} {}
  SortedSet(SortedSet&&) noexcept = default;
  SortedSet(const SortedSet&) = delete;
  SortedSet& operator=(const SortedSet&) = delete;
  SortedSet& operator=(SortedSet&&) = delete;

  // Runs op (see the table at the top). The read-only codes run in a const function.
  Result execute(const Op& op) {
    switch (op.code_) {
      case Code::zadd: return add(op, op.flags_);
      case Code::zincrby: return add(op, Flag::incr);
      case Code::zrem: return remove(op);
      case Code::clear: return remove_all();
      default: return read(op);
    }
  }


  // ---- quiescent helpers -------------------------------------------------------------------
  std::size_t size() const noexcept { return static_cast<std::size_t>(list_.length()); }

  template <class Fn>  // fn(std::string_view member, double score), in rank order
  void for_each_item(Fn&& fn) const {
    for (const Node* n = list_.first(); n; n = n->next()) fn(n->member(), n->score);
  }

  // Empty when sound: (score, member) order, spans, heights, the table <-> list agreement
  // (every node in the table once, findable from its hash; every table entry in the list) and
  // the sizes.
  std::string check_invariants() const {
    std::unordered_map<const Node*, std::uint64_t> rank_of{{list_.head(), 0}};
    std::uint64_t count = 0;
    for (const Node* n = list_.first(); n; n = n->next()) {
      rank_of[n] = ++count;
      if (std::isnan(n->score)) return "a NaN score";
      const Node* next = n->next();
      if (next && !List::after(next->score, next->member(), n)) return "list out of (score, member) order";
      if (n->hash != hash_(n->member())) return "a node's hash is not its member's";
      const std::size_t slot = table_.find(n->member(), n->hash);
      if (slot == Table::npos || table_.at(slot) != n) return "a member of the list is not found in the table";
    }
    if (count != list_.length()) return "list length " + std::to_string(list_.length()) + ", nodes " + std::to_string(count);
    if (table_.size() != count) return "table has " + std::to_string(table_.size()) + " members, list " + std::to_string(count);
    std::size_t entries = 0;
    std::string table_error;
    table_.for_each([&](std::size_t, const Node* n) {
      ++entries;
      if (!rank_of.count(n) && table_error.empty()) table_error = "a table entry not in the list";
    });
    if (!table_error.empty()) return table_error;
    if (entries != count) return "table holds " + std::to_string(entries) + " entries, counts " + std::to_string(table_.size());
    if (table_.capacity() && 2 * table_.size() > table_.capacity()) return "table load over 1/2";
    if (compact_) {
      if (count > listpack_max_entries) return "a listpack-sized set with too many members";
      for (const Node* n = list_.first(); n; n = n->next()) {
        if (n->size > listpack_max_value) return "a listpack-sized set with a long member";
        if (n->score == 0 && std::signbit(n->score)) return "a listpack-sized set holding -0";
      }
    }
    const int in_use = list_.levels_in_use();
    const Node* head = list_.head();
    if (in_use < 1 || in_use > List::max_height) return "levels in use out of range";
    if (in_use > 1 && !head->level()[in_use - 1].next) return "an empty level in use";
    for (int l = in_use; l < List::max_height; ++l)
      if (head->level()[l].next || head->level()[l].span) return "a head link above the levels in use";
    for (int l = 0; l < in_use; ++l) {
      for (const Node* n = head;; n = n->level()[l].next) {
        const Node* next = n->level()[l].next;
        if (next && !rank_of.count(next)) return "level " + std::to_string(l) + " links a node not on level 0";
        const std::uint64_t want = (next ? rank_of[next] : count) - rank_of[n];
        if (n->level()[l].span != want) return "wrong span on level " + std::to_string(l);
        if (!next) break;
        if (static_cast<int>(next->height) <= l) return "a node linked above its height";
        if (static_cast<int>(next->height) > in_use) return "a node taller than the levels in use";
      }
    }
    return {};
  }

  // Everything the set owns: itself, every node (head, towers and member bytes) and the table.
  std::size_t memory_bytes() const noexcept { return sizeof(*this) + list_.bytes() + table_.memory_bytes(); }

  // Same hash seed, members, scores, heights, spans, level-generator state and encoding.
  friend bool operator==(const SortedSet& a, const SortedSet& b) {
    return a.hash_.seed == b.hash_.seed && a.compact_ == b.compact_ && a.list_ == b.list_;
  }

 private:
  using List = detail::ZsetSkipList;
  using Node = List::Node;
  using Table = detail::MemberTable<Node>;

  static Op plain(Code code) {
    Op op;
    op.code_ = code;
    return op;
  }

  static Op by_score(Code code, ScoreBound min, ScoreBound max, bool reverse, std::int64_t offset, std::int64_t count) {
    Op op = plain(code);
    op.reverse_ = reverse;
    op.exclusive_ = static_cast<std::uint8_t>((min.exclusive ? 1 : 0) | (max.exclusive ? 2 : 0));
    op.payload_.scores = {min.value, max.value, offset, count};
    return op;
  }

  static Op carrying_members(Code code, std::span<const std::string_view> members) {
    return carrying(code, members.size(), [&](std::size_t i) { return members[i]; }, [](std::size_t) { return 0.0; });
  }

  // An op carrying n (score, member) pairs: inline when n == 1 and the member fits, else in
  // one heap block.
  template <class MemberAt, class ScoreAt>
  static Op carrying(Code code, std::size_t n, MemberAt member_at, ScoreAt score_at) {
    Op op = plain(code);
    if (n == 0) return op;
    if (n == 1 && member_at(0).size() <= Op::inline_capacity) {
      const std::string_view m = member_at(0);
      op.storage_ = Op::Storage::inline_one;
      op.inline_size_ = static_cast<std::uint8_t>(m.size());
      op.payload_.one.score = score_at(0);
      if (!m.empty()) std::memcpy(op.payload_.one.bytes, m.data(), m.size());
      return op;
    }
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      total += member_at(i).size();
      if (total > UINT32_MAX) throw std::length_error("SortedSet: an op carries more than 4 GiB of members");
    }
    auto* block = static_cast<Op::Block*>(::operator new(sizeof(Op::Block) + n * sizeof(Op::Entry) + total));
    block->count = n;
    Op::Entry* entries = block->entries();
    char* bytes = reinterpret_cast<char*>(entries + n);
    std::uint32_t offset = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::string_view m = member_at(i);
      entries[i] = {score_at(i), offset, static_cast<std::uint32_t>(m.size())};
      if (!m.empty()) std::memcpy(bytes + offset, m.data(), m.size());
      offset += static_cast<std::uint32_t>(m.size());
    }
    op.storage_ = Op::Storage::heap;
    op.payload_.block = block;
    return op;
  }

  // The read-only codes: writes nothing, so several threads may run it on one instance.
  Result read(const Op& op) const {
    Result r;
    switch (op.code_) {
      case Code::zscore:
        if (const Node* x = find(op.member())) r.ok = true, r.score = x->score;
        break;
      case Code::zmscore:
        r.scores.reserve(op.member_count());
        for (std::size_t i = 0; i < op.member_count(); ++i) {
          const Node* x = find(op.member(i));
          r.scores.push_back(x ? std::optional<double>(x->score) : std::nullopt);
        }
        break;
      case Code::zrank:
        if (const Node* x = find(op.member())) {
          const std::uint64_t rank = list_.rank_of(x);  // 1-based
          r.ok = true;
          r.integer = static_cast<std::int64_t>(op.reverse_ ? list_.length() - rank : rank - 1);
        }
        break;
      case Code::zcard: r.integer = static_cast<std::int64_t>(list_.length()); break;
      case Code::zcount: {
        const auto [lo, hi] = score_ranks(op);
        r.integer = static_cast<std::int64_t>(hi - lo);
        break;
      }
      case Code::range_by_rank: rank_range(op, r.items); break;
      case Code::range_by_score: score_range(op, r.items); break;
      default: break;  // the updates: never here (execute)
    }
    return r;
  }

  const Node* find(std::string_view member) const noexcept {
    const std::size_t slot = table_.find(member, hash_(member));
    return slot == Table::npos ? nullptr : table_.at(slot);
  }

  // Redis's zaddGenericCommand over zsetAdd, pair by pair.
  Result add(const Op& op, std::uint8_t flags) {
    const bool incr = flags & Flag::incr, nx = flags & Flag::nx, xx = flags & Flag::xx;
    const bool gt = flags & Flag::gt, lt = flags & Flag::lt;
    Result r;
    std::int64_t added = 0, changed = 0, processed = 0;
    double last = 0;
    for (std::size_t i = 0; i < op.member_count(); ++i) {
      const std::string_view member = op.member(i);
      double score = op.score(i);
      if (std::isnan(score)) return Result{.nan = true};  // never, by the ops' contract
      const std::uint64_t hash = hash_(member);
      const std::size_t slot = table_.find(member, hash);
      if (slot != Table::npos) {
        if (nx) continue;
        Node* x = table_.at(slot);
        const double old = x->score;
        if (incr) {
          score += old;
          if (std::isnan(score)) return Result{.nan = true};  // +inf + -inf
        }
        if ((lt && score >= old) || (gt && score <= old)) continue;
        ++processed;
        last = score;
        if (score != old) {
          table_.set(slot, list_.update_score(x, stored(score)));
          ++changed;
        }
      } else if (!xx) {
        // Redis converts a listpack before adding the member that does not fit it.
        if (list_.length() + 1 > listpack_max_entries || member.size() > listpack_max_value) compact_ = false;
        table_.make_room();  // may throw: before the list changes
        table_.insert(list_.insert(stored(score), member, hash));
        ++added;
        ++processed;
        last = score;
      }
    }
    if (incr) {
      r.ok = processed > 0;
      r.score = r.ok ? last : 0;
      r.integer = added;
    } else {
      r.integer = (flags & Flag::ch) ? added + changed : added;
    }
    return r;
  }

  Result remove(const Op& op) {
    Result r;
    for (std::size_t i = 0; i < op.member_count(); ++i) {
      const std::string_view member = op.member(i);
      const std::size_t slot = table_.find(member, hash_(member));
      if (slot == Table::npos) continue;
      Node* x = table_.at(slot);
      table_.erase_at(slot);
      list_.erase(x);
      ++r.integer;
    }
    if (list_.length() == 0) compact_ = true;  // Redis deletes the key; the next one starts small
    return r;
  }

  Result remove_all() {
    Result r;
    r.integer = static_cast<std::int64_t>(list_.length());
    table_.clear();
    list_.clear();
    compact_ = true;
    return r;
  }

  // The score as Redis stores it: a listpack stores -0 as the integer 0.
  double stored(double score) const noexcept { return compact_ && score == 0 ? 0.0 : score; }

  // The 0-based ranks [lo, hi) of the members in op's score range (empty: hi == lo).
  std::pair<std::uint64_t, std::uint64_t> score_ranks(const Op& op) const {
    const double min = op.payload_.scores.min, max = op.payload_.scores.max;
    const bool min_ex = op.exclusive_ & 1, max_ex = op.exclusive_ & 2;
    const std::uint64_t lo = list_.count_prefix([&](double s) { return min_ex ? s <= min : s < min; });
    const std::uint64_t hi = list_.count_prefix([&](double s) { return max_ex ? s < max : s <= max; });
    return {lo, std::max(lo, hi)};  // min > max: empty
  }

  // Appends `count` items from 0-based rank `first` on, reversed when `reverse`.
  void collect(std::uint64_t first, std::uint64_t count, bool reverse, std::vector<std::pair<std::string, double>>& out) const {
    if (count == 0) return;
    out.reserve(count);
    const Node* n = list_.at_rank(first + 1);
    for (std::uint64_t i = 0; i < count && n; ++i, n = n->next()) out.emplace_back(std::string(n->member()), n->score);
    if (reverse) std::reverse(out.begin(), out.end());
  }

  // Redis's genericZrangebyrankCommand: negative indices += length; start < 0 -> 0; empty when
  // start > stop or start >= length; stop >= length -> length - 1. Reverse: counted from the
  // highest, i.e. the forward ranks [length-1-stop, length-1-start] in descending order.
  void rank_range(const Op& op, std::vector<std::pair<std::string, double>>& out) const {
    const auto length = static_cast<std::int64_t>(list_.length());
    std::int64_t start = op.payload_.ranks.start, stop = op.payload_.ranks.stop;
    if (start < 0) start += length;
    if (stop < 0) stop += length;
    if (start < 0) start = 0;
    if (start > stop || start >= length) return;
    if (stop >= length) stop = length - 1;
    const auto count = static_cast<std::uint64_t>(stop - start + 1);
    const auto first = static_cast<std::uint64_t>(op.reverse_ ? length - 1 - stop : start);
    collect(first, count, op.reverse_, out);
  }

  // Redis's genericZrangebyscoreCommand: the members in range, from the lowest (from the
  // highest when reverse), skipping `offset` (a negative one skips everything: Redis walks
  // "while (offset--)" off the end) and taking `count` (all when negative).
  void score_range(const Op& op, std::vector<std::pair<std::string, double>>& out) const {
    const std::int64_t offset = op.payload_.scores.offset, limit = op.payload_.scores.count;
    if (offset < 0 || limit == 0) return;
    const auto [lo, hi] = score_ranks(op);
    const std::uint64_t n = hi - lo;
    if (static_cast<std::uint64_t>(offset) >= n) return;
    std::uint64_t take = n - static_cast<std::uint64_t>(offset);
    if (limit > 0) take = std::min(take, static_cast<std::uint64_t>(limit));
    const std::uint64_t first = op.reverse_ ? hi - static_cast<std::uint64_t>(offset) - take : lo + static_cast<std::uint64_t>(offset);
    collect(first, take, op.reverse_, out);
  }

  // Redis 7.0's defaults for a set kept as a listpack.
  static constexpr std::uint64_t listpack_max_entries = 128;
  static constexpr std::size_t listpack_max_value = 64;

  hash::Even hash_;
  List list_;
  Table table_;
  bool compact_ = true;  // Redis would keep this set as a listpack (see the top)
};

static_assert(SequentialStructure<SortedSet> && QuiescentlyCheckable<SortedSet>);

}  // namespace cdsb::seq
