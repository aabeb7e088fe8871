// Quiescent invariant checks that several peers share.
#pragma once

#include <cstdint>
#include <string>

namespace cdsb::bench::peers {

// The library's size() agrees with the items its iteration yields.
template <class Peer>
std::string size_matches_iteration(const Peer& peer, std::uint64_t size) {
  std::uint64_t items = 0;
  peer.for_each_key([&](const auto&) { ++items; });
  if (items != size)
    return "size() is " + std::to_string(size) + " but iteration finds " + std::to_string(items) + " items";
  return {};
}

}  // namespace cdsb::bench::peers
