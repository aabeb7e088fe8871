// Small checks the scripted tests of the structures share (architecture.md §5, "Scripted
// interleavings"). Only for the scripted test binary.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "cdsbench/platform/user_stats.hpp"

namespace cdsb::testing {

// The keys of a set, in order, as "{1 2 3}" (quiescent, or every actor parked or finished).
template <class Set>
std::string keys_of(const Set& set) {
  std::string s;
  set.for_each_key([&](std::uint64_t k) { s += (s.empty() ? "" : " ") + std::to_string(k); });
  return "{" + s + "}";
}

// "" when the set holds exactly `keys` (as keys_of prints them) and passes its own invariant
// check; else what is wrong, with `when` (e.g. " while the delete is parked") after "keys {..}"
// or "invariants".
template <class Set>
std::string contents_problem(const Set& set, const std::string& keys, const std::string& when = "") {
  if (const std::string got = keys_of(set); got != keys) return "keys " + got + when;
  if (const std::string bad = set.check_invariants(); !bad.empty()) return "invariants" + when + ": " + bad;
  return "";
}

// A figure of a stats report (~0 when absent).
inline std::uint64_t figure(const StatsReport& r, const std::string& name) {
  for (const auto& [n, v] : r.values)
    if (n == name) return v;
  return ~0ull;
}

// Whether `done` became true within `limit`. For an operation that must finish while another
// is parked (a lock-free one that must help it): one that waits for the parked actor instead
// spins until the script releases it, so the test's thread cannot simply join it.
inline bool becomes_true(const std::atomic<bool>& done, std::chrono::milliseconds limit = std::chrono::milliseconds(300)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  // acquire: pairs with the actor's release store, so what it wrote before may be read.
  while (!done.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace cdsb::testing
