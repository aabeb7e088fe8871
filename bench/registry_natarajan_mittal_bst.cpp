// The Natarajan-Mittal tree with every reclaimer it supports and every allocation policy
// (its own translation unit: the variants take long to compile).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/natarajan_mittal.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using NmBst = NatarajanMittalBst<R>;
}  // namespace

void add_natarajan_mittal_bst(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<NmBst, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "natarajan_mittal_bst",
                               "Natarajan-Mittal lock-free external BST (PPoPP 2014): edge flags and tags"));
}

}  // namespace cdsb::bench
