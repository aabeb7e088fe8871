// Cache-line size and padding.
//
// Padding is for per-thread state that other threads never touch on the hot path (counters,
// generator state), where false sharing would otherwise couple threads. Structure nodes are
// *not* padded: the BST study found blanket padding costs more in cache footprint than it
// saves (pitfall P9).
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace cdsb {

// 64 bytes on every x86-64 and most AArch64 parts; adjacent-line prefetch makes 128 the
// destructive-interference distance on Intel, so padding uses 128.
inline constexpr std::size_t cache_line_size = 64;
inline constexpr std::size_t false_sharing_range = 128;

// T alone on its own false-sharing range.
template <class T>
struct alignas(false_sharing_range) Padded {
  T value{};

  Padded() = default;
  template <class... Args>
  explicit Padded(Args&&... args) : value(std::forward<Args>(args)...) {}

  T& operator*() noexcept { return value; }
  const T& operator*() const noexcept { return value; }
  T* operator->() noexcept { return &value; }
  const T* operator->() const noexcept { return &value; }
};

}  // namespace cdsb
