// Other libraries' structures behind our interface (bench/adapters/), one registration line
// each, listed after ours. Their headers are parsed only in this file's shards.
#include "bench/adapters/libcds_maps.hpp"
#include "bench/adapters/libcds_sets.hpp"
#include "bench/adapters/libcuckoo_maps.hpp"
#include "bench/adapters/queue_peers.hpp"
#include "bench/adapters/tbb_sets.hpp"
#include "bench/registry/register.hpp"

namespace cdsb::bench {

namespace {
template <class K, class H> using TbbConcurrentHashDigest = peers::TbbConcurrentHashMap<K, H>;
}  // namespace

using enum StructureKind;
using namespace peers;

template <int Shard>
void add_peers(RegistryShard& shard) {
  constexpr int shards = peer_shards;
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
                      "libcds: no bound on its retries), libcds Hazard Pointers; no assign (its update publishes the "
                      "new node before setting its value)",
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
  // The queues: libcds's (its .so, as above) and oneTBB's, whose pages come from its
  // cache_aligned_allocator, i.e. tbbmalloc (as above).
  CDSB_REGISTER(queue_structure<TbbConcurrentQueue>(
      {.name = "tbb.concurrent_queue", .kind = queue,
       .description = "oneTBB 2021.8 concurrent_queue: 8 micro-queues (its default), a ticket per push and per pop",
       .library = "oneTBB"}));
  CDSB_REGISTER(queue_structure<LibcdsMsQueue>(
      {.name = "libcds.ms_queue", .kind = queue,
       .description = "libcds 2.3.3 MSQueue (Michael & Scott, PODC 1996) with libcds Hazard Pointers",
       .library = "libcds"}));
  CDSB_REGISTER(queue_structure<LibcdsBasketQueue>(
      {.name = "libcds.basket_queue", .kind = queue,
       .description = "libcds 2.3.3 BasketQueue (Hoffman, Shalev & Shavit, OPODIS 2007) with libcds Hazard Pointers",
       .library = "libcds"}));
  CDSB_REGISTER(queue_structure<LibcdsFcQueue>(
      {.name = "libcds.fc_queue", .kind = queue,
       .description = "libcds 2.3.3 FCQueue: a std::deque under flat combining (Hendler, Incze, Shavit & Tzafrir, SPAA 2010)",
       .library = "libcds"}));
  CDSB_REGISTER(queue_structure<LibcdsSegmentedQueue>(
      {.name = "libcds.segmented_queue", .kind = queue,
       .description = "libcds 2.3.3 SegmentedQueue (Afek, Korland & Yanovsky, OPODIS 2010), libcds Hazard Pointers: "
                      "quasi-linearizable (a dequeue takes any item of the first segment of threads-rounded-up-to-2^k "
                      "cells), so relaxed",
       .library = "libcds"}));
  // The header-only queues, also out of the TSan tree: each recycles its memory in ways TSan
  // does not follow, and TSan reports races inside them within a 100 ms, 3-thread trial:
  // moodycamel's (a producer's placement-new of an element, concurrentqueue.h:1933, against an
  // earlier dequeue's read of the same slot, :2023; its header warns that TSan "can false
  // report races in lock-free code" and exempts a few of its functions only), and
  // Boost.Lockfree's (a node recycled from its free list, whose constructor stores its tagged
  // `next`, queue.hpp:125, against a pop's load of it, :418: the tagged-pointer free list lets a
  // slow pop read a recycled node and its tag then fails that pop's CAS).
  // Checked against the FIFO model as its documentation warns (no order between producers):
  // about half of 3,000 small histories (2-4 threads) are not linearizable, even ones with no
  // two operations overlapping, e.g. thread 2 enqueued b0 b1 b2, thread 0 dequeued b0 and
  // enqueued a1 a2, and thread 1's next dequeue returned a1 while b1 was older: a consumer
  // token takes from the producer it is on, not the oldest item.
  CDSB_REGISTER(queue_structure<MoodycamelConcurrentQueue>(
      {.name = "moodycamel.concurrent_queue", .kind = queue,
       .description = "moodycamel::ConcurrentQueue 1.0.3: a sub-queue of blocks per producer (a token per thread), "
                      "native bulk operations; FIFO per producer only",
       .library = "moodycamel",
       .known_violation = "moodycamel::ConcurrentQueue is FIFO per producer only: a dequeue can return a later "
                          "producer's item while an older one waits, even in a sequential history (see "
                          "bench/registry/peers.cpp); evidence: cdsbench-lincheck --ds moodycamel.concurrent_queue "
                          "--histories 3000 (about half not linearizable)"}));
  CDSB_REGISTER(queue_structure<BoostLockfreeQueue>(
      {.name = "boost.lockfree_queue", .kind = queue,
       .description = "Boost 1.74 lockfree::queue: Michael-Scott with tagged pointers and a free list of nodes",
       .library = "Boost"}));
#endif
  CDSB_REGISTER(set_structure<TbbConcurrentUnorderedMap>(
      {.name = "tbb.concurrent_unordered_map", .kind = unordered_map,
       .description = "oneTBB 2021.8 concurrent_unordered_map (split-ordered list): concurrent insert and find; its "
                      "erase (unsafe_erase) is not thread-safe, so deletes run only with one thread; no assign",
       .library = "oneTBB"}));
  CDSB_REGISTER(set_structure<TbbConcurrentHashMap<>, digest_and_byte_keyed<TbbConcurrentHashDigest>>(
      {.name = "tbb.concurrent_hash_map", .kind = unordered_map,
       .description = "oneTBB 2021.8 concurrent_hash_map (unordered; bucket and item readers-writer locks): oneTBB's "
                      "concurrent erase",
       .library = "oneTBB"}));
  // Digest keys without bytesum: cuckoo hashing gives a key two buckets of 4 slots, so more
  // than 8 keys with one hash fit in no table size (libcuckoo throws load_factor_too_low), and
  // bytesum gives each of its ~5,100 values to many digests. Not for the applications: they
  // cannot size it for keys they do not know, and its doubling races with concurrent
  // operations (bench/adapters/libcuckoo_maps.hpp; TSan in dedup's pipeline test, too).
  CDSB_REGISTER(set_structure<LibcuckooMap<>, workload_only<digest_keyed_but_bytesum<LibcuckooMap>>>(
      {.name = "libcuckoo.map", .kind = unordered_map,
       .description = "libcuckoo 0.3.1 cuckoohash_map (Li et al., EuroSys 2014): 4-way bucketed cuckoo hashing, striped "
                      "spin locks, doubles under all locks; our even hash",
       .library = "libcuckoo"}));
}

template void add_peers<CDSBENCH_REGISTRY_SHARD>(RegistryShard&);

}  // namespace cdsb::bench
