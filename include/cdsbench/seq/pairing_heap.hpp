// Pairing heap (Fredman, Sedgewick, Sleator & Tarjan, "The Pairing Heap: A New Form of
// Self-Adjusting Heap", Algorithmica 1986), sequential: the second priority queue of
// Calciu et al.'s evaluation (ASPLOS 2017).
//
// A min-heap of 64-bit priorities, duplicates allowed, as a multiway tree in
// leftmost-child / right-sibling form. insert melds a one-node tree with the root (O(1));
// delete_min removes the root and melds its children with the standard two-pass pairing
// (left to right in pairs, then right to left), O(log n) amortized. Both passes are
// iterative: a heap built by 200,000 inserts has a root with 200,000 children, and a
// recursive pass would overflow the stack. Ties keep the earlier root, so the shape is a
// function of the operation sequence (replicas stay identical).
//
// Node layout: value, first child, next sibling (24 bytes, no padding, P9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/seq/answer.hpp"

namespace cdsb::seq {

class PairingHeap {
 public:
  enum class Code : std::uint8_t { insert, delete_min, find_min };
  struct Op {
    Code code = Code::find_min;
    std::uint64_t value = 0;  // insert only
  };
  using Result = Answer;  // as SkipListPq

  static bool is_read_only(const Op& op) noexcept { return op.code == Code::find_min; }

  PairingHeap() = default;
  PairingHeap(PairingHeap&& other) noexcept
      : root_(std::exchange(other.root_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PairingHeap(const PairingHeap&) = delete;
  PairingHeap& operator=(const PairingHeap&) = delete;
  PairingHeap& operator=(PairingHeap&&) = delete;
  ~PairingHeap() {
    // Iterative: move every child list onto one worklist of siblings.
    Node* work = root_;
    while (work) {
      Node* n = work;
      work = n->sibling;
      if (n->child) {
        Node* last = n->child;
        while (last->sibling) last = last->sibling;
        last->sibling = work;
        work = n->child;
      }
      delete n;
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
    root_ = meld(root_, new Node{v, nullptr, nullptr});
    ++size_;
  }

  std::optional<std::uint64_t> delete_min() {
    if (!root_) return std::nullopt;
    Node* old = root_;
    const std::uint64_t v = old->value;
    root_ = merge_pairs(old->child);
    delete old;
    --size_;
    return v;
  }

  std::optional<std::uint64_t> find_min() const {
    if (!root_) return std::nullopt;
    return root_->value;
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  std::size_t size() const noexcept { return size_; }

  template <class Fn>
  void for_each_item(Fn&& fn) const {
    std::vector<const Node*> stack;
    if (root_) stack.push_back(root_);
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      fn(n->value);
      for (const Node* c = n->child; c; c = c->sibling) stack.push_back(c);
    }
  }

  std::string check_invariants() const {
    if (root_ && root_->sibling) return "the root has a sibling";
    std::size_t count = 0;
    std::vector<const Node*> stack;
    if (root_) stack.push_back(root_);
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      ++count;
      for (const Node* c = n->child; c; c = c->sibling) {
        if (c->value < n->value) return "heap order: child " + std::to_string(c->value) + " < parent " + std::to_string(n->value);
        stack.push_back(c);
      }
    }
    if (count != size_) return "size " + std::to_string(size_) + " but " + std::to_string(count) + " nodes";
    return {};
  }

  std::size_t memory_bytes() const noexcept { return sizeof(*this) + size_ * sizeof(Node); }

  // Same tree shape with the same values.
  friend bool operator==(const PairingHeap& a, const PairingHeap& b) {
    if (a.size_ != b.size_) return false;
    std::vector<std::pair<const Node*, const Node*>> stack;
    stack.emplace_back(a.root_, b.root_);
    while (!stack.empty()) {
      auto [x, y] = stack.back();
      stack.pop_back();
      if (!x || !y) {
        if (x != y && (x || y)) return false;
        continue;
      }
      if (x->value != y->value) return false;
      stack.emplace_back(x->child, y->child);
      stack.emplace_back(x->sibling, y->sibling);
    }
    return true;
  }

 private:
  struct Node {
    std::uint64_t value;
    Node* child;
    Node* sibling;
  };

  // Melds two roots (each without siblings); the smaller becomes the root, the earlier
  // argument on ties, and the other its leftmost child.
  static Node* meld(Node* a, Node* b) noexcept {
    if (!a) return b;
    if (!b) return a;
    if (b->value < a->value) std::swap(a, b);
    b->sibling = a->child;
    a->child = b;
    return a;
  }

  // Two-pass pairing of a sibling list, iteratively: pass 1 melds neighbours left to right
  // and pushes each pair's root on a reversed list; pass 2 melds that list into one tree
  // (right to left in the original order).
  static Node* merge_pairs(Node* first) noexcept {
    Node* reversed = nullptr;
    while (first) {
      Node* a = first;
      Node* b = a->sibling;
      first = b ? b->sibling : nullptr;
      a->sibling = nullptr;
      if (b) b->sibling = nullptr;
      Node* pair = meld(a, b);
      pair->sibling = reversed;
      reversed = pair;
    }
    Node* result = nullptr;
    while (reversed) {
      Node* next = reversed->sibling;
      reversed->sibling = nullptr;
      result = meld(reversed, result);
      reversed = next;
    }
    return result;
  }

  Node* root_ = nullptr;
  std::size_t size_ = 0;
};

static_assert(SequentialStructure<PairingHeap> && QuiescentlyCheckable<PairingHeap>);

}  // namespace cdsb::seq
