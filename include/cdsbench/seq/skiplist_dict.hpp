// Skip-list dictionary (Pugh, "Skip Lists: A Probabilistic Alternative to Balanced Trees",
// CACM 1990), sequential and deterministic: the dictionary of Calciu et al.'s evaluation
// (ASPLOS 2017).
//
// A map from 64-bit keys to 64-bit values, keys unique. insert adds a key that is absent
// (an existing key keeps its value), erase removes one, find returns its value. O(log n)
// expected. Tower heights come from the instance's own constant-seeded generator
// (detail/level_generator.hpp), so equal operation sequences give equal lists, tower for
// tower, which Node Replication's replicas require.
//
// Node layout: key and value first (a search reads the key of every node it passes; the
// value is on the same line), then the height and the tower in one allocation (P9).
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

class SkipListDict {
 public:
  enum class Code : std::uint8_t { insert, erase, find };
  struct Op {
    Code code = Code::find;
    std::uint64_t key = 0;
    std::uint64_t value = 0;  // insert only
  };
  // insert: ok iff the key was absent (value = the stored value); erase: ok iff it was
  // present (value = its value); find: ok iff present, and its value.
  using Result = Answer;

  static bool is_read_only(const Op& op) noexcept { return op.code == Code::find; }

  // In the body: make_node counts into bytes_, which is declared (and zeroed) after head_.
  SkipListDict() { head_ = make_node(0, 0, Levels::max_height); }
  SkipListDict(SkipListDict&& other) noexcept
      : levels_(other.levels_), head_(std::exchange(other.head_, nullptr)), in_use_(other.in_use_),
        size_(std::exchange(other.size_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}
  SkipListDict(const SkipListDict&) = delete;
  SkipListDict& operator=(const SkipListDict&) = delete;
  SkipListDict& operator=(SkipListDict&&) = delete;
  ~SkipListDict() {
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
        return insert(op.key, op.value);
      case Code::erase:
        return erase(op.key);
      default: {
        const auto v = find(op.key);
        return {v.has_value(), v.value_or(0)};
      }
    }
  }

  Answer insert(std::uint64_t k, std::uint64_t v) {
    Node* update[Levels::max_height];
    Node* x = search(k, update);
    if (x && x->key == k) return {false, x->value};
    const int h = levels_.next();
    if (h > in_use_) in_use_ = h;
    Node* n = make_node(k, v, h);
    for (int l = 0; l < h; ++l) {
      n->next()[l] = update[l]->next()[l];
      update[l]->next()[l] = n;
    }
    ++size_;
    return {true, v};
  }

  Answer erase(std::uint64_t k) {
    Node* update[Levels::max_height];
    Node* x = search(k, update);
    if (!x || x->key != k) return {false, 0};
    for (int l = 0; l < x->height; ++l) update[l]->next()[l] = x->next()[l];
    const std::uint64_t v = x->value;
    bytes_ -= node_bytes(x->height);
    std::free(x);
    --size_;
    return {true, v};
  }

  // Read-only: writes nothing (several readers may run it at once on one instance).
  std::optional<std::uint64_t> find(std::uint64_t k) const {
    const Node* x = head_;
    for (int l = in_use_ - 1; l >= 0; --l)
      while (x->next()[l] && x->next()[l]->key < k) x = x->next()[l];
    x = x->next()[0];
    if (x && x->key == k) return x->value;
    return std::nullopt;
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  std::size_t size() const noexcept { return size_; }
  template <class Fn>  // fn(key, value), keys ascending
  void for_each_item(Fn&& fn) const {
    for (const Node* n = head_->next()[0]; n; n = n->next()[0]) fn(n->key, n->value);
  }

  std::string check_invariants() const {
    std::size_t count = 0;
    for (const Node* n = head_->next()[0]; n; n = n->next()[0]) {
      ++count;
      if (n->next()[0] && n->next()[0]->key <= n->key) return "keys not strictly ascending at " + std::to_string(n->key);
    }
    if (count != size_) return "size " + std::to_string(size_) + " but " + std::to_string(count) + " nodes";
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

  friend bool operator==(const SkipListDict& a, const SkipListDict& b) {
    if (a.size_ != b.size_ || a.in_use_ != b.in_use_ || !(a.levels_ == b.levels_)) return false;
    const Node *x = a.head_->next()[0], *y = b.head_->next()[0];
    for (; x && y; x = x->next()[0], y = y->next()[0])
      if (x->key != y->key || x->value != y->value || x->height != y->height) return false;
    return !x && !y;
  }

 private:
  using Levels = detail::LevelGenerator<32, 1>;
  struct Node {
    std::uint64_t key;
    std::uint64_t value;
    int height;
    // The tower: `height` next pointers, allocated right after the node.
    Node** next() noexcept { return reinterpret_cast<Node**>(this + 1); }
    Node* const* next() const noexcept { return reinterpret_cast<Node* const*>(this + 1); }
  };
  static_assert(sizeof(Node) % alignof(Node*) == 0);

  static std::size_t node_bytes(int h) noexcept { return sizeof(Node) + sizeof(Node*) * static_cast<std::size_t>(h); }

  // The first node with key >= k (or null); update[l] = its predecessor on level l.
  Node* search(std::uint64_t k, Node** update) {
    Node* x = head_;
    for (int l = Levels::max_height - 1; l >= in_use_; --l) update[l] = head_;
    for (int l = in_use_ - 1; l >= 0; --l) {
      while (x->next()[l] && x->next()[l]->key < k) x = x->next()[l];
      update[l] = x;
    }
    return x->next()[0];
  }

  Node* make_node(std::uint64_t k, std::uint64_t v, int h) {
    const std::size_t bytes = node_bytes(h);
    void* p = std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    Node* n = static_cast<Node*>(p);
    n->key = k;
    n->value = v;
    n->height = h;
    for (int l = 0; l < h; ++l) n->next()[l] = nullptr;
    bytes_ += bytes;
    return n;
  }

  Levels levels_;
  Node* head_ = nullptr;
  int in_use_ = 1;
  std::size_t size_ = 0;
  std::size_t bytes_ = 0;
};

static_assert(SequentialStructure<SkipListDict> && QuiescentlyCheckable<SkipListDict>);

}  // namespace cdsb::seq
