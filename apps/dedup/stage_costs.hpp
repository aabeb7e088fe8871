// Each stage's own throughput, measured alone on a sample of the input, and from them the
// pipeline's bound on this machine: what the run's efficiency is measured against.
//
// The parallel stages (refine's chunking, dedup's SHA-1, compress) run on P threads at once,
// P the CPUs the process may use, each thread over the whole sample: the per-core throughput
// is then what a core gives while the others are busy too (on two vCPUs, SHA-1 on both gives
// 1.25-1.41x one, not 2x). The serial stages (the fragmenter's coarse scan, the writer's
// records) run on one thread. With u the share of the input's bytes that are unique (only they
// are compressed) and r_s each stage's per-core throughput, one byte costs
//   c = 1/r_fragment + 1/r_chunk + 1/r_hash + u/r_compress + 1/r_write  core-seconds,
// and the bound is the least of P / c (the cores' capacity), r_fragment and r_write (the
// serial stages), and N r_s for each middle stage (its N threads): bytes of input per second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "apps/dedup/pipeline.hpp"

namespace cdsb::dedup {

struct StageCosts {
  int cpus = 1;                  // P
  std::uint64_t sample_bytes = 0;
  // Bytes of input per second per core.
  double fragment = 0, chunk = 0, hash = 0, compress = 0, write = 0;

  // The bound for threads_per_stage N and unique share u, bytes of input per second.
  double bound(int threads_per_stage, double unique_share) const;
};

// Measures on `sample` (the input's first bytes, whole fragments of it) with the run's
// chunker, codec and level.
StageCosts measure_stage_costs(std::span<const std::uint8_t> sample, const EncodeSettings& settings, int cpus);

}  // namespace cdsb::dedup
