// Every built-in structure, one registration line each, in the order --list shows them.
// To add a structure: include its header and add its line (bench/registry/register.hpp says
// what a line may call). This file is compiled once per registry shard (bench/CMakeLists.txt);
// each line is instantiated in one shard only.
#include "bench/adapters/libcds_maps.hpp"
#include "bench/adapters/libcds_sets.hpp"
#include "bench/adapters/libcuckoo_maps.hpp"
#include "bench/adapters/tbb_sets.hpp"
#include "bench/registry/null_set.hpp"
#include "bench/registry/register.hpp"
#include "cdsbench/queue/treiber_stack.hpp"
#include "cdsbench/set/bst/bronson_avl.hpp"
#include "cdsbench/set/bst/bst_tk.hpp"
#include "cdsbench/set/bst/citrus.hpp"
#include "cdsbench/set/bst/drachsler.hpp"
#include "cdsbench/set/bst/ellen.hpp"
#include "cdsbench/set/bst/howley_jones.hpp"
#include "cdsbench/set/bst/natarajan_mittal.hpp"
#include "cdsbench/set/bst/ramachandran_mittal.hpp"
#include "cdsbench/set/hash/dedup_chaining_map.hpp"
#include "cdsbench/set/hash/michael_hash_map.hpp"
#include "cdsbench/set/hash/split_ordered_map.hpp"
#include "cdsbench/set/list/harris_michael.hpp"
#include "cdsbench/set/list/lazy.hpp"
#include "cdsbench/set/locked_std_set.hpp"

namespace cdsb::bench {
namespace {
// Structures with more template parameters than the reclaimer, as templates of it alone.
template <class R> using Drachsler = DrachslerBst<R>;
template <class R> using RamachandranMittal = RamachandranMittalBst<R>;
template <class R> using MichaelMap = MichaelHashMap<R>;
template <class R> using SplitOrdered = SplitOrderedMap<R>;
template <class R> using LockFreeStack = ConcurrentStackMethod<TreiberStack<R>>;
}  // namespace

using enum StructureKind;
using namespace reclaim;
using namespace peers;

template <int Shard>
void add_structures(RegistryShard& shard) {
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
  CDSB_REGISTER(set_structure<DedupChainingMap<>>(
      {.name = "dedup_chaining_map", .kind = unordered_map,
       .description = "PARSEC 3.0 dedup's hash table (the dedup study's baseline): fixed prime bucket count, chaining, "
                      "a mutex per bucket around each operation"}));
  CDSB_REGISTER(set_structure<variant_axes<MichaelMap, AllReclaimers, AllocationPolicies>>(
      {.name = "michael_hash_map", .kind = unordered_map,
       .description = "Michael's lock-free hash map (SPAA 2002): a fixed power-of-two array of Harris-Michael lists"}));
  CDSB_REGISTER(set_structure<variant_axes<SplitOrdered, AllReclaimers, AllocationPolicies>>(
      {.name = "split_ordered_map", .kind = unordered_map,
       .description = "Shalev-Shavit split-ordered lists (PODC 2003): one lock-free list in bit-reversed hash order, "
                      "buckets as sentinels into it; resizable without moving items"}));

  // ---- peers: other libraries' structures behind our interface (bench/adapters/) -------------
#if !defined(__SANITIZE_THREAD__)
  // Not in the TSan tree: libcds.so is not built with TSan, and the hazard-pointer scan that
  // decides a node may be freed (cds::gc::hp::smr::inplace_scan) runs inside it, as do the
  // RCU's thread records. TSan sees the free but not the hazard-pointer reads that order it
  // after the readers' last access, so it reports reclaimed nodes as races with their readers:
  // e.g. `operator delete` from inplace_scan against an atomic load in EllenBinTree::search,
  // dozens per second with 3 threads on 64 keys, for EllenBinTreeMap (HP and RCU) and
  // SkipListMap alike, in a program using libcds alone. Not a race of ours and not one we can
  // annotate, so the release and ASan trees run these peers and the TSan tree does not (it runs
  // tbb.concurrent_hash_map and libcuckoo.map only).
  CDSB_REGISTER(set_structure<TypeList<LibcdsEllenBst<cds::gc::HP>, LibcdsEllenBst<LibcdsRcu>>>(
      {.name = "libcds.ellen_bst", .kind = ordered_set,
       .description = "libcds 2.3.3 EllenBinTreeMap (Ellen et al., PODC 2010) as shipped: hp = libcds Hazard Pointers "
                      "(9 per thread), rcu = libcds general_buffered user-space RCU",
       .library = "libcds", .layout = LibcdsEllenBst<cds::gc::HP>::layout()}));
  // Found by lincheck, about one history in 25,000 (4 threads, 4 keys, a 2-CPU VM), e.g.
  // thread 1: erase(k) -> false, then contains(k) -> true, while the only other operation on
  // k is thread 0's erase(k) -> true overlapping both, and k was present before: k is seen
  // absent, then present, with no insert. libcds's find_fastpath (intrusive/impl/
  // skip_list.h), which contains() runs, returns a node whose key matches without checking
  // that node's own deletion mark, so it reports a node that an erase has marked (its
  // linearization point; the failed erase saw the mark) but not yet unlinked. The
  // differential and stress tests pass (they cannot see it); lincheck checks it when named.
  CDSB_REGISTER(set_structure<LibcdsSkipListMap>(
      {.name = "libcds.skiplist_map", .kind = ordered_set,
       .description = "libcds 2.3.3 SkipListMap (lock-free skip list) with libcds Hazard Pointers (67 per thread); "
                      "known: its contains is not linearizable",
       .library = "libcds", .layout = LibcdsSkipListMap::layout(),
       .known_violation = "libcds 2.3.3 SkipListMap::contains can return true for a key whose erase has taken effect "
                          "(find_fastpath ignores the found node's deletion mark); see bench/registry/structures.cpp; "
                          "evidence: cdsbench-lincheck --ds libcds.skiplist_map --histories 50000 (about 1 violation "
                          "in 25,000 histories)"}));
  CDSB_REGISTER(set_structure<LibcdsBronsonAvl>(
      {.name = "libcds.bronson_avl", .kind = ordered_set,
       .description = "libcds 2.3.3 BronsonAVLTreeMap (Bronson et al., PPoPP 2010) as shipped, with libcds "
                      "general_buffered user-space RCU",
       .library = "libcds", .layout = LibcdsBronsonAvl::layout()}));
  CDSB_REGISTER(set_structure<LibcdsMichaelHashMap>(
      {.name = "libcds.michael_hash_map", .kind = unordered_map,
       .description = "libcds 2.3.3 MichaelHashMap over MichaelKVList (Michael, SPAA 2002), libcds Hazard Pointers; "
                      "no assign (libcds updates a value in place, unsynchronised with readers)",
       .library = "libcds"}));
  CDSB_REGISTER(set_structure<LibcdsSplitListMap>(
      {.name = "libcds.split_list_map", .kind = unordered_map,
       .description = "libcds 2.3.3 SplitListMap (Shalev & Shavit, PODC 2003) over Michael's list, libcds Hazard "
                      "Pointers; no assign (as libcds.michael_hash_map)",
       .library = "libcds"}));
  CDSB_REGISTER(set_structure<LibcdsFeldmanHashMap>(
      {.name = "libcds.feldman_hash_map", .kind = unordered_map,
       .description = "libcds 2.3.3 FeldmanHashMap (Feldman, LaBorde & Dechev's multi-level arrays; lock-free in "
                      "libcds: no bound on its retries), libcds Hazard Pointers",
       .library = "libcds"}));
  // Not in the TSan tree either: concurrent_map draws node heights from an
  // enumerable_thread_specific, whose per-thread slots oneTBB allocates with its
  // cache_aligned_allocator, i.e. from tbbmalloc (libtbb loads libtbbmalloc.so.2 when it is
  // installed, as scripts/install-deps leaves it). tbbmalloc is not built with TSan and hands
  // memory freed by one thread to another without TSan seeing the free, so TSan reports the new
  // slot's memset against the old owner's writes: the jemalloc case of is_test_variant again.
  // concurrent_hash_map takes all of its memory from our std::allocator and stays.
  CDSB_REGISTER(set_structure<TbbConcurrentMap>(
      {.name = "tbb.concurrent_map", .kind = ordered_set,
       .description = "oneTBB 2021.8 concurrent_map (skip list): concurrent insert and find; its erase (unsafe_erase) "
                      "is not thread-safe, so deletes run only with one thread",
       .library = "oneTBB", .layout = TbbConcurrentMap::layout()}));
#endif
  CDSB_REGISTER(set_structure<TbbConcurrentUnorderedMap>(
      {.name = "tbb.concurrent_unordered_map", .kind = unordered_map,
       .description = "oneTBB 2021.8 concurrent_unordered_map (split-ordered list): concurrent insert and find; its "
                      "erase (unsafe_erase) is not thread-safe, so deletes run only with one thread; no assign",
       .library = "oneTBB"}));
  CDSB_REGISTER(set_structure<TbbConcurrentHashMap>(
      {.name = "tbb.concurrent_hash_map", .kind = unordered_map,
       .description = "oneTBB 2021.8 concurrent_hash_map (unordered; bucket and item readers-writer locks): oneTBB's "
                      "concurrent erase",
       .library = "oneTBB"}));
  CDSB_REGISTER(set_structure<LibcuckooMap>(
      {.name = "libcuckoo.map", .kind = unordered_map,
       .description = "libcuckoo 0.3.1 cuckoohash_map (Li et al., EuroSys 2014): 4-way bucketed cuckoo hashing, striped "
                      "spin locks, doubles under all locks; our even hash",
       .library = "libcuckoo"}));

  // ---- Node Replication and the black-box baselines (bench/workloads/blackbox/) -------------
  CDSB_REGISTER(blackbox_methods<seq::SkipListPq>("skiplist_pq", "skip-list priority queue"));
  CDSB_REGISTER(blackbox_methods<seq::PairingHeap>("pairing_heap", "pairing-heap priority queue"));
  CDSB_REGISTER(blackbox_methods<seq::SkipListDict>("skiplist_dict", "skip-list dictionary"));
  CDSB_REGISTER(blackbox_methods<seq::SortedSet>("sorted_set", "Redis-like sorted set (hash table + ranked skip list)"));
  CDSB_REGISTER(blackbox_methods<seq::Stack>("stack", "sequential stack"));
  CDSB_REGISTER(blackbox_structure<variant_matrix<LockFreeStack, AllReclaimers, AllocationPolicies>>(
      {.name = "lf.stack", .kind = black_box,
       .description = "Treiber's lock-free stack (IBM RJ 5118, 1986): the LF baseline beside the black-box stacks",
       .method = "lf", .sequential = "stack"}));
  CDSB_REGISTER(blackbox_methods<seq::Synthetic>(
      "synthetic", "the paper's synthetic buffer (n = key range entries, 8 touched per operation + a hot one)"));
}

template void add_structures<CDSBENCH_REGISTRY_SHARD>(RegistryShard&);

}  // namespace cdsb::bench
