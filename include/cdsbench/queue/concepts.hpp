// The contracts of queues and stacks (architecture.md §3). Values are uint64_t; thread ids dense
// and passed to every operation.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>

namespace cdsb {

template <class S>
concept ConcurrentStack = requires(S& s, int tid, std::uint64_t v) {
  s.push(tid, v);
  { s.pop(tid) } -> std::same_as<std::optional<std::uint64_t>>;  // nullopt when empty
};

}  // namespace cdsb
