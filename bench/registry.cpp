#include "bench/registry.hpp"

#include "bench/null_set.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/locked_std_set.hpp"

namespace cdsb::bench {

Registry builtin_registry() {
  using namespace reclaim;
  Registry r;
  r.add(set_structure_variants(variant_matrix<NullSet, ReclaimerList<NoReclaim, EpochBased, HazardPointers, IntervalBased>,
                                              AllocatorList<SystemAllocator>>{},
                               "null",
                               "a set that does nothing: measures the harness itself (and, with a reclaimer, "
                               "the cost of one empty guarded operation)"));
  // Lock-based structures free nodes at once inside their critical section: "immediate".
  r.add(set_structure<LockedStdSet<SpinLock>>(
      "locked_std_set", "std::map behind one TTAS spin lock (coarse-grained baseline)",
      {"immediate"}, {"system"}));
  r.add(set_structure<LockedStdSet<RwSpinLock>>(
      "rwlocked_std_set", "std::map behind one writer-preferring readers-writer spin lock",
      {"immediate"}, {"system"}));
  add_harris_michael_list(r);
  add_lazy_list(r);
  add_natarajan_mittal_bst(r);
  add_ellen_bst(r);
  add_bst_tk(r);
  add_howley_jones_bst(r);
  add_ramachandran_mittal_bst(r);
  add_drachsler_bst(r);
  add_citrus_bst(r);
  add_bronson_avl(r);
  add_peer_structures(r);
  add_blackbox_structures(r);
  return r;
}

}  // namespace cdsb::bench
