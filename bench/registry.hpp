// The registry: the one place where structures are named (bench/registry.cpp). The harness,
// the tests and later tools find structures only through it.
#pragma once

#include <functional>
#include <optional>
#include <tuple>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/differential.hpp"
#include "bench/history.hpp"
#include "bench/set_workload.hpp"
#include "bench/trial.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"

namespace cdsb::bench {

// One recorded history: the trial's outcome (validated as usual) and every thread's events.
struct RecordedHistory {
  TrialOutcome outcome;
  HistoryRecorder recorder;
};

// Every (reclaimer, allocator) pair of an entry is a variant of the structure; the functions
// below run the variant named by the configuration (ctx.config.reclaimer/allocator).
struct StructureEntry {
  std::string name;
  std::string description;              // one line, shown by --list
  std::vector<std::string> reclaimers;  // supported reclaimers; the first is the default
  std::vector<std::string> allocators;  // supported allocators; the first is the default
  bool range_queries = false;
  std::string layout;                   // node sizes, shown by --list ("" when not applicable)
  std::function<TrialOutcome(const TrialContext&)> run_trial;

  // Correctness toolkit (empty for `null`, which by design is not a set: it stores nothing).
  std::string model;  // the lincheck checker model its histories follow ("set", ...)
  std::function<RecordedHistory(const TrialContext&)> record_history;
  std::function<std::string(const DifferentialRun&)> differential;
  bool deliberately_broken = false;  // test-only structures the checks must catch
  // False for a structure whose erase must not run beside other operations (a peer:
  // oneTBB's concurrent_map, bench/adapters/tbb_sets.hpp): deletes are refused with more than
  // one thread; lincheck and the stress test run it on inserts and searches.
  bool concurrent_erase = true;
  // A peer's linearizability bug, found by lincheck and documented with its evidence
  // (bench/registry_peers.cpp): lincheck's `all` and patterns leave the structure out and print
  // this; naming it in --ds checks it.
  std::string known_violation;
  // Black-box structures (METHOD.STRUCTURE, bench/blackbox_structure.hpp): run by the
  // black-box workload; node_replicated ones take --nr-replicas and --nr-log-entries.
  bool black_box = false;
  bool node_replicated = false;
};

// The variants the correctness matrix runs for an entry: every reclaimer with the default
// allocator, then every other allocator with the default reclaimer. Under TSan the jemalloc
// (segregated) allocators are left out: jemalloc is not instrumented, so when it hands one
// thread's freed memory to another it synchronises where TSan cannot see, and TSan may
// report the new owner's writes as races with the old owner's reads. The release and ASan
// trees run those variants.
inline std::vector<std::pair<std::string, std::string>> test_variants(const StructureEntry& e) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& r : e.reclaimers) v.emplace_back(r, e.allocators.front());
  for (std::size_t a = 1; a < e.allocators.size(); ++a) {
#if defined(__SANITIZE_THREAD__)
    if (e.allocators[a].find("segregated") != std::string::npos) continue;
#endif
    v.emplace_back(e.reclaimers.front(), e.allocators[a]);
  }
  return v;
}

class Registry {
 public:
  void add(StructureEntry entry) { entries_.push_back(std::move(entry)); }
  const StructureEntry* find(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  const std::vector<StructureEntry>& entries() const { return entries_; }

 private:
  std::vector<StructureEntry> entries_;
};

namespace detail {

template <ConcurrentSet S>
TrialOutcome run_set_trial(const TrialContext& ctx) {
  SetWorkload<S> workload(ctx);
  return run_trial(workload, ctx);
}

template <ConcurrentSet S>
RecordedHistory record_set_history(const TrialContext& ctx) {
  const Config& c = ctx.config;
  const std::size_t per_thread = c.ops ? *c.ops / c.threads + 1 : 1024;
  SetWorkload<S, HistoryRecorder> workload(ctx, HistoryRecorder(c.total_threads(), per_thread));
  TrialOutcome outcome = run_trial(workload, ctx);
  return RecordedHistory{std::move(outcome), workload.recorder()};
}

template <class... Ts>
struct TypeList {};

template <class S>
concept Reclaimed = requires { typename S::reclaimer_type; };

// Runs fn.template operator()<V>() for the variant V named (reclaimer, allocator); an empty
// name means the default (the first variant's).
template <class... Vs, class Fn>
auto with_variant(const std::string& reclaimer_name, const std::string& allocator_name, Fn&& fn) {
  using First = std::tuple_element_t<0, std::tuple<Vs...>>;
  const std::string reclaimer = reclaimer_name.empty() ? First::reclaimer_type::name : reclaimer_name;
  const std::string allocator = allocator_name.empty() ? First::reclaimer_type::allocator_type::name : allocator_name;
  std::optional<decltype(fn.template operator()<First>())> out;
  auto visit = [&]<class V>() {
    if (!out && reclaimer == V::reclaimer_type::name && allocator == V::reclaimer_type::allocator_type::name)
      out.emplace(fn.template operator()<V>());
  };
  (visit.template operator()<Vs>(), ...);
  if (!out) throw std::invalid_argument("no variant with reclaimer " + reclaimer + " and allocator " + allocator);
  return std::move(*out);
}

// A test variant (see test_variants): the default reclaimer or the default allocator.
template <class V, class First>
constexpr bool is_test_variant =
    std::string_view(V::reclaimer_type::name) == First::reclaimer_type::name ||
    std::string_view(V::reclaimer_type::allocator_type::name) == First::reclaimer_type::allocator_type::name;

template <class V>
[[noreturn]] void not_a_test_variant() {
  throw std::invalid_argument(std::string("only test variants are checked; ") + V::reclaimer_type::name + " with " +
                              V::reclaimer_type::allocator_type::name + " is not one");
}

template <class S>
std::string layout_of() {
  std::string s;
  if constexpr (requires { S::node_bytes; }) s = "node " + std::to_string(S::node_bytes) + " B";
  // Trees with a leaf type of their own, and structures with descriptors (Info records).
  if constexpr (requires { S::leaf_bytes; }) s += ", leaf " + std::to_string(S::leaf_bytes) + " B";
  if constexpr (requires { S::descriptor_bytes; }) s += ", descriptor " + std::to_string(S::descriptor_bytes) + " B";
  // Howley-Jones has two descriptor types: ChildCAS (descriptor_bytes) and Relocate.
  if constexpr (requires { S::relocate_descriptor_bytes; })
    s += ", relocate descriptor " + std::to_string(S::relocate_descriptor_bytes) + " B";
  return s;
}

}  // namespace detail

// A set structure run by the set workload through the one measured loop. The reclaimer and
// allocator lists name what it supports (for one with no variants, its fixed choice).
template <ConcurrentSet S>
StructureEntry set_structure(std::string name, std::string description,
                             std::vector<std::string> reclaimers,
                             std::vector<std::string> allocators) {
  static_assert(HasForEachKey<S>, "the harness validates every trial through for_each_key (P6)");
  StructureEntry e;
  e.name = std::move(name);
  e.description = std::move(description);
  e.reclaimers = std::move(reclaimers);
  e.allocators = std::move(allocators);
  e.range_queries = HasRangeQuery<S>;
  e.concurrent_erase = erases_concurrently<S>;
  e.layout = detail::layout_of<S>();
  e.run_trial = &detail::run_set_trial<S>;
  if constexpr (stores_keys<S>) {
    e.model = "set";
    e.record_history = &detail::record_set_history<S>;
    e.differential = &set_differential<S>;
  }
  return e;
}

// One structure written once against the reclaimer interface and instantiated as the
// variants Vs (e.g. List<Ebr<SystemAllocator>>, List<Hp<PoolAllocator<...>>>, ...). The
// first variant is the default; reclaimers and allocators are listed in variant order and
// every listed pair must be one of the variants (see variant_matrix). Every variant can be
// measured; history recording and the differential test exist for the test variants only
// (they are what the correctness matrix runs, and each instantiation costs compile time).
template <ConcurrentSet... Vs>
  requires(detail::Reclaimed<Vs> && ...)
StructureEntry set_structure_variants(detail::TypeList<Vs...>, std::string name, std::string description) {
  StructureEntry e;
  e.name = std::move(name);
  e.description = std::move(description);
  auto add_unique = [](std::vector<std::string>& list, const std::string& item) {
    for (const auto& x : list)
      if (x == item) return;
    list.push_back(item);
  };
  (add_unique(e.reclaimers, Vs::reclaimer_type::name), ...);
  (add_unique(e.allocators, Vs::reclaimer_type::allocator_type::name), ...);
  using First = std::tuple_element_t<0, std::tuple<Vs...>>;
  e.range_queries = HasRangeQuery<First>;
  e.concurrent_erase = erases_concurrently<First>;
  e.layout = detail::layout_of<First>();
  e.run_trial = [](const TrialContext& ctx) {
    return detail::with_variant<Vs...>(ctx.config.reclaimer, ctx.config.allocator,
                                       [&]<class V>() { return detail::run_set_trial<V>(ctx); });
  };
  if constexpr (stores_keys<First>) {
    e.model = "set";
    e.record_history = [](const TrialContext& ctx) {
      return detail::with_variant<Vs...>(ctx.config.reclaimer, ctx.config.allocator, [&]<class V>() -> RecordedHistory {
        if constexpr (detail::is_test_variant<V, First>) return detail::record_set_history<V>(ctx);
        else detail::not_a_test_variant<V>();
      });
    };
    e.differential = [](const DifferentialRun& run) {
      return detail::with_variant<Vs...>(run.reclaimer, run.allocator, [&]<class V>() -> std::string {
        if constexpr (detail::is_test_variant<V, First>) return set_differential<V>(run);
        else detail::not_a_test_variant<V>();
      });
    };
  }
  return e;
}

// Every reclaimer with every allocator: S<Reclaimer<Allocator>>, reclaimers outermost (in
// sanitizer trees, CDSBENCH_TEST_VARIANTS_ONLY, the test variants only).
template <template <class> class... Rs>
struct ReclaimerList {};
template <class... As>
struct AllocatorList {};

namespace detail {
template <class... Lists>
struct Concat;
template <class... Ts>
struct Concat<TypeList<Ts...>> {
  using type = TypeList<Ts...>;
};
template <class... As, class... Bs, class... Rest>
struct Concat<TypeList<As...>, TypeList<Bs...>, Rest...> {
  using type = typename Concat<TypeList<As..., Bs...>, Rest...>::type;
};
template <template <class> class S, template <class> class R, class... As>
using VariantRow = TypeList<S<R<As>>...>;
template <template <class> class S, class Rs, class As>
struct Matrix;
template <template <class> class S, template <class> class R0, template <class> class... Rs, class A0, class... As>
struct Matrix<S, ReclaimerList<R0, Rs...>, AllocatorList<A0, As...>> {
#if CDSBENCH_TEST_VARIANTS_ONLY
  // Sanitizer trees: only what the correctness matrix runs (test_variants), at half the
  // compile time of the whole matrix.
  using type = typename Concat<VariantRow<S, R0, A0, As...>, VariantRow<S, Rs, A0>...>::type;
#else
  using type = typename Concat<VariantRow<S, R0, A0, As...>, VariantRow<S, Rs, A0, As...>...>::type;
#endif
};
}  // namespace detail

template <template <class> class S, class Reclaimers, class Allocators>
using variant_matrix = typename detail::Matrix<S, Reclaimers, Allocators>::type;

// The built-in structures; tests add their deliberately broken ones to a copy.
Registry builtin_registry();

// The allocation policies a structure with variants is registered with.
using AllocationPolicies = AllocatorList<reclaim::SystemAllocator, reclaim::SegregatedAllocator,
                                         reclaim::PoolAllocator<reclaim::SystemAllocator>,
                                         reclaim::PoolAllocator<reclaim::SegregatedAllocator>>;

// Structures with many variants, each in its own translation unit (bench/registry_*.cpp).
void add_harris_michael_list(Registry& r);
void add_lazy_list(Registry& r);
void add_natarajan_mittal_bst(Registry& r);
void add_ellen_bst(Registry& r);
void add_bst_tk(Registry& r);
void add_howley_jones_bst(Registry& r);
void add_ramachandran_mittal_bst(Registry& r);
void add_drachsler_bst(Registry& r);
void add_citrus_bst(Registry& r);
void add_bronson_avl(Registry& r);
// Other libraries' structures behind our interface, LIBRARY.STRUCTURE (bench/registry_peers.cpp).
void add_peer_structures(Registry& r);

// Node Replication and the black-box baselines, METHOD.STRUCTURE (bench/registry_blackbox*.cpp).
void add_blackbox_structures(Registry& r);

}  // namespace cdsb::bench
