// The concurrent AVL tree of Bronson et al. with every reclaimer it supports and every
// allocation policy (its own translation unit: the variants take long to compile).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/bronson_avl.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using Bronson = BronsonAvl<R>;
}  // namespace

void add_bronson_avl(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<Bronson, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "bronson_avl",
                               "Bronson-Casper-Chafi-Olukotun relaxed-balance AVL tree (PPoPP 2010): versions and "
                               "optimistic searches, per-node locks, routing nodes; restarts from the root"));
}

}  // namespace cdsb::bench
