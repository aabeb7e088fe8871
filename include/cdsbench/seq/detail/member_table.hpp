// The sorted set's member table (seq/sorted_set.hpp): an open-addressing hash table of node
// pointers, linear probing, deletion by backward shift (no tombstones: a probe ends at the first
// empty slot whatever was removed before). Sequential: not thread-safe.
//
// A node carries its member's hash (node->hash, computed once by the caller with the set's
// keyed hash), so growing, shrinking and shifting never hash bytes again, and a probe compares
// the hash before the bytes. Capacity is a power of two (0 while empty, then at least 8); the
// load stays at most 1/2: grown (doubled) by make_room() before an insertion, halved after an
// erase that leaves it under 1/8 (the gap is the hysteresis: no resize back and forth).
// find() never writes, so read-only operations may run it concurrently on one instance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <utility>

namespace cdsb::seq::detail {

template <class Node>
class MemberTable {
 public:
  static constexpr std::size_t npos = ~std::size_t{0};
  static constexpr std::size_t min_capacity = 8;

  MemberTable() = default;
  MemberTable(MemberTable&& other) noexcept
      : slots_(std::move(other.slots_)), capacity_(std::exchange(other.capacity_, 0)), size_(std::exchange(other.size_, 0)) {}
  MemberTable& operator=(MemberTable&&) = delete;

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t memory_bytes() const noexcept { return capacity_ * sizeof(Node*); }
  Node* at(std::size_t slot) const noexcept { return slots_[slot]; }
  std::size_t home(std::uint64_t hash) const noexcept { return static_cast<std::size_t>(hash) & (capacity_ - 1); }

  // The slot holding member's node, or npos.
  std::size_t find(std::string_view member, std::uint64_t hash) const noexcept {
    if (capacity_ == 0) return npos;
    for (std::size_t i = home(hash);; i = (i + 1) & (capacity_ - 1)) {
      const Node* n = slots_[i];
      if (!n) return npos;
      if (n->hash == hash && n->member() == member) return i;
    }
  }

  // Replaces the node in a slot (the same member's new node).
  void set(std::size_t slot, Node* n) noexcept { slots_[slot] = n; }

  // Grows, if needed, so that one insert() fits; the only call that may throw.
  void make_room() {
    if (2 * (size_ + 1) > capacity_) rehash(capacity_ ? 2 * capacity_ : min_capacity);
  }

  // Adds n, whose member is absent, after make_room().
  void insert(Node* n) noexcept {
    std::size_t i = home(n->hash);
    while (slots_[i]) i = (i + 1) & (capacity_ - 1);
    slots_[i] = n;
    ++size_;
  }

  // Empties a slot; shifts back the entries of its probe run that may move, then may shrink.
  void erase_at(std::size_t hole) noexcept {
    const std::size_t mask = capacity_ - 1;
    for (std::size_t j = (hole + 1) & mask; slots_[j]; j = (j + 1) & mask) {
      // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
      const std::size_t h = home(slots_[j]->hash);
      const bool stays = hole < j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = nullptr;
    --size_;
    if (capacity_ > min_capacity && 8 * size_ < capacity_) {
      try {
        rehash(capacity_ / 2);
      } catch (const std::bad_alloc&) {
        // Shrinking only saves memory: keep the larger table.
      }
    }
  }

  // Back to no table at all.
  void clear() noexcept {
    slots_.reset();
    capacity_ = size_ = 0;
  }

  template <class Fn>  // fn(slot, node) for each occupied slot
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (slots_[i]) fn(i, slots_[i]);
  }

 private:
  void rehash(std::size_t capacity) {
    auto slots = std::make_unique<Node*[]>(capacity);  // value-initialized: all null
    const std::size_t mask = capacity - 1;
    // Old slots in order: the new layout is a function of the old one (deterministic).
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (Node* n = slots_[i]) {
        std::size_t j = static_cast<std::size_t>(n->hash) & mask;
        while (slots[j]) j = (j + 1) & mask;
        slots[j] = n;
      }
    }
    slots_ = std::move(slots);
    capacity_ = capacity;
  }

  std::unique_ptr<Node*[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
};

}  // namespace cdsb::seq::detail
