// The harness's entry point, shared by `cdsbench` and the test-only harness binary (which
// passes a registry with deliberately broken structures added).
#pragma once

#include <string>
#include <vector>

#include "bench/harness/config.hpp"
#include "bench/registry/registry.hpp"
#include "cdsbench/platform/topology.hpp"

namespace cdsb::bench {

// Exit status: 0 all trials valid, 1 a trial failed validation or prefill, 2 usage error.
int run_cli(int argc, const char* const* argv, const Registry& registry);

}  // namespace cdsb::bench
