// The Harris-Michael list with every reclaimer and every allocation policy.
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/list/harris_michael.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using HmList = HarrisMichaelList<R>;
}  // namespace

void add_harris_michael_list(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(
      variant_matrix<HmList, ReclaimerList<EpochBased, HazardPointers, IntervalBased, NoReclaim>, AllocationPolicies>{},
      "harris_michael_list", "Harris-Michael lock-free sorted linked list (Michael's find, SPAA 2002)"));
}

}  // namespace cdsb::bench
