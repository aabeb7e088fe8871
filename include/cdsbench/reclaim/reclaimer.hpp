// The one memory-reclamation interface (architecture.md §3) and what every scheme shares.
//
// A structure is written once against the `Reclaimer` concept and instantiated with any
// scheme it supports (none.hpp, ebr.hpp, hp.hpp, ibr.hpp), each parameterised by an
// allocation policy (alloc_system.hpp, alloc_segregated.hpp, alloc_pool.hpp):
//
//   struct Node : R::NodeBase { ... };               // empty except for IBR's epochs
//   R reclaimer_{max_threads, slots, options};        // slots: hazard pointers a thread needs
//   auto guard = reclaimer_.enter(tid);               // one guard per operation
//   Node* n = reclaimer_.template allocate<Node>(tid, args...);
//   auto p = reclaimer_.protect(tid, slot, atomic);   // a load that stays safe to dereference
//   reclaimer_.retire(tid, n);                        // inside a guard, after n was unlinked
//   reclaimer_.deallocate(tid, n);                    // never published, or at teardown
//
// `protect` returns the value it loaded, marks included. With HP and IBR a structure must
// still check, as its algorithm demands, that what it protected was reachable when it was
// protected (for HP: re-read the link it came from). Every scheme keeps limbo lists per
// thread and frees a node on the thread that retired it, so all counters are thread-private.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/user_stats.hpp"

namespace cdsb::reclaim {

// `eager` makes every scheme reclaim as soon as it may: HP and IBR scan at every retire, IBR
// advances its epoch at every allocation and retirement, EBR checks one other thread at
// every operation (so an epoch still takes N operations to advance). Sanitizer runs then see
// a use-after-free at once.
struct ReclaimOptions {
  bool eager = false;
};

// Allocation policy: uninitialised storage for one T, freed by the same policy.
template <class A>
concept AllocationPolicy = requires(A& a, int tid, void* p) {
  { A::name } -> std::convertible_to<const char*>;
  { a.template allocate<std::uint64_t>(tid) } -> std::same_as<void*>;
  a.template deallocate<std::uint64_t>(tid, p);
};

// The interface a structure is written against. `guards_whole_operation`: whether a guard
// keeps every node it could reach alive until it ends (epochs, or no reclamation), rather than
// only the nodes protected one by one (hazard pointers, intervals).
template <class R>
concept Reclaimer = requires(R& r, int tid, const std::atomic<std::uint64_t*>& src, std::uint64_t* p) {
  { R::name } -> std::convertible_to<const char*>;
  { R::guards_whole_operation } -> std::convertible_to<bool>;
  typename R::NodeBase;
  typename R::allocator_type;
  r.enter(tid);
  { r.protect(tid, 0, src) } -> std::same_as<std::uint64_t*>;
  { r.template allocate<std::uint64_t>(tid) } -> std::same_as<std::uint64_t*>;
  r.retire(tid, p);
  r.deallocate(tid, p);
  { r.stats() } -> std::same_as<StatsReport>;
};

// A structure whose traversals walk through removed nodes over frozen links needs one of
// these: hp and ibr make a pointer safe by re-reading the link it came from, which a frozen
// link defeats.
template <class R>
concept WholeOperationReclaimer = Reclaimer<R> && R::guards_whole_operation;

// A reclaimer that only declares the interface, for a structure header's
// static_assert(Concept<Structure<Archetype<>>>): the structure's declarations are checked
// against the interface alone, with no scheme instantiated.
template <bool WholeOperation = true>
struct Archetype {
  static constexpr const char* name = "archetype";
  static constexpr bool guards_whole_operation = WholeOperation;
  struct NodeBase {};
  struct allocator_type {
    static constexpr const char* name = "archetype";
  };
  struct Guard {};
  Archetype(int max_threads, int slots, ReclaimOptions options);
  Guard enter(int tid);
  void leave(int tid);
  template <class P>
  P protect(int tid, int slot, const std::atomic<P>& src);
  template <class T, class... Args>
  T* allocate(int tid, Args&&... args);
  template <class T>
  void retire(int tid, T* node);
  template <class T>
  void deallocate(int tid, T* node);
  StatsReport stats() const;
};

// Ends an operation: the scheme's leave(tid) when the guard goes out of scope.
template <class R>
class [[nodiscard]] Guard {
 public:
  Guard(R& r, int tid) noexcept : r_(r), tid_(tid) {}
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
  ~Guard() { r_.leave(tid_); }

 private:
  R& r_;
  int tid_;
};

// The figures every scheme reports; a scheme's own follow from `stat_scheme_first`.
enum ReclaimStat : int {
  stat_allocated,      // nodes allocated through the reclaimer
  stat_retired,        // nodes retired (unlinked, waiting for a safe moment)
  stat_freed,          // nodes freed: reclaimed after retirement, or deallocated directly
  stat_limbo_peak,     // the largest limbo (retired, not yet freed) any one thread held
  stat_reclaim_batch,  // histogram: nodes freed per reclamation pass
  stat_scheme_first,
};

inline std::vector<StatSpec> reclaim_stat_specs(std::vector<StatSpec> scheme_specs) {
  std::vector<StatSpec> specs{{"nodes_allocated", StatKind::counter},
                              {"nodes_retired", StatKind::counter},
                              {"nodes_freed", StatKind::counter},
                              {"nodes_in_limbo_peak", StatKind::maximum},
                              {"reclaim_batch", StatKind::histogram}};
  specs.insert(specs.end(), scheme_specs.begin(), scheme_specs.end());
  return specs;
}

// What all schemes share: the allocation policy, the statistics and the destroy path of a
// retired node. `Self` is the scheme (CRTP): a retired node's destroy function needs it.
template <class Self, AllocationPolicy Alloc>
class ReclaimerBase {
 public:
  using allocator_type = Alloc;

  template <class T, class... Args>
  T* allocate(int tid, Args&&... args) {
    void* mem = alloc_.template allocate<T>(tid);
    stats_.add(tid, stat_allocated);
    return new (mem) T(std::forward<Args>(args)...);
  }

  // A node no other thread can reach (never published, or at teardown): freed at once.
  template <class T>
  void deallocate(int tid, T* node) {
    destroy<T>(self(), tid, node);
  }

  // Quiescent. nodes_in_limbo: retired and not yet freed, now.
  StatsReport stats() const {
    StatsReport r = stats_.report();
    r.values.emplace_back("nodes_in_limbo", static_cast<const Self&>(*this).in_limbo());
    return r;
  }

 protected:
  // A retired node: where it is and how to destroy and free it.
  struct Retired {
    void* node;
    void (*destroy)(Self&, int tid, void* node);
  };

  ReclaimerBase(int max_threads, std::vector<StatSpec> scheme_specs)
      : max_threads_(max_threads), alloc_(max_threads), stats_(max_threads, reclaim_stat_specs(std::move(scheme_specs))) {}

  template <class T>
  Retired retired(int tid, T* node) {
    stats_.add(tid, stat_retired);
    return {node, &destroy<T>};
  }

  // Frees a whole list, as one reclamation pass of thread tid.
  void free_all(int tid, std::vector<Retired>& list) {
    if (list.empty()) return;
    stats_.record(tid, stat_reclaim_batch, list.size());
    for (const Retired& r : list) r.destroy(self(), tid, r.node);
    list.clear();
  }

  void note_limbo(int tid, std::size_t size) { stats_.set_max(tid, stat_limbo_peak, size); }

  Self& self() noexcept { return static_cast<Self&>(*this); }

  const int max_threads_;
  Alloc alloc_;
  UserStats stats_;

 private:
  template <class T>
  static void destroy(Self& self, int tid, void* node) {
    static_cast<T*>(node)->~T();
    self.alloc_.template deallocate<T>(tid, node);
    self.stats_.add(tid, stat_freed);
  }
};

}  // namespace cdsb::reclaim
