// Making registry entries: what the registration lines of bench/registry/structures.cpp,
// peers.cpp and black_box.cpp call.
//
// A structure is registered by one line there,
//
//   CDSB_REGISTER(set_structure<variant_matrix<BstTk, WholeOperationReclaimers, AllocationPolicies>>(
//       {.name = "bst_tk", .kind = StructureKind::ordered_set, .description = "..."}));
//
// which instantiates the workload, the history recorder and the differential test for each
// variant. Those instantiations are what takes compile time, so each file is compiled as
// several translation units (its shards, bench/CMakeLists.txt), and each registration line
// is instantiated in one of them only: line i in shard i mod the file's shard count. The
// other shards see the line inside a discarded `if constexpr` branch of a template, which
// is parsed but never instantiated. Nothing is copied per structure, and builtin_registry()
// orders the entries as the files and their lines are ordered.
#pragma once

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/check/blackbox_differential.hpp"
#include "bench/check/differential.hpp"
#include "bench/check/history.hpp"
#include "bench/check/queue_differential.hpp"
#include "bench/harness/trial.hpp"
#include "bench/registry/app_structures.hpp"
#include "bench/registry/registry.hpp"
#include "bench/registry/shard.hpp"
#include "bench/workloads/blackbox_workload.hpp"
#include "bench/workloads/queue_workload.hpp"
#include "bench/workloads/set_workload.hpp"
#include "cdsbench/nr/flat_combining.hpp"
#include "cdsbench/nr/node_replication.hpp"
#include "cdsbench/nr/rw_locked.hpp"
#include "cdsbench/nr/spin_locked.hpp"
#include "cdsbench/reclaim/alloc_pool.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/reclaim/hp.hpp"
#include "cdsbench/reclaim/ibr.hpp"
#include "cdsbench/reclaim/none.hpp"
#include "cdsbench/set/hash/hashes.hpp"

namespace cdsb::bench {

// What a registration line says about a structure besides its type.
struct About {
  std::string name;
  StructureKind kind = StructureKind::ordered_set;
  std::string description;
  std::string library = "cdsbench";
  std::string layout;           // overrides the layout read off the type (peers describe their own)
  std::string known_violation;  // a peer's documented linearizability bug
  std::string method, sequential;  // black-box structures: nr, sl, ... and the sequential one
};

// ---- variants -------------------------------------------------------------------------------

template <class... Ts>
struct TypeList {};

template <class... Ts>
using first_t = std::tuple_element_t<0, std::tuple<Ts...>>;  // a list's default variant

// A variant's names: its reclaimer's and allocator's, or, for a structure that frees nodes at
// once inside its own critical sections (lock-based structures, the black-box methods),
// "immediate" with the system allocator.
template <class V>
constexpr std::string_view reclaimer_name() {
  if constexpr (requires { V::reclaimer_type::name; }) return V::reclaimer_type::name;
  else return "immediate";
}
template <class V>
constexpr std::string_view allocator_name() {
  if constexpr (requires { V::reclaimer_type::allocator_type::name; }) return V::reclaimer_type::allocator_type::name;
  else return "system";
}
template <class V, class Default>
constexpr bool is_test_variant_of =
    is_test_variant(reclaimer_name<V>(), allocator_name<V>(), reclaimer_name<Default>(), allocator_name<Default>());

template <class... Vs>
std::vector<Variant> variants_of(TypeList<Vs...>) {
  using First = first_t<Vs...>;
  return {Variant{std::string(reclaimer_name<Vs>()), std::string(allocator_name<Vs>()), is_test_variant_of<Vs, First>}...};
}

// Reclaimers and allocation policies, listed as templates: S<Reclaimer<Allocator>>.
template <template <class> class... Rs>
struct ReclaimerList {};
template <class... As>
struct AllocatorList {};

// The named sets a structure picks from; the first of a list is the default.
using AllReclaimers = ReclaimerList<reclaim::EpochBased, reclaim::HazardPointers, reclaim::IntervalBased, reclaim::NoReclaim>;
using AllocationPolicies = AllocatorList<reclaim::SystemAllocator, reclaim::SegregatedAllocator,
                                         reclaim::PoolAllocator<reclaim::SystemAllocator>,
                                         reclaim::PoolAllocator<reclaim::SegregatedAllocator>>;

namespace detail {
template <class... Lists>
struct Concat {
  using type = TypeList<>;
};
template <class... Ts>
struct Concat<TypeList<Ts...>> {
  using type = TypeList<Ts...>;
};
template <class... As, class... Bs, class... Rest>
struct Concat<TypeList<As...>, TypeList<Bs...>, Rest...> {
  using type = typename Concat<TypeList<As..., Bs...>, Rest...>::type;
};

// The reclaimers of a list whose guards cover a whole operation (reclaim::WholeOperationReclaimer).
template <class List, template <class> class... Kept>
struct KeepWholeOperation;
template <template <class> class... Kept>
struct KeepWholeOperation<ReclaimerList<>, Kept...> {
  using type = ReclaimerList<Kept...>;
};
template <template <class> class R, template <class> class... Rs, template <class> class... Kept>
struct KeepWholeOperation<ReclaimerList<R, Rs...>, Kept...> {
  using type = std::conditional_t<R<reclaim::SystemAllocator>::guards_whole_operation,
                                  typename KeepWholeOperation<ReclaimerList<Rs...>, Kept..., R>::type,
                                  typename KeepWholeOperation<ReclaimerList<Rs...>, Kept...>::type>;
};

template <template <class> class S, template <class> class R, class... As>
using VariantRow = TypeList<S<R<As>>...>;
template <template <class> class S, class Rs, class As>
struct Matrix;
template <template <class> class S, template <class> class... Rs, class... As>
struct Matrix<S, ReclaimerList<Rs...>, AllocatorList<As...>> {
  using type = typename Concat<VariantRow<S, Rs, As...>...>::type;
};

// The variants of a list that the correctness matrix runs (is_test_variant).
template <class List>
struct TestVariants;
template <class First, class... Vs>
struct TestVariants<TypeList<First, Vs...>> {
  using type = typename Concat<TypeList<First>,
                               std::conditional_t<is_test_variant_of<Vs, First>, TypeList<Vs>, TypeList<>>...>::type;
};
}  // namespace detail

using WholeOperationReclaimers = typename detail::KeepWholeOperation<AllReclaimers>::type;

// Every reclaimer with every allocator, reclaimers outermost; in sanitizer trees
// (CDSBENCH_TEST_VARIANTS_ONLY) the test variants only, at a fraction of the compile time.
template <template <class> class S, class Reclaimers, class Allocators>
using variant_matrix =
#if CDSBENCH_TEST_VARIANTS_ONLY
    typename detail::TestVariants<typename detail::Matrix<S, Reclaimers, Allocators>::type>::type;
#else
    typename detail::Matrix<S, Reclaimers, Allocators>::type;
#endif

// The axes of the matrix only: every reclaimer with the default allocator and every allocator
// with the default reclaimer (the test variants, in every tree): each choice measurable
// against the default at half the compile time of the full matrix. For structures whose
// reclaimer-allocator interplay is not what is studied (the hash maps).
template <template <class> class S, class Reclaimers, class Allocators>
using variant_axes = typename detail::TestVariants<typename detail::Matrix<S, Reclaimers, Allocators>::type>::type;

namespace detail {

// Runs fn.template operator()<V>() for the variant V named (reclaimer, allocator); an empty
// name means the default variant's. The command line and lincheck accept only pairs the
// entry lists, so a miss is a bug.
template <class... Vs, class Fn>
auto with_variant(TypeList<Vs...>, const std::string& reclaimer_name_given, const std::string& allocator_name_given,
                  Fn&& fn) {
  using First = first_t<Vs...>;
  const std::string reclaimer = reclaimer_name_given.empty() ? std::string(reclaimer_name<First>()) : reclaimer_name_given;
  const std::string allocator = allocator_name_given.empty() ? std::string(allocator_name<First>()) : allocator_name_given;
  std::optional<decltype(fn.template operator()<First>())> out;
  auto visit = [&]<class V>() {
    if (!out && reclaimer == reclaimer_name<V>() && allocator == allocator_name<V>()) out.emplace(fn.template operator()<V>());
  };
  (visit.template operator()<Vs>(), ...);
  if (!out) throw std::logic_error("no variant " + reclaimer + "/" + allocator + " (the command line should have refused it)");
  return std::move(*out);
}

template <class V>
[[noreturn]] void not_a_test_variant() {
  throw std::logic_error(std::string("histories and differential runs exist for test variants only; ") +
                         std::string(reclaimer_name<V>()) + "/" + std::string(allocator_name<V>()) + " is not one");
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

template <class... Vs>
StructureEntry entry_for(TypeList<Vs...> list, About about) {
  using First = first_t<Vs...>;
  StructureEntry e;
  e.name = std::move(about.name);
  e.kind = about.kind;
  e.description = std::move(about.description);
  e.library = std::move(about.library);
  e.known_violation = std::move(about.known_violation);
  e.method = std::move(about.method);
  e.sequential = std::move(about.sequential);
  e.layout = about.layout.empty() ? layout_of<First>() : std::move(about.layout);
  e.variants = variants_of(list);
  return e;
}

// A workload's trial, and its history recording, for the variant a context names.
template <template <class, class> class Workload, class... Vs>
TrialOutcome run_variant_trial(const TrialContext& ctx) {
  return with_variant(TypeList<Vs...>{}, ctx.config.reclaimer, ctx.config.allocator,
                      [&]<class V>() { return run_owned_trial<Workload<V, NoRecorder>>(ctx); });
}

// A trial of structure S whose operations are recorded for lincheck.
template <template <class, class> class Workload, class S>
RecordedHistory record_history_of(const TrialContext& ctx) {
  const Config& c = ctx.config;
  const std::size_t per_thread = c.ops ? *c.ops / c.threads + 1 : 1024;
  Workload<S, HistoryRecorder> workload(ctx, HistoryRecorder(c.total_threads(), per_thread));
  TrialOutcome outcome = run_trial(workload, ctx);
  return RecordedHistory{std::move(outcome), workload.recorder()};
}

template <template <class, class> class Workload, class... Vs>
RecordedHistory record_variant_history(const TrialContext& ctx) {
  using First = first_t<Vs...>;
  return with_variant(TypeList<Vs...>{}, ctx.config.reclaimer, ctx.config.allocator, [&]<class V>() -> RecordedHistory {
    if constexpr (is_test_variant_of<V, First>) return record_history_of<Workload, V>(ctx);
    else not_a_test_variant<V>();
  });
}

// The differential test of the variant a run names (test variants only): test is a generic
// lambda []<class V>(const DifferentialRun&) -> std::string.
template <class... Vs, class Test>
std::string differential_of(TypeList<Vs...> list, const DifferentialRun& run, Test test) {
  using First = first_t<Vs...>;
  return with_variant(list, run.reclaimer, run.allocator, [&]<class V>() -> std::string {
    if constexpr (is_test_variant_of<V, First>) return test.template operator()<V>(run);
    else not_a_test_variant<V>();
  });
}

}  // namespace detail

// ---- entries --------------------------------------------------------------------------------

template <class T>
inline constexpr bool is_type_list = false;
template <class... Ts>
inline constexpr bool is_type_list<TypeList<Ts...>> = true;

// A registration line names a structure's variants (a TypeList, e.g. a variant_matrix) or,
// for a structure without variants, the structure itself.
template <class List>
using variants_t = std::conditional_t<is_type_list<List>, List, TypeList<List>>;

// A map template of (key, hash) built with other keys than 64-bit integers: the registration
// line's second list (set_structure), naming the builds the set workload measures (Workload)
// and those the applications use (App: StructureEntry::make_digest_map). digest_keyed:
// 20-byte digests with each named hash, for --keys digest --hash NAME (digest_keyed_but_bytesum
// for a map that cannot hold many keys with one hash); byte_keyed: byte strings
// (std::string_view) with the even hash, for --keys bytes; digest_and_byte_keyed: both. The
// applications take the digest builds, or a byte-string build where a map has no digest one.
//
// The sanitizer trees measure 64-bit keys only: another key type changes how a node keeps and
// compares its key, code the unit tests run there on every map of ours
// (tests/unit/test_hash_maps.cpp: digests; test_byte_keys.cpp: byte strings, with threads) at
// a fraction of the compile time of another workload per map. They build one map per entry
// for the applications (the even hash), so that the applications run under the sanitizers
// with every map: a map without the workload compiles in seconds.
template <class Workload, class App>
struct KeyedBuilds {};

namespace detail {
// A registration line's keyed builds: a TypeList is both the workload's and the applications'.
template <class Keyed>
struct KeyedParts {
  using workload = Keyed;
  using app = Keyed;
};
template <class W, class A>
struct KeyedParts<KeyedBuilds<W, A>> {
  using workload = W;
  using app = A;
};
}  // namespace detail

// The workload's builds of a keyed list, none for the applications (a map that cannot serve
// an application: its line says why).
template <class Keyed>
using workload_only = KeyedBuilds<typename detail::KeyedParts<Keyed>::workload, TypeList<>>;
#if defined(CDSBENCH_TEST_VARIANTS_ONLY)
template <template <class, class> class M>
using digest_keyed = KeyedBuilds<TypeList<>, TypeList<M<Digest160, hash::Even>>>;
template <template <class, class> class M>
using digest_keyed_but_bytesum = digest_keyed<M>;
template <template <class, class> class M>
using digest_and_byte_keyed = digest_keyed<M>;
template <template <class, class> class M>
using byte_keyed = KeyedBuilds<TypeList<>, TypeList<M<std::string_view, hash::Even>>>;
#else
template <template <class, class> class M>
using digest_keyed = TypeList<M<Digest160, hash::Even>, M<Digest160, hash::Parsec3>, M<Digest160, hash::ByteSum>>;
template <template <class, class> class M>
using digest_keyed_but_bytesum = TypeList<M<Digest160, hash::Even>, M<Digest160, hash::Parsec3>>;
template <template <class, class> class M>
using digest_and_byte_keyed = TypeList<M<Digest160, hash::Even>, M<Digest160, hash::Parsec3>, M<Digest160, hash::ByteSum>,
                                       M<std::string_view, hash::Even>>;
template <template <class, class> class M>
using byte_keyed = TypeList<M<std::string_view, hash::Even>>;
#endif

// The --keys value of a build's key type.
template <class Key>
constexpr KeyType key_type_of() {
  if constexpr (std::same_as<Key, Digest160>) return KeyType::digest;
  else if constexpr (std::same_as<Key, std::string_view>) return KeyType::bytes;
  else return KeyType::u64;
}

namespace detail {
// The set workload's trial: the variant the context names, or with other keys the build with
// those keys and its hash.
template <class Variants, class Keyed>
struct SetTrial;
template <class... Vs, class... Ds>
struct SetTrial<TypeList<Vs...>, TypeList<Ds...>> {
  static TrialOutcome run(const TrialContext& ctx) {
    if (ctx.config.keys != KeyType::u64) return with_keyed_build<TrialOutcome>(ctx, [&]<class D>() { return run_owned_trial<SetWorkload<D, NoRecorder>>(ctx); });
    return run_variant_trial<SetWorkload, Vs...>(ctx);
  }
  static RecordedHistory record(const TrialContext& ctx) {
    // Histories with other keys: byte strings only (their code paths differ: key copies, Feldman's
    // overflow chains, the probe map's key blobs; digests only change the hash's input).
    if (ctx.config.keys == KeyType::bytes)
      return with_keyed_build<RecordedHistory>(ctx, [&]<class D>() -> RecordedHistory {
        if constexpr (key_type_of<typename D::key_type>() == KeyType::bytes) return record_history_of<SetWorkload, D>(ctx);
        else throw std::logic_error("histories are recorded with byte-string keys only");
      });
    if (ctx.config.keys != KeyType::u64) throw std::logic_error("histories are recorded with 64-bit or byte-string keys only");
    return record_variant_history<SetWorkload, Vs...>(ctx);
  }

 private:
  // fn.template operator()<D>() for the build D with the keys and hash the context names.
  template <class Result, class Fn>
  static Result with_keyed_build(const TrialContext& ctx, Fn fn) {
    std::optional<Result> out;
    [[maybe_unused]] auto visit = [&]<class D>() {
      if (!out && ctx.config.keys == key_type_of<typename D::key_type>() && ctx.config.hash == D::hash_type::name)
        out.emplace(fn.template operator()<D>());
    };
    (visit.template operator()<Ds>(), ...);
    if (!out) throw std::logic_error("no build with the keys and hash --keys and --hash name (the command line should have refused it)");
    return std::move(*out);
  }
};

// The applications' map (make_digest_map): the build with digest keys and the hash asked for,
// or where a map has no digest build, its byte-string build; each with a linearizable assign.
template <class Builds>
struct AppMaps;
template <class... As>
struct AppMaps<TypeList<As...>> {
  static constexpr bool digest_built = (std::same_as<typename As::key_type, Digest160> || ...);
  template <class A>
  static constexpr bool usable =
      HasAssign<A> && std::same_as<typename A::key_type, std::conditional_t<digest_built, Digest160, std::string_view>>;
  static constexpr bool any = (usable<As> || ...);

  static std::unique_ptr<DigestMap> make(const DigestMapRequest& r) {
    std::unique_ptr<DigestMap> out;
    [[maybe_unused]] auto visit = [&]<class A>() {
      if constexpr (usable<A>)
        if (!out && r.hash == A::hash_type::name) out = std::make_unique<DigestMapOf<A>>(r);
    };
    (visit.template operator()<As>(), ...);
    return out;
  }
  static std::vector<std::string> hashes() {
    std::vector<std::string> names;
    [[maybe_unused]] auto visit = [&]<class A>() {
      if constexpr (usable<A>) names.emplace_back(A::hash_type::name);
    };
    (visit.template operator()<As>(), ...);
    return names;
  }
};

template <ConcurrentSet... Vs, ConcurrentMap... Ds, class AppBuilds>
StructureEntry set_entry(TypeList<Vs...> list, TypeList<Ds...>, AppBuilds, About about) {
  using First = first_t<Vs...>;
  static_assert(HasForEachKey<First>, "the harness validates every trial through for_each_key (P6)");
  StructureEntry e = entry_for(list, std::move(about));
  e.range_queries = HasRangeQuery<First>;
  e.map_operations = ConcurrentMap<First>;
  e.map_assign = HasAssign<First>;
  e.search_depths = HasSearchDepths<First>;
  e.concurrent_erase = erases_concurrently<First>;
  e.run_trial = &SetTrial<TypeList<Vs...>, TypeList<Ds...>>::run;
  (e.key_hashes[std::string(key_type_name(key_type_of<typename Ds::key_type>()))].push_back(std::string(Ds::hash_type::name)), ...);
  if constexpr (AppMaps<AppBuilds>::any) {
    e.make_digest_map = &AppMaps<AppBuilds>::make;
    e.digest_map_hashes = AppMaps<AppBuilds>::hashes();
  }
  if constexpr (stores_keys<First>) {
    e.model = ConcurrentMap<First> ? "map" : "set";
    e.record_history = &SetTrial<TypeList<Vs...>, TypeList<Ds...>>::record;
    e.differential = [](const DifferentialRun& run) {
      return differential_of(TypeList<Vs...>{}, run, []<class V>(const DifferentialRun& r) { return set_differential<V>(r); });
    };
  }
  return e;
}
}  // namespace detail

// A set (or a map run as a set) measured by the set workload. Every variant can be
// measured; history recording and the differential test exist for the test variants only.
// A map may add builds with other keys (digest_keyed, byte_keyed), measured by the same workload
// with encoded keys (--keys digest|bytes), through the default variant's reclaimer and allocator.
template <class List, class Keyed = TypeList<>>
StructureEntry set_structure(About about) {
  using Parts = detail::KeyedParts<Keyed>;
  return detail::set_entry(variants_t<List>{}, typename Parts::workload{}, typename Parts::app{}, std::move(about));
}

namespace detail {
template <class... Ms>
StructureEntry blackbox_entry(TypeList<Ms...> list, About about) {
  using First = first_t<Ms...>;
  using D = typename First::structure_type;
  StructureEntry e = entry_for(list, std::move(about));
  e.node_replicated = NodeReplicatedMethod<First>;
  if constexpr (requires { BlackBox<D>::max_entries; }) e.max_key_range = BlackBox<D>::max_entries;
  e.run_trial = &run_variant_trial<BlackBoxWorkload, Ms...>;
  e.model = BlackBox<D>::model;
  e.record_history = &record_variant_history<BlackBoxWorkload, Ms...>;
  e.differential = [](const DifferentialRun& run) {
    return differential_of(TypeList<Ms...>{}, run, []<class V>(const DifferentialRun& r) { return blackbox_differential<V>(r); });
  };
  return e;
}
}  // namespace detail

// A black-box method (or its variants) over a sequential structure, run by the black-box
// workload; about.kind must be black_box, about.method and about.sequential say which.
template <class List>
StructureEntry blackbox_structure(About about) {
  return detail::blackbox_entry(variants_t<List>{}, std::move(about));
}

namespace detail {
template <ConcurrentQueue... Qs>
StructureEntry queue_entry(TypeList<Qs...> list, About about) {
  using First = first_t<Qs...>;
  StructureEntry e = entry_for(list, std::move(about));
  e.native_batch = HasNativeBatch<First>;
  if constexpr (requires { First::default_capacity; }) e.capacity = First::default_capacity;
  if constexpr (requires { First::order; }) e.order = First::order;
  else e.order = "fifo";
  if constexpr (requires { First::unavailable_reason(); }) e.unavailable_reason = &First::unavailable_reason;
  e.run_trial = &run_variant_trial<QueueWorkload, Qs...>;
  // The applications' queue: a FIFO one (a relaxed queue's empty answer is not proof that it
  // is empty, which the producers-done protocol needs: pipeline_queue.hpp).
  if (e.kind == StructureKind::queue && e.order != "relaxed")
    e.make_item_queue = [](int threads) -> std::unique_ptr<ItemQueue> { return std::make_unique<ItemQueueOf<First>>(threads); };
  // Histories follow the checker's queue (or stack) model, except a relaxed queue's (it
  // promises no FIFO order to check). A queue FIFO per producer only is checked against the
  // FIFO model too: its registration states the violations found as its known_violation.
  if (e.order != "relaxed") {
    e.model = e.order == "lifo" ? "stack" : "queue";
    e.record_history = &record_variant_history<QueueWorkload, Qs...>;
  }
  e.differential = [](const DifferentialRun& run) {
    return differential_of(TypeList<Qs...>{}, run, []<class V>(const DifferentialRun& r) { return queue_differential<V>(r); });
  };
  return e;
}
}  // namespace detail

// A FIFO queue (or its variants) run by the queue workload; about.kind must be queue. What the
// entry says of it is read off the type: native batch operations (HasNativeBatch), a bounded
// queue's `default_capacity` (the harness builds it so), and an `order` weaker than
// linearizable FIFO: "per_producer_fifo" (checked against the FIFO model, its violations
// stated as about.known_violation) or "relaxed" (left out of the linearizability check). A
// stack registers the same way as StackAsQueue<S> (order "lifo", about.kind stack), its
// histories checked with the stack model.
template <class List>
StructureEntry queue_structure(About about) {
  return detail::queue_entry(variants_t<List>{}, std::move(about));
}

// The five black-box methods over one sequential structure D: nr.S, sl.S, rwl.S, fc.S, fcplus.S
// (the sequential structures free nodes at once, inside the method's critical section).
template <class D>
std::vector<StructureEntry> blackbox_methods(const std::string& sequential, const std::string& what) {
  auto about = [&](const char* method, std::string description) {
    return About{.name = std::string(method) + "." + sequential, .kind = StructureKind::black_box,
                 .description = std::move(description), .method = method, .sequential = sequential};
  };
  return {blackbox_structure<NodeReplicated<D>>(
              about("nr", what + " under Node Replication (Calciu et al., ASPLOS 2017): a replica per node, one shared log")),
          blackbox_structure<SpinLocked<D>>(about("sl", what + " behind one spin lock")),
          blackbox_structure<RwLocked<D>>(about("rwl", what + " behind one distributed readers-writer lock")),
          blackbox_structure<FlatCombining<D>>(about("fc", what + " under flat combining")),
          blackbox_structure<FlatCombiningRw<D>>(
              about("fcplus", what + " under flat combining, reads under a readers-writer lock"))};
}

}  // namespace cdsb::bench

// ---- the registration line ------------------------------------------------------------------

// A registration line (inside a file's add_<file><Shard>, whose first statement names the
// file's shard count as `constexpr int shards`): instantiated in one shard only, so the
// expression's templates compile once. A macro because only the preprocessor can number the
// lines (__COUNTER__) without a hand-written index.
#define CDSB_REGISTER(...) CDSB_REGISTER_AT(__COUNTER__, __VA_ARGS__)
#define CDSB_REGISTER_AT(index, ...)           \
  if constexpr ((index) % shards == Shard) {   \
    shard.add((index), __VA_ARGS__);           \
  }
