// Seeding of per-thread generators (pitfall P2: threads seeded alike repeat each other's keys).
//
// A run has one master seed (printed, so the run can be repeated); thread `tid` seeds its
// generator with the tid-th output of a splitmix64 stream started at the master seed.
#pragma once

#include <cstdint>
#include <random>

#include "cdsbench/random/generators.hpp"

namespace cdsb {

// The tid-th output (tid 0 is the first) of SplitMix64(master_seed), computed in O(1).
// Distinct tids give distinct seeds: the states master + (tid+1)*gamma differ (gamma is odd)
// and the output function is a bijection; the mixing keeps nearby tids' seeds unrelated.
// A negative tid indexes the stream before its start (tid -1 gives mix(master)): a seed
// for a non-thread purpose, such as the key scrambling, distinct from every thread's.
constexpr std::uint64_t thread_seed(std::uint64_t master_seed, int tid) noexcept {
  SplitMix64 stream(master_seed + static_cast<std::uint64_t>(tid) * detail::splitmix64_gamma);
  return stream.next();
}

// 64 bits of OS entropy; std::random_device yields 32 bits per call.
inline std::uint64_t draw_master_seed() {
  std::random_device device;
  const std::uint64_t high = device();
  const std::uint64_t low = device();
  return (high << 32) | (low & 0xffffffffULL);
}

}  // namespace cdsb
