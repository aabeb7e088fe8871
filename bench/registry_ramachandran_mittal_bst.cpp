// The Ramachandran-Mittal internal tree with every reclaimer it supports and every allocation
// policy (its own translation unit: the variants take long to compile).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/ramachandran_mittal.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using RmBst = RamachandranMittalBst<R>;
}  // namespace

void add_ramachandran_mittal_bst(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<RmBst, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "ramachandran_mittal_bst",
                               "Ramachandran-Mittal lock-free internal BST (ICDCN 2015): edge flags, "
                               "successor keys copied up, no descriptors"));
}

}  // namespace cdsb::bench
