// Node Replication and the black-box baselines (bench/workloads/blackbox/), one registration
// line each (a method line registers a sequential structure under every method), listed last.
#include "bench/registry/register.hpp"
#include "cdsbench/queue/treiber_stack.hpp"

namespace cdsb::bench {
namespace {
template <class R> using LockFreeStack = ConcurrentStackMethod<TreiberStack<R>>;
}  // namespace

using enum StructureKind;
using namespace reclaim;

template <int Shard>
void add_black_box(RegistryShard& shard) {
  constexpr int shards = black_box_shards;
  CDSB_REGISTER(blackbox_methods<seq::SkipListPq>("skiplist_pq", "skip-list priority queue"));
  CDSB_REGISTER(blackbox_methods<seq::PairingHeap>("pairing_heap", "pairing-heap priority queue"));
  CDSB_REGISTER(blackbox_methods<seq::SkipListDict>("skiplist_dict", "skip-list dictionary"));
  CDSB_REGISTER(blackbox_methods<seq::SortedSet>("sorted_set", "Redis 7.0's sorted set (hash table + ranked skip list)"));
  CDSB_REGISTER(blackbox_methods<seq::Stack>("stack", "sequential stack"));
  CDSB_REGISTER(blackbox_structure<variant_matrix<LockFreeStack, AllReclaimers, AllocationPolicies>>(
      {.name = "lf.stack", .kind = black_box,
       .description = "Treiber's lock-free stack (IBM RJ 5118, 1986): the LF baseline beside the black-box stacks",
       .method = "lf", .sequential = "stack"}));
  CDSB_REGISTER(blackbox_methods<seq::Synthetic>(
      "synthetic", "the paper's synthetic buffer (n = key range entries, 8 touched per operation + a hot one)"));
}

template void add_black_box<CDSBENCH_REGISTRY_SHARD>(RegistryShard&);

}  // namespace cdsb::bench
