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

// The CPU (os index) of each thread, update threads first; -1 = not pinned. Adds warnings
// for oversubscription; throws std::invalid_argument (a usage error) for a CPU that this
// process may not use or a list shorter than the thread count.
std::vector<int> plan_thread_cpus(const Config& config, const Topology& topology,
                                  std::vector<std::string>& warnings);

}  // namespace cdsb::bench
