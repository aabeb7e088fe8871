// Builds a structure for n threads, passing the reclamation options and the expected number
// of keys to those that take them; a queue inside the PipelineQueue that adds the
// producers-done protocol where the queue has none.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include "cdsbench/queue/pipeline_queue.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "cdsbench/set/concepts.hpp"

namespace cdsb::bench {

template <class S>
std::unique_ptr<S> make_structure(int threads, bool reclaim_eager, std::uint64_t expected_keys = 0) {
  const reclaim::ReclaimOptions options{reclaim_eager};
  const SizeHint size{expected_keys};
  if constexpr (std::is_constructible_v<S, int, reclaim::ReclaimOptions, SizeHint>)
    return std::make_unique<S>(threads, options, size);
  else if constexpr (std::is_constructible_v<S, int, reclaim::ReclaimOptions>)
    return std::make_unique<S>(threads, options);
  else if constexpr (std::is_constructible_v<S, int, SizeHint>)
    return std::make_unique<S>(threads, size);
  else
    return std::make_unique<S>(threads);
}

template <ConcurrentQueue Q>
std::unique_ptr<PipelineQueue<Q>> make_pipeline_queue(int threads, bool reclaim_eager) {
  if constexpr (std::is_constructible_v<Q, int, reclaim::ReclaimOptions>)
    return std::make_unique<PipelineQueue<Q>>(threads, reclaim::ReclaimOptions{reclaim_eager});
  else
    return std::make_unique<PipelineQueue<Q>>(threads);
}

}  // namespace cdsb::bench
