// The lock-free (LF) black-box baseline: the Treiber stack with every reclaimer and every
// allocation policy (lock-free skip lists join when the skip-list work lands).
#include "bench/blackbox_structure.hpp"
#include "cdsbench/queue/treiber_stack.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"

namespace cdsb::bench {

void add_blackbox_lock_free(Registry& r) {
  using namespace reclaim;
  r.add(blackbox_structure_variants(
      variant_matrix<TreiberStack, ReclaimerList<EpochBased, HazardPointers, IntervalBased, NoReclaim>, AllocationPolicies>{},
      "lf.stack", "Treiber's lock-free stack (IBM RJ 5118, 1986): the LF baseline beside the black-box stacks"));
}

}  // namespace cdsb::bench
