// What a trial is given and what it returns: the types the command line, lincheck and the
// registry's entries share, without the trial's templates (bench/harness/trial.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/harness/config.hpp"
#include "cdsbench/platform/topology.hpp"

namespace cdsb::bench {

using Json = nlohmann::ordered_json;

// Everything a trial needs besides its workload.
struct TrialContext {
  const Config& config;
  const Topology& topology;
  const std::vector<int>& thread_cpus;  // os index per thread; -1 = not pinned
  int trial = 0;
  std::uint64_t trial_seed = 0;
  bool last_in_process = false;  // nothing runs after it but the report (run_owned_trial)
};

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool built_with_sanitizer = true;
#else
inline constexpr bool built_with_sanitizer = false;
#endif

enum class TrialStatus { ok, validation_failed, prefill_timeout };

struct TrialOutcome {
  TrialStatus status = TrialStatus::ok;
  Json report;
};

}  // namespace cdsb::bench
