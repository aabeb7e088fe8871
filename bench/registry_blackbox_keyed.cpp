// The black-box structures over the skip-list dictionary and the Redis-like sorted set.
#include "bench/blackbox_structure.hpp"

namespace cdsb::bench {

void add_blackbox_keyed(Registry& r) {
  add_blackbox_methods<seq::SkipListDict>(r, "skiplist_dict", "skip-list dictionary");
  add_blackbox_methods<seq::SortedSet>(r, "sorted_set", "Redis-like sorted set (hash table + ranked skip list)");
}

}  // namespace cdsb::bench
