// `cdsbench-lincheck`: records many small concurrent histories of registered structures
// through the one measured loop (SetWorkload with a HistoryRecorder) and checks them with
// the porcupine-based checker (tools/lincheck, `cdsbench-lincheck-checker`).
#pragma once

#include "bench/registry/registry.hpp"

namespace cdsb::bench {

// Exit status: 0 every history linearizable and valid, 1 a violation, 2 usage error,
// 3 no violation but some history's check timed out.
int run_lincheck(int argc, const char* const* argv, const Registry& registry);

}  // namespace cdsb::bench
