// A figure of a structure's or reclaimer's stats report, by name, for the tests' assertions.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cdsbench/platform/user_stats.hpp"

namespace cdsb::testing {

// The figure called `name`; a report without it is a test failure (and 0).
inline std::uint64_t figure(const StatsReport& r, const std::string& name) {
  for (const auto& [n, v] : r.values)
    if (n == name) return v;
  ADD_FAILURE() << "no figure " << name;
  return 0;
}

}  // namespace cdsb::testing
