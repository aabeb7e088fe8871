// A sequentially consistent fence, also in ThreadSanitizer builds.
//
// The fences of the reclaimers (reclaim/) only supply store-load order: the single total
// order that makes "either the scan sees the reservation, or the reader sees the unlink"
// true. The happens-before edges that TSan checks come from acquire/release operations
// beside them (a reader's release when it leaves, a scanner's acquire loads), which TSan
// does see. So TSan builds keep the real fence and only its "not supported" warning is
// silenced: replacing it by an RMW on a shared word would add happens-before edges between
// all threads that fence, which the real build does not have, and could hide real races.
#pragma once

#include <atomic>

namespace cdsb {

inline void seq_cst_fence() noexcept {
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
  std::atomic_thread_fence(std::memory_order_seq_cst);
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

}  // namespace cdsb
