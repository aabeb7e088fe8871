// Deliberately broken sets, registered only in test builds (the `cdsbench-testing` binary
// and the unit tests): the harness's validation, or lincheck, must catch each one.
#pragma once

#include "bench/registry/registry.hpp"

namespace cdsb::testing {

// The built-in registry plus the broken sets (broken_sets.cpp: what each one gets wrong) and a
// sound set without range queries.
bench::Registry registry_with_broken_sets();

}  // namespace cdsb::testing
