// Builds a structure for n threads, passing the reclamation options to those that take them.
#pragma once

#include <memory>
#include <type_traits>

#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb::bench {

template <class S>
std::unique_ptr<S> make_structure(int threads, bool reclaim_eager) {
  if constexpr (std::is_constructible_v<S, int, reclaim::ReclaimOptions>)
    return std::make_unique<S>(threads, reclaim::ReclaimOptions{reclaim_eager});
  else
    return std::make_unique<S>(threads);
}

}  // namespace cdsb::bench
