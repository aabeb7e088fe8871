// Small checks the scripted tests of the queues and stacks share (architecture.md §5, "Scripted
// interleavings"), as keys_of is the sets'. Only for the scripted test binary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cdsb::testing {

// The items of a queue (front to back) or a stack (bottom to top) as "{1 2 3}"; quiescent, or
// every actor parked or finished.
template <class Container>
std::string items_of(const Container& c) {
  std::string s = "{";
  c.for_each_item([&](std::uint64_t v) {
    if (s.size() > 1) s += ' ';
    s += std::to_string(v);
  });
  return s += '}';
}

// An operation's optional result, for messages.
inline std::string show(std::optional<std::uint64_t> v) { return v ? std::to_string(*v) : "nothing"; }

}  // namespace cdsb::testing
