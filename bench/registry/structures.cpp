// Our sets, maps, queues and stacks, one registration line each, in the order --list shows them (then
// peers.cpp's, then black_box.cpp's). To add a structure: include its header and add its
// line (bench/registry/register.hpp says what a line may call). This file is compiled once
// per shard (bench/CMakeLists.txt); each line is instantiated in one shard only.
#include "bench/registry/null_set.hpp"
#include "bench/registry/register.hpp"
#include "cdsbench/set/bst/bronson_avl.hpp"
#include "cdsbench/set/bst/bst_tk.hpp"
#include "cdsbench/set/bst/citrus.hpp"
#include "cdsbench/set/bst/drachsler.hpp"
#include "cdsbench/set/bst/ellen.hpp"
#include "cdsbench/set/bst/howley_jones.hpp"
#include "cdsbench/set/bst/natarajan_mittal.hpp"
#include "cdsbench/set/bst/ramachandran_mittal.hpp"
#include "cdsbench/set/hash/dedup_chaining_map.hpp"
#include "cdsbench/set/hash/feldman_wait_free_map.hpp"
#include "cdsbench/set/hash/michael_hash_map.hpp"
#include "cdsbench/set/hash/seqlock_probe_map.hpp"
#include "cdsbench/set/hash/split_ordered_map.hpp"
#include "cdsbench/set/list/harris_michael.hpp"
#include "cdsbench/set/list/lazy.hpp"
#include "cdsbench/set/locked_std_set.hpp"
#include "cdsbench/queue/batch_queue.hpp"
#include "cdsbench/queue/elimination_stack.hpp"
#include "cdsbench/queue/lcrq.hpp"
#include "cdsbench/queue/locked_ring_queue.hpp"
#include "cdsbench/queue/michael_scott_queue.hpp"
#include "cdsbench/queue/treiber_stack.hpp"
#include "cdsbench/queue/wait_free_queue.hpp"

namespace cdsb::bench {
namespace {
// Structures with more template parameters than the reclaimer, as templates of it alone.
template <class R> using Drachsler = DrachslerBst<R>;
template <class R> using RamachandranMittal = RamachandranMittalBst<R>;
template <class R> using MichaelMap = MichaelHashMap<R>;
template <class R> using SplitOrdered = SplitOrderedMap<R>;
template <class R> using FeldmanWaitFree = FeldmanWaitFreeMap<R>;
template <class R> using SeqlockProbe = SeqlockProbeMap<R>;
template <class R> using MichaelScott = MichaelScottQueue<R>;
template <class R> using LcrqQueue = Lcrq<R>;
template <class R> using TreiberLifo = StackAsQueue<TreiberStack<R>>;
template <class R> using EliminationLifo = StackAsQueue<EliminationStack<R>>;
// The maps with other keys and a named hash (digest_keyed, byte_keyed), through their default variant.
template <class K, class H> using DedupChainingDigest = DedupChainingMap<K, std::uint64_t, H>;
template <class K, class H> using MichaelDigest = MichaelHashMap<reclaim::EpochBased<>, K, std::uint64_t, H>;
template <class K, class H> using SplitOrderedDigest = SplitOrderedMap<reclaim::EpochBased<>, K, std::uint64_t, H>;
template <class K, class H> using FeldmanWaitFreeDigest = FeldmanWaitFreeMap<reclaim::EpochBased<>, K, std::uint64_t, H>;
template <class K, class H> using SeqlockProbeBytes = SeqlockProbeMap<reclaim::EpochBased<>, K, H>;
}  // namespace

using enum StructureKind;
using namespace reclaim;

template <int Shard>
void add_structures(RegistryShard& shard) {
  constexpr int shards = structure_shards;
  // ---- harness baselines --------------------------------------------------------------------
  CDSB_REGISTER(set_structure<variant_matrix<NullSet, ReclaimerList<NoReclaim, EpochBased, HazardPointers, IntervalBased>,
                                             AllocatorList<SystemAllocator>>>(
      {.name = "null", .kind = ordered_set,
       .description = "a set that does nothing: measures the harness itself (and, with a reclaimer, the cost of one "
                      "empty guarded operation)"}));
  CDSB_REGISTER(set_structure<LockedStdSet<SpinLock>>(
      {.name = "locked_std_set", .kind = ordered_set, .description = "std::map behind one TTAS spin lock (coarse-grained baseline)"}));
  CDSB_REGISTER(set_structure<LockedStdSet<RwSpinLock>>(
      {.name = "rwlocked_std_set", .kind = ordered_set,
       .description = "std::map behind one writer-preferring readers-writer spin lock"}));

  // ---- lists --------------------------------------------------------------------------------
  CDSB_REGISTER(set_structure<variant_matrix<HarrisMichaelList, AllReclaimers, AllocationPolicies>>(
      {.name = "harris_michael_list", .kind = ordered_set,
       .description = "Harris-Michael lock-free sorted linked list (Michael's find, SPAA 2002)"}));
  CDSB_REGISTER(set_structure<variant_matrix<LazyList, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "lazy_list", .kind = ordered_set,
       .description = "lazy list of Heller et al. (OPODIS 2005): per-node spin locks, wait-free contains"}));

  // ---- binary search trees ------------------------------------------------------------------
  CDSB_REGISTER(set_structure<variant_matrix<NatarajanMittalBst, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "natarajan_mittal_bst", .kind = ordered_set,
       .description = "Natarajan-Mittal lock-free external BST (PPoPP 2014): edge flags and tags"}));
  CDSB_REGISTER(set_structure<variant_matrix<EllenBst, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "ellen_bst", .kind = ordered_set,
       .description = "Ellen-Fatourou-Ruppert-van Breugel lock-free external BST (PODC 2010): Info records, flags and marks"}));
  CDSB_REGISTER(set_structure<variant_matrix<BstTk, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "bst_tk", .kind = ordered_set,
       .description = "BST-TK of David-Guerraoui-Trigonakis (ASPLOS 2015): external BST, versioned ticket locks per edge, "
                      "lock-free searches"}));
  CDSB_REGISTER(set_structure<variant_matrix<HowleyJonesBst, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "howley_jones_bst", .kind = ordered_set, .description = "Howley-Jones lock-free internal BST (SPAA 2012): op words, ChildCAS and Relocate descriptors, helping"}));
  CDSB_REGISTER(set_structure<variant_matrix<RamachandranMittal, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "ramachandran_mittal_bst", .kind = ordered_set, .description = "Ramachandran-Mittal lock-free internal BST (ICDCN 2015): edge flags, successor keys copied up, no descriptors"}));
  CDSB_REGISTER(set_structure<variant_matrix<Drachsler, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "drachsler_bst", .kind = ordered_set, .description = "Drachsler-Vechev-Yahav logical-ordering BST (PPoPP 2014): unbalanced internal tree, per-node succ/tree spin "
                      "locks, lock-free lookups settled along a pred/succ list"}));
  CDSB_REGISTER(set_structure<variant_matrix<CitrusBst, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "citrus_bst", .kind = ordered_set, .description = "Arbel-Attiya Citrus internal BST (PODC 2014): RCU searches, per-node locks, grace period before a moved "
                      "successor is unlinked"}));
  CDSB_REGISTER(set_structure<variant_matrix<BronsonAvl, WholeOperationReclaimers, AllocationPolicies>>(
      {.name = "bronson_avl", .kind = ordered_set, .description = "Bronson-Casper-Chafi-Olukotun relaxed-balance AVL tree (PPoPP 2010): versions and optimistic searches, "
                      "per-node locks, routing nodes; restarts from the root"}));

  // ---- hash maps (set/hash/): run by the set workload with their values --------------------
  CDSB_REGISTER(set_structure<DedupChainingMap<>, digest_and_byte_keyed<DedupChainingDigest>>(
      {.name = "dedup_chaining_map", .kind = unordered_map,
       .description = "PARSEC 3.0 dedup's hash table (the dedup study's baseline): fixed prime bucket count, chaining, "
                      "a mutex per bucket around each operation"}));
  CDSB_REGISTER(set_structure<variant_axes<MichaelMap, AllReclaimers, AllocationPolicies>, digest_and_byte_keyed<MichaelDigest>>(
      {.name = "michael_hash_map", .kind = unordered_map,
       .description = "Michael's lock-free hash map (SPAA 2002): a fixed power-of-two array of Harris-Michael lists"}));
  CDSB_REGISTER(set_structure<variant_axes<SplitOrdered, AllReclaimers, AllocationPolicies>, digest_and_byte_keyed<SplitOrderedDigest>>(
      {.name = "split_ordered_map", .kind = unordered_map,
       .description = "Shalev-Shavit split-ordered lists (PODC 2003): one lock-free list in bit-reversed hash order, "
                      "buckets as sentinels into it; resizable without moving items"}));
  CDSB_REGISTER(set_structure<variant_axes<FeldmanWaitFree, WholeOperationReclaimers, AllocationPolicies>,
                              digest_and_byte_keyed<FeldmanWaitFreeDigest>>(
      {.name = "feldman_wait_free_map", .kind = unordered_map,
       .description = "Feldman-LaBorde-Dechev wait-free hash map (SAMOS 2013, IJPP 2017): a tree of arrays indexed by "
                      "the key's hash then its own bits; fail counters, frozen slots expanded; every operation bounded (byte-string "
                      "keys: overflow chains at the deepest level, lock-free)"}));
  // Its allocation policy serves only its table headers (the buckets are one array): no allocator axis.
  CDSB_REGISTER(set_structure<variant_matrix<SeqlockProbe, WholeOperationReclaimers, AllocatorList<SystemAllocator>>,
                              byte_keyed<SeqlockProbeBytes>>(
      {.name = "seqlock_probe_map", .kind = unordered_map,
       .description = "ours, built to be the fastest: open addressing over 64-byte buckets of 3 inline entries, finds "
                      "validated by a per-bucket seqlock (they write nothing), updates under bucket locks, doubling "
                      "under all locks"}));

  // ---- queues (queue/): run by the queue workload ---------------------------------------------
  CDSB_REGISTER(queue_structure<LockedRingQueue>(
      {.name = "locked_ring_queue", .kind = queue,
       .description = "PARSEC 3.0 dedup's queue (the dedup study's baseline): a bounded ring under one mutex, two condition "
                      "variables, batch operations, producers-done termination"}));
  CDSB_REGISTER(queue_structure<variant_axes<MichaelScott, AllReclaimers, AllocationPolicies>>(
      {.name = "michael_scott_queue", .kind = queue,
       .description = "Michael-Scott lock-free queue (PODC 1996): a linked list with a dummy head, CAS on the last link and on head"}));
  // Backoff changes the retry loop, not the reclamation: the default variant only.
  CDSB_REGISTER(queue_structure<MichaelScottQueueBackoff<EpochBased<SystemAllocator>>>(
      {.name = "michael_scott_queue_backoff", .kind = queue,
       .description = "Michael-Scott queue with bounded exponential backoff after a failed CAS (the paper's measured variant)"}));
  // A segment is allocated per batch and freed by whoever dequeues it, often another thread:
  // the per-thread lists of the pool (which hand freed segments back in batches) are its default
  // allocator; with the system allocator that allocation was half of its time in split mode.
  using PoolFirst = AllocatorList<PoolAllocator<SystemAllocator>, SystemAllocator, SegregatedAllocator,
                                  PoolAllocator<SegregatedAllocator>>;
  CDSB_REGISTER(queue_structure<variant_axes<BatchQueue, WholeOperationReclaimers, PoolFirst>>(
      {.name = "batch_queue", .kind = queue,
       .description = "ours, for the dedup study's question: a Michael-Scott list of item arrays; a batch is one "
                      "linearizable operation, one CAS to link it, one double-width CAS to take one"}));
  // A ring (64 KiB) is allocated once per 4,096 items in flight: no allocator axis.
  CDSB_REGISTER(queue_structure<variant_matrix<LcrqQueue, AllReclaimers, AllocatorList<SystemAllocator>>>(
      {.name = "lcrq", .kind = queue,
       .description = "Morrison-Afek LCRQ (PPoPP 2013): a list of rings of 4,096 cells, fetch-and-add tickets, "
                      "double-width CAS per cell (cmpxchg16b)"}));

  // Its own reclamation (a floor per operation): no reclaimer axis; segments of 1,024 cells: no allocator axis.
  CDSB_REGISTER(queue_structure<WaitFreeQueue<>>(
      {.name = "wait_free_queue", .kind = queue,
       .description = "Yang-Mellor-Crummey wait-free queue (PPoPP 2016): fetch-and-add on an array of cells in 1,024-cell "
                      "segments, a slow path whose requests every thread helps"}));

  // ---- stacks (queue/): the queue workload in LIFO mode --------------------------------------
  CDSB_REGISTER(queue_structure<variant_axes<TreiberLifo, AllReclaimers, AllocationPolicies>>(
      {.name = "treiber_stack", .kind = stack,
       .description = "Treiber's lock-free stack (IBM RJ 5118, 1986): a linked list, one CAS on the top to push or pop"}));
  CDSB_REGISTER(queue_structure<variant_axes<EliminationLifo, AllReclaimers, AllocationPolicies>>(
      {.name = "elimination_stack", .kind = stack,
       .description = "Hendler-Shavit-Yerushalmi elimination-backoff stack (SPAA 2004): Treiber's stack whose push and "
                      "pop, after a failed CAS, meet in a collision array and cancel out"}));
}

template void add_structures<CDSBENCH_REGISTRY_SHARD>(RegistryShard&);

}  // namespace cdsb::bench
