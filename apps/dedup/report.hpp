// What an encoding run measured, through the measurement core (bench/core/report.hpp): one
// ordered JSON document (--json FILE) whose scalars are also the key=value lines (--stats);
// docs/dedup.md names every key.
#pragma once

#include <optional>
#include <string>

#include "apps/dedup/pipeline.hpp"
#include "apps/dedup/stage_costs.hpp"
#include "bench/core/report.hpp"

namespace cdsb::dedup {

// The run's choices, as the command line named them.
struct RunChoices {
  std::string input, map, hash, queue;
  PipelineSettings settings;
};

// {"config", "machine", "warnings", "trials": [the run's figures], "summary"}, the harness's
// shape: costs, when measured, add the stages' own throughputs and the pipeline's bound to the
// figures; otherwise those keys read `missing_costs` ("none": not asked for; "unavailable": no
// sample to measure on). The figures' `utilisation` holds each thread's CPU over time.
bench::Json encode_report(const RunChoices& choices, const PipelineFigures& figures, const bench::MemoryPhases& memory,
                          const std::optional<StageCosts>& costs, const char* missing_costs, int cpus);

}  // namespace cdsb::dedup
