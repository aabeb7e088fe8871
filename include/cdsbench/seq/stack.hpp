// A sequential LIFO stack of 64-bit items on a contiguous array: the stack of Calciu et al.'s
// evaluation (ASPLOS 2017), handed to NR and the other black-box constructions. push and
// pop O(1) amortized; top reads without changing anything. Deterministic (the array grows
// the same way for the same operations), so NR's replicas stay equal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/seq/answer.hpp"

namespace cdsb::seq {

class Stack {
 public:
  enum class Code : std::uint8_t { push, pop, top };
  struct Op {
    Code code = Code::top;
    std::uint64_t value = 0;  // push only
  };
  // push: ok; pop / top: ok and the top item, or !ok when empty.
  using Result = Answer;

  static bool is_read_only(const Op& op) noexcept { return op.code == Code::top; }

  Result execute(const Op& op) {
    switch (op.code) {
      case Code::push:
        items_.push_back(op.value);
        return {true, op.value};
      case Code::pop: {
        if (items_.empty()) return {false, 0};
        const std::uint64_t v = items_.back();
        items_.pop_back();
        return {true, v};
      }
      default:
        return top();
    }
  }

  Answer top() const noexcept {
    if (items_.empty()) return {false, 0};
    return {true, items_.back()};
  }

  // ---- quiescent helpers -------------------------------------------------------------------
  std::size_t size() const noexcept { return items_.size(); }
  template <class Fn>  // bottom to top
  void for_each_item(Fn&& fn) const {
    for (std::uint64_t v : items_) fn(v);
  }
  std::string check_invariants() const { return {}; }  // any sequence is a valid stack
  std::size_t memory_bytes() const noexcept { return sizeof(*this) + items_.capacity() * sizeof(std::uint64_t); }
  friend bool operator==(const Stack& a, const Stack& b) { return a.items_ == b.items_; }

 private:
  std::vector<std::uint64_t> items_;
};

static_assert(SequentialStructure<Stack> && QuiescentlyCheckable<Stack>);

}  // namespace cdsb::seq
