// Small checks the scripted tests of the structures share (architecture.md §5, "Scripted
// interleavings"). Only for the scripted test binary.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include "cdsbench/platform/user_stats.hpp"
#include "support/script.hpp"
#include "support/stats_figures.hpp"

namespace cdsb::testing {

// The keys of a set, in order, as "{1 2 3}" (quiescent, or every actor parked or finished).
template <class Set>
std::string keys_of(const Set& set) {
  // Appended piece by piece: GCC 12 warns -Wrestrict (wrongly) on "literal" + string here once
  // a map's for_each_key is inlined.
  std::string s = "{";
  set.for_each_key([&](std::uint64_t k) {
    if (s.size() > 1) s += ' ';
    s += std::to_string(k);
  });
  return s += '}';
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

// The scenario every lock-free structure's pending state is scripted with: `parked` runs as
// actor 1 (tid 1) until it reaches `point` (its pending state published) and parks there;
// `probe` checks the structure meanwhile from the test's thread; `helper` runs as actor 2
// (tid 2) and must finish while actor 1 is still parked, having helped the pending state to
// its end (else `not_helped` is the problem); `check_helped` checks what it left. Then actor 1
// is released and both are joined. Each check returns "" or the problem, which ends the
// scenario at once (the Script's destructor releases and joins). The caller checks the parked
// operation's result and the final contents after it returns "".
template <class Parked, class Probe, class Helper, class CheckHelped>
std::string helped_while_parked(const std::string& point, Parked&& parked, Probe&& probe, Helper&& helper,
                                const std::string& not_helped, CheckHelped&& check_helped) {
  std::atomic<bool> done{false};
  Script script;
  const auto at = script.park_at(point, 1);
  script.spawn(1, std::forward<Parked>(parked));
  script.wait_parked(at);
  if (std::string bad = probe(); !bad.empty()) return bad;
  script.spawn(2, [&] {
    helper();
    done.store(true, std::memory_order_release);  // pairs with becomes_true's acquire
  });
  if (!becomes_true(done)) return not_helped;
  if (std::string bad = check_helped(); !bad.empty()) return bad;
  script.release(at);
  script.join(1);
  script.join(2);
  return "";
}

}  // namespace cdsb::testing
