#include "bench/registry.hpp"

#include "bench/null_set.hpp"
#include "cdsbench/set/locked_std_set.hpp"

namespace cdsb::bench {

Registry builtin_registry() {
  Registry r;
  // Lock-based structures free nodes at once inside their critical section: "immediate".
  r.add(set_structure<NullSet>("null", "a set that does nothing: measures the harness itself",
                               {"none"}, {"system"}));
  r.add(set_structure<LockedStdSet<SpinLock>>(
      "locked_std_set", "std::map behind one TTAS spin lock (coarse-grained baseline)",
      {"immediate"}, {"system"}));
  r.add(set_structure<LockedStdSet<RwSpinLock>>(
      "rwlocked_std_set", "std::map behind one writer-preferring readers-writer spin lock",
      {"immediate"}, {"system"}));
  return r;
}

}  // namespace cdsb::bench
