// libcds's hash maps behind our ConcurrentMap interface (architecture.md §3), beside our own
// (set/hash/): the same loop, prefill, validation and correctness matrix.
//
//   libcds.michael_hash_map  cds::container::MichaelHashMap over MichaelKVList (Michael, SPAA
//                            2002): a fixed bucket array of lock-free lists
//   libcds.split_list_map    cds::container::SplitListMap (Shalev & Shavit, PODC 2003) over
//                            Michael's list
//   libcds.feldman_hash_map  cds::container::FeldmanHashMap (Feldman, LaBorde & Dechev's
//                            multi-level arrays); libcds retries without a bound, so it is
//                            lock-free, not wait-free as the paper's design
//
// All with libcds's Hazard Pointers (LibcdsSession, libcds_sets.hpp says how libcds is set up
// and why its peers stay out of the TSan tree) and our `even` hash, sized as ours are: Michael's
// buckets and the split list's initial table from the expected key count (SizeHint, load factor
// 1), the Feldman map's head array 2^head_bits with head_bits the multiple of 4 at or above
// log2 of it (libcds requires 64 - head_bits to be a multiple of its 2^4-entry arrays).
//
// The operations as libcds gives them: insert, erase, contains; find through get(), whose
// guarded pointer keeps the node alive while its value is read; find_or_insert as insert, then
// get if the key was present (retried if the key was erased in between: linearized at the
// successful insert or at the get). None has a linearizable assign, so all three register
// without it (`--assign` is refused): the two list-based maps update a value in place,
// unsynchronised with readers (libcds: "the functor must guarantee that during changing no any
// other modifications could be made"), and the Feldman map's update(k, f, false) CASes a new
// node, whose value is still the default, into the slot and only then calls f to set the value
// (cds/intrusive/impl/feldman_hashset.h, do_update: compare_exchange_strong, then f(val, ...)),
// so a concurrent get can return 0, a value never assigned; lincheck found it (3 histories of
// 5,000, "finds returned a value not written for their key", when the adapter assigned through
// update; e.g. seed 9403282022176046224, 3 threads x 43 operations over 4 keys).
// Nodes come from the process's malloc through std::allocator (not counted).
#pragma once

#include <cds/container/feldman_hashmap_hp.h>
#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_map.h>
#include <cds/container/split_list_map.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "bench/adapters/libcds_sets.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/hash/hashes.hpp"

namespace cdsb::bench::peers {

namespace libcds_maps {
namespace cc = cds::container;

struct EvenHash {
  std::size_t operator()(std::uint64_t k) const { return hash::Even{}(k); }
};
using Less = cc::opt::less<std::less<std::uint64_t>>;
using KvList = cc::MichaelKVList<cds::gc::HP, std::uint64_t, std::uint64_t, cc::michael_list::make_traits<Less>::type>;
using Michael = cc::MichaelHashMap<cds::gc::HP, KvList, cc::michael_map::make_traits<cc::opt::hash<EvenHash>>::type>;
using SplitList = cc::SplitListMap<
    cds::gc::HP, std::uint64_t, std::uint64_t,
    cc::split_list::make_traits<cc::split_list::ordered_list<cc::michael_list_tag>, cc::opt::hash<EvenHash>,
                                cc::split_list::ordered_list_traits<cc::michael_list::make_traits<Less>::type>>::type>;
// libcds allocates a Feldman array node as one block larger than its type (the slots follow
// it) but frees it as one object of its type: a sized delete of the wrong size, which ASan
// reports (new-delete-type-mismatch) and glibc's malloc ignores. This allocator frees unsized.
template <class T>
struct UnsizedFreeAllocator {
  using value_type = T;
  UnsizedFreeAllocator() = default;
  template <class U>
  UnsizedFreeAllocator(const UnsizedFreeAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) { ::operator delete(p); }
  template <class U>
  bool operator==(const UnsizedFreeAllocator<U>&) const { return true; }
};
struct FeldmanTraits : cc::feldman_hashmap::traits {
  using hash = EvenHash;  // a bijection on 64 bits: every key's path is its own
  using node_allocator = UnsizedFreeAllocator<int>;  // array nodes (see above)
};
using Feldman = cc::FeldmanHashMap<cds::gc::HP, std::uint64_t, std::uint64_t, FeldmanTraits>;

inline std::size_t expected(SizeHint size) { return std::max<std::uint64_t>(size.keys, 1024); }
inline std::size_t head_bits_for(SizeHint size) {
  const int bits = std::bit_width(expected(size) - 1);
  return static_cast<std::size_t>(std::clamp((bits + 3) / 4 * 4, 8, 24));
}
}  // namespace libcds_maps

// One adapter for the three: Map is the libcds container (built from the size hint by make()).
template <class Map>
class LibcdsHashMap {
 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  using reclaimer_type = LibraryReclaimer<hp_name>;
  // The container's own, one held by get()'s guarded pointer and one by an iterator.
  static constexpr std::size_t hazard_pointers = Map::c_nHazardPtrCount + 2;

  LibcdsHashMap(int max_threads, reclaim::ReclaimOptions, SizeHint size)
      : session_(LibcdsSession::Params{LibcdsSession::Gc::hp, hazard_pointers, max_threads + 1, 0}), map_(make(size)) {}

  // Linearizable; lock-free (libcds); hp.
  bool insert(int, key_type k, mapped_type v) { return map_->insert(k, v); }
  bool erase(int, key_type k) { return map_->erase(k); }
  bool contains(int, key_type k) { return map_->contains(k); }
  std::optional<mapped_type> find(int, key_type k) {
    if (const auto found = map_->get(k)) return found->second;
    return std::nullopt;
  }
  // Linearizable at the successful insert or get (see the top); lock-free.
  std::pair<mapped_type, bool> find_or_insert(int tid, key_type k, mapped_type v) {
    for (;;) {
      if (map_->insert(k, v)) return {v, true};
      if (const auto found = find(tid, k)) return {*found, false};
    }
  }
  void thread_init(int) { LibcdsSession::attach_thread(); }
  void thread_exit(int) { LibcdsSession::detach_thread(); }

  // Quiescent: libcds's iterators (each protects its node with a hazard pointer).
  template <class Fn>
  void for_each_entry(Fn&& fn) const {
    for (auto it = map_->cbegin(), end = map_->cend(); it != end; ++it) fn(it->first, it->second);
  }
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for_each_entry([&](key_type k, mapped_type) { fn(k); });
  }

  // Quiescent: iteration yields each key once, and get() finds each with the iterated value.
  std::string check_invariants() const {
    std::unordered_set<key_type> seen;
    std::string bad;
    for_each_entry([&](key_type k, mapped_type v) {
      if (!bad.empty()) return;
      if (!seen.insert(k).second) bad = "iteration yields key " + std::to_string(k) + " twice";
      const auto found = map_->get(k);
      if (bad.empty() && (!found || found->second != v)) bad = "get(" + std::to_string(k) + ") disagrees with iteration";
    });
    return bad;
  }

 private:
  static std::unique_ptr<Map> make(SizeHint size) {
    if constexpr (std::is_same_v<Map, libcds_maps::Feldman>)
      return std::make_unique<Map>(libcds_maps::head_bits_for(size), 4);
    else
      return std::make_unique<Map>(libcds_maps::expected(size), 1);
  }

  LibcdsSession session_;  // first: attached before the map is built, detached after it is gone
  std::unique_ptr<Map> map_;
};

using LibcdsMichaelHashMap = LibcdsHashMap<libcds_maps::Michael>;
using LibcdsSplitListMap = LibcdsHashMap<libcds_maps::SplitList>;
using LibcdsFeldmanHashMap = LibcdsHashMap<libcds_maps::Feldman>;

}  // namespace cdsb::bench::peers
