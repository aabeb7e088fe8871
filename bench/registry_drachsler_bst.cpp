// The logical-ordering tree of Drachsler, Vechev & Yahav with every reclaimer it supports and
// every allocation policy (its own translation unit: the variants take long to compile).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/drachsler.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using Drachsler = DrachslerBst<R>;
}  // namespace

void add_drachsler_bst(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<Drachsler, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "drachsler_bst",
                               "Drachsler-Vechev-Yahav logical-ordering BST (PPoPP 2014): unbalanced internal tree, "
                               "per-node succ/tree spin locks, lock-free lookups settled along a pred/succ list"));
}

}  // namespace cdsb::bench
