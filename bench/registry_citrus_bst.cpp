// Citrus (Arbel & Attiya) with every reclaimer it supports and every allocation policy (its
// own translation unit: the variants take long to compile).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/citrus.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using Citrus = CitrusBst<R>;
}  // namespace

void add_citrus_bst(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<Citrus, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "citrus_bst",
                               "Arbel-Attiya Citrus internal BST (PODC 2014): RCU searches, per-node locks, "
                               "grace period before a moved successor is unlinked"));
}

}  // namespace cdsb::bench
