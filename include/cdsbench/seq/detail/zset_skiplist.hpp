// The ranked skip list of the sorted set (seq/sorted_set.hpp): Redis's zskiplist (Pugh, "Skip
// Lists: A Probabilistic Alternative to Balanced Trees", CACM 1990; spans as in Pugh's "A Skip
// List Cookbook", 1990, §3.4), ordered by (score, member), each link carrying its span (the
// level-0 steps it skips) so that ranks cost O(log n). Sequential: not thread-safe.
//
// Node layout, one allocation: score first (every comparison reads it), the member's hash
// (the sorted set's table rehashes and shifts with it, never hashing the bytes again), the
// member's length and the tower height, then the tower of {next, span} links, then the
// member's bytes. The head is a node of the maximum height with no member.
//
// Spans as Redis keeps them: with the head at rank 0 and the nodes at ranks 1..length, a link's
// span is rank(next) - rank(node), a null link counting as rank `length`. Head links above the
// levels in use are {null, 0}.
//
// Heights come from the list's constant-seeded generator with p = 1/4 (Redis's ZSKIPLIST_P,
// detail/level_generator.hpp): one draw per insertion, so equal operation sequences give equal
// lists, tower for tower (Node Replication's replicas rely on it). Unlike Redis there are no
// backward links: a descending range is read forward from its rank and reversed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

#include "cdsbench/seq/detail/level_generator.hpp"

namespace cdsb::seq::detail {

// Redis's sdscmp: bytes compared unsigned (memcmp), then the shorter string first.
inline int compare_members(std::string_view a, std::string_view b) noexcept {
  const std::size_t common = std::min(a.size(), b.size());
  if (common) {
    const int c = std::memcmp(a.data(), b.data(), common);
    if (c != 0) return c;
  }
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

class ZsetSkipList {
 public:
  using Levels = LevelGenerator<32, 2>;
  static constexpr int max_height = Levels::max_height;

  struct Node;
  struct Link {
    Node* next;
    std::uint64_t span;
  };
  struct Node {
    double score;
    std::uint64_t hash;
    std::uint32_t size;    // member bytes
    std::uint32_t height;  // tower links
    Link* level() noexcept { return reinterpret_cast<Link*>(this + 1); }
    const Link* level() const noexcept { return reinterpret_cast<const Link*>(this + 1); }
    std::string_view member() const noexcept {
      return {reinterpret_cast<const char*>(level() + height), size};
    }
    Node* next() const noexcept { return level()[0].next; }
  };
  static_assert(sizeof(Node) % alignof(Link) == 0);

  ZsetSkipList() { head_ = allocate(max_height, 0, {}, 0); }
  ZsetSkipList(ZsetSkipList&& other) noexcept
      : levels_(other.levels_), head_(std::exchange(other.head_, nullptr)), in_use_(other.in_use_),
        length_(std::exchange(other.length_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}
  ZsetSkipList(const ZsetSkipList&) = delete;
  ZsetSkipList& operator=(const ZsetSkipList&) = delete;
  ZsetSkipList& operator=(ZsetSkipList&&) = delete;
  ~ZsetSkipList() {
    if (!head_) return;  // moved from
    free_nodes();
    std::free(head_);
  }

  // ---- reads (write nothing) ---------------------------------------------------------------
  std::uint64_t length() const noexcept { return length_; }
  int levels_in_use() const noexcept { return in_use_; }
  const Node* head() const noexcept { return head_; }
  const Node* first() const noexcept { return head_->next(); }
  const Levels& levels() const noexcept { return levels_; }
  std::size_t bytes() const noexcept { return bytes_; }

  // x's 1-based rank (Redis's zslGetRank); x is in the list.
  std::uint64_t rank_of(const Node* x) const noexcept {
    std::uint64_t rank = 0;
    const Node* n = head_;
    const std::string_view member = x->member();
    for (int l = in_use_ - 1; l >= 0; --l) {
      // Past every node ordered at or before x: ends on x.
      while (n->level()[l].next && !before(x->score, member, n->level()[l].next)) {
        rank += n->level()[l].span;
        n = n->level()[l].next;
      }
      if (n == x) return rank;
    }
    return rank;  // unreachable while x is in the list
  }

  // The node of 1-based rank r, 1 <= r <= length (Redis's zslGetElementByRank).
  const Node* at_rank(std::uint64_t r) const noexcept {
    std::uint64_t traversed = 0;
    const Node* n = head_;
    for (int l = in_use_ - 1; l >= 0; --l) {
      while (n->level()[l].next && traversed + n->level()[l].span <= r) {
        traversed += n->level()[l].span;
        n = n->level()[l].next;
      }
      if (traversed == r) return n;
    }
    return nullptr;  // r out of range
  }

  // How many nodes, from the first, have a score for which in_prefix(score) holds; in_prefix
  // must hold for a prefix of the list (a monotone score predicate). O(log n) through spans.
  template <class Pred>
  std::uint64_t count_prefix(Pred in_prefix) const {
    std::uint64_t count = 0;
    const Node* n = head_;
    for (int l = in_use_ - 1; l >= 0; --l) {
      while (n->level()[l].next && in_prefix(n->level()[l].next->score)) {
        count += n->level()[l].span;
        n = n->level()[l].next;
      }
    }
    return count;
  }

  // ---- updates -----------------------------------------------------------------------------
  // Adds (score, member), absent from the list (Redis's zslInsert); returns its node.
  Node* insert(double score, std::string_view member, std::uint64_t hash) {
    Node* n = allocate(levels_.next(), score, member, hash);
    link(n);
    return n;
  }

  // Unlinks x and frees it (Redis's zslDelete).
  void erase(Node* x) noexcept {
    Node* update[max_height];
    locate(x->score, x->member(), update, nullptr);
    unlink(x, update);
    release(x);
  }

  // Gives x the score new_score (!= its score) as Redis's zslUpdateScore: in place when x stays
  // strictly between its neighbours' scores, else unlinked and inserted again with a newly
  // drawn height. Returns the node that now holds the member: x, or a new node (x then freed)
  // when the new height differs from x's.
  Node* update_score(Node* x, double new_score) {
    Node* update[max_height];
    locate(x->score, x->member(), update, nullptr);
    const Node* next = x->next();
    if ((update[0] == head_ || update[0]->score < new_score) && (!next || next->score > new_score)) {
      x->score = new_score;
      return x;
    }
    const int h = levels_.next();
    // Allocated before anything changes: a failed allocation leaves the list as it was.
    Node* n = h == static_cast<int>(x->height) ? x : allocate(h, new_score, x->member(), x->hash);
    unlink(x, update);
    if (n != x) release(x);
    n->score = new_score;
    link(n);
    return n;
  }

  // Removes every node. The generator keeps its state (heights stay a function of the ops).
  void clear() noexcept {
    free_nodes();
    for (int l = 0; l < max_height; ++l) head_->level()[l] = {nullptr, 0};
    in_use_ = 1;
    length_ = 0;
  }

  friend bool operator==(const ZsetSkipList& a, const ZsetSkipList& b) {
    if (a.length_ != b.length_ || a.in_use_ != b.in_use_ || !(a.levels_ == b.levels_)) return false;
    const Node *x = a.head_, *y = b.head_;
    for (; x && y; x = x->next(), y = y->next()) {
      if (x->height != y->height || x->member() != y->member()) return false;
      // Bitwise: -0 and 0 are different scores (Redis replies "-0").
      if (std::memcmp(&x->score, &y->score, sizeof(double)) != 0) return false;
      for (std::uint32_t l = 0; l < x->height; ++l)
        if (x->level()[l].span != y->level()[l].span) return false;
    }
    return !x && !y;
  }

  // True when (score, member) is ordered before n.
  static bool before(double score, std::string_view member, const Node* n) noexcept {
    return score < n->score || (score == n->score && compare_members(member, n->member()) < 0);
  }
  // True when n is ordered before (score, member).
  static bool after(double score, std::string_view member, const Node* n) noexcept {
    return n->score < score || (n->score == score && compare_members(n->member(), member) < 0);
  }

 private:
  static std::size_t node_bytes(int h, std::size_t size) noexcept {
    return sizeof(Node) + sizeof(Link) * static_cast<std::size_t>(h) + size;
  }

  Node* allocate(int h, double score, std::string_view member, std::uint64_t hash) {
    const std::size_t bytes = node_bytes(h, member.size());
    Node* n = static_cast<Node*>(std::malloc(bytes));
    if (!n) throw std::bad_alloc();
    n->score = score;
    n->hash = hash;
    n->size = static_cast<std::uint32_t>(member.size());
    n->height = static_cast<std::uint32_t>(h);
    for (int l = 0; l < h; ++l) n->level()[l] = {nullptr, 0};
    if (!member.empty()) std::memcpy(n->level() + h, member.data(), member.size());
    bytes_ += bytes;
    return n;
  }

  void release(Node* n) noexcept {
    bytes_ -= node_bytes(static_cast<int>(n->height), n->size);
    std::free(n);
  }

  void free_nodes() noexcept {
    for (Node* n = head_->next(); n;) {
      Node* next = n->next();
      release(n);
      n = next;
    }
  }

  // update[l]: the last node on level l ordered before (score, member); rank[l] (if asked):
  // its rank.
  void locate(double score, std::string_view member, Node** update, std::uint64_t* rank) const noexcept {
    Node* x = head_;
    for (int l = in_use_ - 1; l >= 0; --l) {
      if (rank) rank[l] = l == in_use_ - 1 ? 0 : rank[l + 1];
      while (x->level()[l].next && after(score, member, x->level()[l].next)) {
        if (rank) rank[l] += x->level()[l].span;
        x = x->level()[l].next;
      }
      update[l] = x;
    }
  }

  // Links n (its score, member and height set; its key absent from the list) at its place.
  void link(Node* n) noexcept {
    Node* update[max_height];
    std::uint64_t rank[max_height];
    locate(n->score, n->member(), update, rank);
    const int h = static_cast<int>(n->height);
    if (h > in_use_) {
      for (int l = in_use_; l < h; ++l) {
        rank[l] = 0;
        update[l] = head_;
        head_->level()[l].span = length_;
      }
      in_use_ = h;
    }
    for (int l = 0; l < h; ++l) {
      n->level()[l].next = update[l]->level()[l].next;
      update[l]->level()[l].next = n;
      n->level()[l].span = update[l]->level()[l].span - (rank[0] - rank[l]);
      update[l]->level()[l].span = (rank[0] - rank[l]) + 1;
    }
    for (int l = h; l < in_use_; ++l) ++update[l]->level()[l].span;
    ++length_;
  }

  // Redis's zslDeleteNode: update[] located for x. Lowers the levels in use as Redis does,
  // resetting the head links it leaves.
  void unlink(Node* x, Node** update) noexcept {
    for (int l = 0; l < in_use_; ++l) {
      if (update[l]->level()[l].next == x) {
        update[l]->level()[l].span += x->level()[l].span - 1;
        update[l]->level()[l].next = x->level()[l].next;
      } else {
        --update[l]->level()[l].span;
      }
    }
    while (in_use_ > 1 && !head_->level()[in_use_ - 1].next) head_->level()[--in_use_] = {nullptr, 0};
    --length_;
  }

  Levels levels_;
  Node* head_ = nullptr;
  int in_use_ = 1;
  std::uint64_t length_ = 0;
  std::size_t bytes_ = 0;  // every node's allocation, the head's included
};

}  // namespace cdsb::seq::detail
