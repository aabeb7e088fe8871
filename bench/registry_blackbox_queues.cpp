// The black-box structures over the two sequential priority queues.
#include "bench/blackbox_structure.hpp"

namespace cdsb::bench {

void add_blackbox_queues(Registry& r) {
  add_blackbox_methods<seq::SkipListPq>(r, "skiplist_pq", "skip-list priority queue");
  add_blackbox_methods<seq::PairingHeap>(r, "pairing_heap", "pairing-heap priority queue");
}

}  // namespace cdsb::bench
