// The black-box structures (Node Replication and its baselines) over the stack and the
// synthetic buffer, and the entry point that adds every black-box structure.
#include "bench/blackbox_structure.hpp"

namespace cdsb::bench {

void add_blackbox_structures(Registry& r) {
  add_blackbox_queues(r);
  add_blackbox_keyed(r);
  add_blackbox_methods<seq::Stack>(r, "stack", "sequential stack");
  add_blackbox_lock_free(r);
  add_blackbox_methods<seq::Synthetic>(
      r, "synthetic", "the paper's synthetic buffer (n = key range entries, 8 touched per operation + a hot one)");
}

}  // namespace cdsb::bench
