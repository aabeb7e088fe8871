// BST-TK with every reclaimer it supports and every allocation policy (its own translation
// unit: the variants take long to compile).
#include "bench/registry.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/bst/bst_tk.hpp"

namespace cdsb::bench {

namespace {
template <class R>
using Tk = BstTk<R>;
}  // namespace

void add_bst_tk(Registry& r) {
  using namespace reclaim;
  r.add(set_structure_variants(variant_matrix<Tk, ReclaimerList<EpochBased, NoReclaim>, AllocationPolicies>{},
                               "bst_tk",
                               "BST-TK of David-Guerraoui-Trigonakis (ASPLOS 2015): external BST, versioned "
                               "ticket locks per edge, lock-free searches"));
}

}  // namespace cdsb::bench
