// A Redis-like sorted set (Redis's zset: a hash table from member to score plus a skip list
// ordered by (score, member) whose links carry spans, so ranks are O(log n); Pugh's
// "A Skip List Cookbook", 1990, §3.4 for the spans), sequential and deterministic: the
// structure of Calciu et al.'s Redis case study (ASPLOS 2017, §7), updated atomically as one
// structure (the table and the list change together inside one operation).
//
// Members and scores are 64-bit (members unsigned, scores signed). Order: by score, then by
// member (Redis breaks ties by the member's bytes; we compare the integers).
//   zincrby(member, increment): the member's score += increment, done as Redis does it:
//       delete the list node and reinsert it at its new place; an absent member is created
//       with score = increment. Returns the new score; ok iff the member was created.
//   zrank(member): its 0-based rank in ascending order; !ok if absent. Read-only.
//
// Tower heights come from the instance's constant-seeded generator with p = 1/4 (Redis's
// ZSKIPLIST_P), so equal operation sequences give equal structures (NR's replicas).
// Node layout: score and member first (every comparison reads both), then the height and
// the tower of {next, span} pairs in one allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/seq/answer.hpp"
#include "cdsbench/seq/detail/level_generator.hpp"

namespace cdsb::seq {

class SortedSet {
 public:
  enum class Code : std::uint8_t { zincrby, zrank };
  struct Op {
    Code code = Code::zrank;
    std::uint64_t member = 0;
    std::int64_t increment = 0;  // zincrby only
  };
  // zincrby: value = the new score (two's complement), ok iff the member was created;
  // zrank: ok iff present, value = the rank.
  using Result = Answer;

  static bool is_read_only(const Op& op) noexcept { return op.code == Code::zrank; }

  // In the body: make_node counts into bytes_, which is declared (and zeroed) after head_.
  SortedSet() { head_ = make_node(0, 0, Levels::max_height); }
  SortedSet(SortedSet&& other) noexcept
      : levels_(other.levels_), dict_(std::move(other.dict_)), head_(std::exchange(other.head_, nullptr)),
        in_use_(other.in_use_), bytes_(std::exchange(other.bytes_, 0)) {}
  SortedSet(const SortedSet&) = delete;
  SortedSet& operator=(const SortedSet&) = delete;
  SortedSet& operator=(SortedSet&&) = delete;
  ~SortedSet() {
    Node* n = head_;
    while (n) {
      Node* next = n->level()[0].next;
      std::free(n);
      n = next;
    }
  }

  Result execute(const Op& op) {
    if (op.code == Code::zincrby) return zincrby(op.member, op.increment);
    return zrank(op.member);
  }

  Answer zincrby(std::uint64_t member, std::int64_t increment) {
    const auto [it, created] = dict_.try_emplace(member, increment);
    if (!created) {
      list_erase(it->second, member);
      it->second = static_cast<std::int64_t>(static_cast<std::uint64_t>(it->second) + static_cast<std::uint64_t>(increment));
    }
    list_insert(it->second, member);
    return {created, static_cast<std::uint64_t>(it->second)};
  }

  // Read-only: writes nothing (several readers may run it at once on one instance).
  Answer zrank(std::uint64_t member) const {
    const auto it = dict_.find(member);
    if (it == dict_.end()) return {false, 0};
    const std::int64_t score = it->second;
    std::uint64_t rank = 0;  // level-0 steps from the head, the head excluded
    const Node* x = head_;
    for (int l = in_use_ - 1; l >= 0; --l) {
      while (x->level()[l].next && !after(x->level()[l].next, score, member)) {
        rank += x->level()[l].span;
        x = x->level()[l].next;
      }
      if (x != head_ && x->member == member) return {true, rank - 1};
    }
    return {false, 0};  // unreachable while the invariants hold
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  std::size_t size() const noexcept { return dict_.size(); }
  template <class Fn>  // fn(member, score), in rank order
  void for_each_item(Fn&& fn) const {
    for (const Node* n = head_->level()[0].next; n; n = n->level()[0].next) fn(n->member, n->score);
  }

  std::string check_invariants() const {
    std::size_t count = 0;
    for (const Node* n = head_->level()[0].next; n; n = n->level()[0].next) {
      ++count;
      const Node* next = n->level()[0].next;
      if (next && !after(next, n->score, n->member)) return "list out of (score, member) order";
      const auto it = dict_.find(n->member);
      if (it == dict_.end() || it->second != n->score) return "list and table disagree on member " + std::to_string(n->member);
    }
    if (count != dict_.size()) return "table has " + std::to_string(dict_.size()) + " members, list " + std::to_string(count);
    // Spans (as Redis keeps them): with the head at rank 0 and the nodes at ranks 1..length,
    // a link's span is rank(next) - rank(node), a null link counting as rank `length`.
    std::unordered_map<const Node*, std::uint64_t> rank_of{{head_, 0}};
    std::uint64_t r = 0;
    for (const Node* n = head_->level()[0].next; n; n = n->level()[0].next) rank_of[n] = ++r;
    for (int l = 0; l < in_use_; ++l) {
      for (const Node* n = head_;; n = n->level()[l].next) {
        const Node* next = n->level()[l].next;
        if (next && !rank_of.count(next)) return "level " + std::to_string(l) + " links a node not on level 0";
        const std::uint64_t want = (next ? rank_of[next] : count) - rank_of[n];
        if (n->level()[l].span != want) return "wrong span on level " + std::to_string(l);
        if (!next) break;
        if (next->height <= l) return "a node linked above its height";
      }
    }
    return {};
  }

  std::size_t memory_bytes() const noexcept {
    // The table: its bucket array plus one node (member, score, hash link) per member.
    return sizeof(*this) + bytes_ + dict_.bucket_count() * sizeof(void*) +
           dict_.size() * (sizeof(std::pair<const std::uint64_t, std::int64_t>) + 2 * sizeof(void*));
  }

  friend bool operator==(const SortedSet& a, const SortedSet& b) {
    if (a.dict_ != b.dict_ || a.in_use_ != b.in_use_ || !(a.levels_ == b.levels_)) return false;
    const Node *x = a.head_, *y = b.head_;
    for (; x && y; x = x->level()[0].next, y = y->level()[0].next) {
      if (x->member != y->member || x->score != y->score || x->height != y->height) return false;
      for (int l = 0; l < x->height; ++l)
        if (x->level()[l].span != y->level()[l].span) return false;
    }
    return !x && !y;
  }

 private:
  using Levels = detail::LevelGenerator<32, 2>;
  struct Node;
  struct Link {
    Node* next;
    std::uint64_t span;  // level-0 steps from this node to `next` (to the end when null)
  };
  struct Node {
    std::int64_t score;
    std::uint64_t member;
    int height;
    Link* level() noexcept { return reinterpret_cast<Link*>(this + 1); }
    const Link* level() const noexcept { return reinterpret_cast<const Link*>(this + 1); }
  };
  static_assert(sizeof(Node) % alignof(Link) == 0);

  // True when n comes after (score, member).
  static bool after(const Node* n, std::int64_t score, std::uint64_t member) noexcept {
    return n->score > score || (n->score == score && n->member > member);
  }

  // True when n comes before (score, member).
  static bool before(const Node* n, std::int64_t score, std::uint64_t member) noexcept {
    return n->score < score || (n->score == score && n->member < member);
  }

  static std::size_t node_bytes(int h) noexcept { return sizeof(Node) + sizeof(Link) * static_cast<std::size_t>(h); }

  Node* make_node(std::int64_t score, std::uint64_t member, int h) {
    const std::size_t bytes = node_bytes(h);
    void* p = std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    Node* n = static_cast<Node*>(p);
    n->score = score;
    n->member = member;
    n->height = h;
    for (int l = 0; l < h; ++l) n->level()[l] = {nullptr, 0};
    bytes_ += bytes;
    return n;
  }

  // Redis's zslInsert: (score, member) is not in the list.
  void list_insert(std::int64_t score, std::uint64_t member) {
    Node* update[Levels::max_height];
    std::uint64_t rank[Levels::max_height];
    Node* x = head_;
    for (int l = in_use_ - 1; l >= 0; --l) {
      rank[l] = l == in_use_ - 1 ? 0 : rank[l + 1];
      while (x->level()[l].next && !after(x->level()[l].next, score, member)) {
        rank[l] += x->level()[l].span;
        x = x->level()[l].next;
      }
      update[l] = x;
    }
    const int h = levels_.next();
    const std::uint64_t length = dict_.size() - 1;  // members in the list before this insert
    if (h > in_use_) {
      for (int l = in_use_; l < h; ++l) {
        rank[l] = 0;
        update[l] = head_;
        update[l]->level()[l].span = length;
      }
      in_use_ = h;
    }
    Node* n = make_node(score, member, h);
    for (int l = 0; l < h; ++l) {
      n->level()[l].next = update[l]->level()[l].next;
      update[l]->level()[l].next = n;
      n->level()[l].span = update[l]->level()[l].span - (rank[0] - rank[l]);
      update[l]->level()[l].span = (rank[0] - rank[l]) + 1;
    }
    for (int l = h; l < in_use_; ++l) ++update[l]->level()[l].span;
  }

  // Redis's zslDelete: (score, member) is in the list.
  void list_erase(std::int64_t score, std::uint64_t member) {
    Node* update[Levels::max_height];
    Node* x = head_;
    for (int l = in_use_ - 1; l >= 0; --l) {
      while (x->level()[l].next && before(x->level()[l].next, score, member)) x = x->level()[l].next;
      update[l] = x;
    }
    Node* target = x->level()[0].next;  // (score, member) by the precondition
    for (int l = 0; l < in_use_; ++l) {
      if (update[l]->level()[l].next == target) {
        update[l]->level()[l].span += target->level()[l].span - 1;
        update[l]->level()[l].next = target->level()[l].next;
      } else {
        --update[l]->level()[l].span;
      }
    }
    bytes_ -= node_bytes(target->height);
    std::free(target);
    // The tallest tower stays `in_use_` (never lowered): shrinking would make the shape
    // depend on more than the insert order for no gain here.
  }

  Levels levels_;
  std::unordered_map<std::uint64_t, std::int64_t> dict_;
  Node* head_ = nullptr;
  int in_use_ = 1;
  std::size_t bytes_ = 0;
};

static_assert(SequentialStructure<SortedSet> && QuiescentlyCheckable<SortedSet>);

}  // namespace cdsb::seq
