// Named interleaving points and mutation hooks, for scripted tests (architecture.md §5,
// "Scripted interleavings").
//
//   CDSB_INTERLEAVE("hp.protect.loaded");  // a state the algorithm's correctness argument names
//
// marks a place inside an operation where a scripted test may park the calling thread, let
// other threads act, and release it: the interleavings a correctness argument rests on then
// happen on every run instead of when the scheduler is unlucky. Names read
// "<scheme or structure>.<operation>.<state reached>" and are string literals.
//
//   if (again == v || CDSB_MUTANT("hp.skip_recheck")) return v;
//
// is a mutation hook: a seeded bug, as short as the bug, at the line it changes, that a scripted
// test switches on to prove its scenario catches that bug.
//
// Both exist only where CDSBENCH_SCRIPTED is defined, which the scripted test binary alone does
// (tests/CMakeLists.txt). Everywhere else, the harness and the registry included, the point is
// ((void)0) and the mutant `false`: no code, no load, no branch. In a scripted build a point
// is one acquire load of the hook, a call only while a test's scheduler (tests/support/
// script.hpp) is installed, and that scheduler leaves every thread it does not target running.
#pragma once

#if defined(CDSBENCH_SCRIPTED)

#include <atomic>
#include <cstring>

namespace cdsb::interleave {

using Hook = void (*)(const char* point);

// Installed by a test's scheduler while it runs. acquire: pairs with the installer's release,
// so the scheduler's state is visible to a thread that calls it.
inline std::atomic<Hook> hook{nullptr};

// The seeded bug a test switched on, or null. Set before the test starts its threads.
inline std::atomic<const char*> mutant{nullptr};

inline void reach(const char* point) {
  if (const Hook h = hook.load(std::memory_order_acquire)) h(point);
}

inline bool mutant_is(const char* name) {
  const char* m = mutant.load(std::memory_order_acquire);
  return m != nullptr && std::strcmp(m, name) == 0;
}

}  // namespace cdsb::interleave

#define CDSB_INTERLEAVE(point) ::cdsb::interleave::reach(point)
#define CDSB_MUTANT(name) ::cdsb::interleave::mutant_is(name)

#else

#define CDSB_INTERLEAVE(point) ((void)0)
#define CDSB_MUTANT(name) false

#endif
