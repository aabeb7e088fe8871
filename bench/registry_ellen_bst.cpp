// The tree of Ellen et al. with every reclaimer it supports and every allocation policy (its
// own translation unit: the variants take long to compile).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/ellen.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using Ellen = EllenBst<R>;
}  // namespace

void add_ellen_bst(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<Ellen, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "ellen_bst",
                               "Ellen-Fatourou-Ruppert-van Breugel lock-free external BST (PODC 2010): "
                               "Info records, flags and marks"));
}

}  // namespace cdsb::bench
