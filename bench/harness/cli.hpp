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

// The registry as data (`--list --json FILE`: docs/output.md), the entries `keep` accepts (all
// without one): the runner and the tests select structures by these fields, never by name.
std::string registry_json_text(const Registry& registry, bool (*keep)(const StructureEntry&) = nullptr);

}  // namespace cdsb::bench
