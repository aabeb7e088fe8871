// Skip-list priority queue (Pugh, "Skip Lists: A Probabilistic Alternative to Balanced
// Trees", CACM 1990), sequential and deterministic: the priority queue of Calciu et al.'s
// evaluation (ASPLOS 2017), handed to NR and the other black-box constructions.
//
// A min-queue of 64-bit priorities, duplicates allowed (a multiset). The list is sorted
// ascending; an insert goes after every equal priority, so the order of equal items, and
// with the deterministic tower heights (detail/level_generator.hpp) the whole shape, is a
// function of the operation sequence: two instances fed the same operations are equal node
// for node. delete_min unlinks the first node: O(height); insert O(log n) expected.
//
// Node layout: value first (the hot field of every comparison), then the height and the
// tower of next pointers in one allocation sized to the height (no padding, P9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/seq/answer.hpp"
#include "cdsbench/seq/detail/level_generator.hpp"

namespace cdsb::seq {

class SkipListPq {
 public:
  enum class Code : std::uint8_t { insert, delete_min, find_min };
  struct Op {
    Code code = Code::find_min;
    std::uint64_t value = 0;  // insert only
  };
  // insert: ok; delete_min / find_min: ok and the min, or !ok when empty.
  using Result = Answer;

  static bool is_read_only(const Op& op) noexcept { return op.code == Code::find_min; }

  // In the body: make_node counts into bytes_, which is declared (and zeroed) after head_.
  SkipListPq() { head_ = make_node(0, Levels::max_height); }
  SkipListPq(SkipListPq&& other) noexcept
      : levels_(other.levels_), head_(std::exchange(other.head_, nullptr)), in_use_(other.in_use_),
        size_(std::exchange(other.size_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}
  SkipListPq(const SkipListPq&) = delete;
  SkipListPq& operator=(const SkipListPq&) = delete;
  SkipListPq& operator=(SkipListPq&&) = delete;
  ~SkipListPq() {
    Node* n = head_;
    while (n) {
      Node* next = n->next()[0];
      std::free(n);
      n = next;
    }
  }

  Result execute(const Op& op) {
    switch (op.code) {
      case Code::insert:
        insert(op.value);
        return {true, op.value};
      case Code::delete_min: {
        const auto v = delete_min();
        return {v.has_value(), v.value_or(0)};
      }
      default: {
        const auto v = find_min();
        return {v.has_value(), v.value_or(0)};
      }
    }
  }

  void insert(std::uint64_t v) {
    Node* update[Levels::max_height];
    Node* x = head_;
    for (int l = Levels::max_height - 1; l >= in_use_; --l) update[l] = head_;
    for (int l = in_use_ - 1; l >= 0; --l) {
      while (x->next()[l] && x->next()[l]->value <= v) x = x->next()[l];  // after equal values
      update[l] = x;
    }
    const int h = levels_.next();
    if (h > in_use_) in_use_ = h;
    Node* n = make_node(v, h);
    for (int l = 0; l < h; ++l) {
      n->next()[l] = update[l]->next()[l];
      update[l]->next()[l] = n;
    }
    ++size_;
  }

  std::optional<std::uint64_t> delete_min() {
    Node* first = head_->next()[0];
    if (!first) return std::nullopt;
    // The head precedes the first node on every level the node has.
    for (int l = 0; l < first->height; ++l) head_->next()[l] = first->next()[l];
    const std::uint64_t v = first->value;
    bytes_ -= node_bytes(first->height);
    std::free(first);
    --size_;
    return v;
  }

  std::optional<std::uint64_t> find_min() const {
    if (!head_->next()[0]) return std::nullopt;
    return head_->next()[0]->value;
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  std::size_t size() const noexcept { return size_; }
  template <class Fn>
  void for_each_item(Fn&& fn) const {
    for (const Node* n = head_->next()[0]; n; n = n->next()[0]) fn(n->value);
  }

  std::string check_invariants() const {
    std::size_t count = 0;
    for (const Node* n = head_->next()[0]; n; n = n->next()[0]) {
      ++count;
      if (n->height < 1 || n->height > Levels::max_height) return "node with height " + std::to_string(n->height);
      if (n->next()[0] && n->next()[0]->value < n->value) return "level 0 out of order";
    }
    if (count != size_) return "size " + std::to_string(size_) + " but " + std::to_string(count) + " nodes";
    // Each upper level is the sub-sequence of level 0 of the nodes at least that tall.
    for (int l = 1; l < Levels::max_height; ++l) {
      const Node* expect = head_->next()[0];
      for (const Node* n = head_->next()[l]; n; n = n->next()[l]) {
        while (expect && expect != n) {
          if (expect->height > l) return "level " + std::to_string(l) + " skips a tall node";
          expect = expect->next()[0];
        }
        if (!expect) return "level " + std::to_string(l) + " links a node not on level 0";
        expect = expect->next()[0];
      }
      for (; expect; expect = expect->next()[0])
        if (expect->height > l) return "level " + std::to_string(l) + " ends early";
    }
    return {};
  }

  std::size_t memory_bytes() const noexcept { return sizeof(*this) + bytes_; }

  // Same items in the same order with the same towers, and the same generator state.
  friend bool operator==(const SkipListPq& a, const SkipListPq& b) {
    if (a.size_ != b.size_ || a.in_use_ != b.in_use_ || !(a.levels_ == b.levels_)) return false;
    const Node *x = a.head_->next()[0], *y = b.head_->next()[0];
    for (; x && y; x = x->next()[0], y = y->next()[0])
      if (x->value != y->value || x->height != y->height) return false;
    return !x && !y;
  }

 private:
  using Levels = detail::LevelGenerator<32, 1>;
  struct Node {
    std::uint64_t value;
    int height;
    // The tower: `height` next pointers, allocated right after the node.
    Node** next() noexcept { return reinterpret_cast<Node**>(this + 1); }
    Node* const* next() const noexcept { return reinterpret_cast<Node* const*>(this + 1); }
  };
  static_assert(sizeof(Node) % alignof(Node*) == 0);

  static std::size_t node_bytes(int h) noexcept { return sizeof(Node) + sizeof(Node*) * static_cast<std::size_t>(h); }

  Node* make_node(std::uint64_t v, int h) {
    const std::size_t bytes = node_bytes(h);
    void* p = std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    Node* n = static_cast<Node*>(p);
    n->value = v;
    n->height = h;
    for (int l = 0; l < h; ++l) n->next()[l] = nullptr;
    bytes_ += bytes;
    return n;
  }

  Levels levels_;
  Node* head_ = nullptr;
  int in_use_ = 1;  // the tallest tower so far: searches start there
  std::size_t size_ = 0;
  std::size_t bytes_ = 0;
};

static_assert(SequentialStructure<SkipListPq> && QuiescentlyCheckable<SkipListPq>);

}  // namespace cdsb::seq
