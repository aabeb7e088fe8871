// The internal tree of Howley & Jones with every reclaimer it supports and every allocation
// policy (its own translation unit: the variants take long to compile).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/howley_jones.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using HowleyJones = HowleyJonesBst<R>;
}  // namespace

void add_howley_jones_bst(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<HowleyJones, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "howley_jones_bst",
                               "Howley-Jones lock-free internal BST (SPAA 2012): op words, ChildCAS and "
                               "Relocate descriptors, helping"));
}

}  // namespace cdsb::bench
