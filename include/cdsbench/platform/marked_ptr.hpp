// A pointer with mark bits in its low (alignment) bits, one machine word, so that
// std::atomic<MarkedPtr<T>> is lock-free and one CAS can change pointer and mark together
// (Harris 2001: marking a node's next pointer freezes it and logically deletes the node).
#pragma once

#include <cstdint>

namespace cdsb {

template <class T, int MarkBits = 1>
class MarkedPtr {
 public:
  static constexpr std::uintptr_t mark_mask = (std::uintptr_t{1} << MarkBits) - 1;

  constexpr MarkedPtr() noexcept = default;
  MarkedPtr(T* p, std::uintptr_t mark = 0) noexcept  // NOLINT: a plain pointer is an unmarked one
      : bits_(reinterpret_cast<std::uintptr_t>(p) | mark) {
    // Here, not at class scope: T may still be incomplete where MarkedPtr<T> is named.
    static_assert(MarkBits >= 1 && (std::uintptr_t{1} << MarkBits) <= alignof(T),
                  "the mark bits must fit in the pointee's alignment");
  }

  T* get() const noexcept { return reinterpret_cast<T*>(bits_ & ~mark_mask); }
  std::uintptr_t mark() const noexcept { return bits_ & mark_mask; }
  bool marked() const noexcept { return (bits_ & mark_mask) != 0; }
  MarkedPtr unmarked() const noexcept { return MarkedPtr(get()); }
  MarkedPtr with_mark(std::uintptr_t mark) const noexcept { return MarkedPtr(get(), mark); }
  T* operator->() const noexcept { return get(); }

  friend bool operator==(MarkedPtr a, MarkedPtr b) noexcept { return a.bits_ == b.bits_; }

 private:
  std::uintptr_t bits_ = 0;
};

// The address a reclaimer protects: the pointer without its marks.
template <class T>
T* address_of(T* p) noexcept {
  return p;
}
template <class T, int B>
T* address_of(MarkedPtr<T, B> p) noexcept {
  return p.get();
}

}  // namespace cdsb
