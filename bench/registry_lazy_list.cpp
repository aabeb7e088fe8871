// The lazy list with every reclaimer it supports and every allocation policy (its own
// translation unit: the variants take long to compile, and two build in parallel).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/list/lazy.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using Lazy = LazyList<R>;
}  // namespace

void add_lazy_list(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<Lazy, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "lazy_list", "lazy list of Heller et al. (OPODIS 2005): per-node spin locks, wait-free contains"));
}

}  // namespace cdsb::bench
