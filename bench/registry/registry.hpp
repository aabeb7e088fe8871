// The registry: the one place where structures are named. The harness, the correctness
// tools, the tests, the experiments and the applications find structures only through it,
// and select them by the data of their entry (kind, library, variants), never by name.
//
// This header is light on purpose (the command line, lincheck and the applications include
// it): an entry's functions are plain function pointers whose types need only be declared.
// Entries are made by bench/registry/register.hpp, one line per structure in
// bench/registry/structures.cpp (ours), peers.cpp and black_box.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cdsb::bench {

struct TrialContext;
struct TrialOutcome;
struct RecordedHistory;
struct DifferentialRun;
struct DigestMapRequest;
class DigestMap;  // bench/registry/app_structures.hpp
class ItemQueue;

// What a structure is, and so which workload runs it and which checker model fits it.
enum class StructureKind {
  ordered_set,    // insert/erase/contains on keys, kept in order (lists, trees, skip lists)
  unordered_map,  // the same operations, hashed (a map's value is the key in the set workload)
  queue,          // FIFO: enqueue/dequeue
  stack,          // LIFO: push/pop
  black_box,      // a sequential structure made concurrent by a black-box method (NR, SL, ...)
};

inline constexpr StructureKind all_structure_kinds[] = {StructureKind::ordered_set, StructureKind::unordered_map,
                                                         StructureKind::queue, StructureKind::stack,
                                                         StructureKind::black_box};

constexpr std::string_view kind_name(StructureKind k) {
  switch (k) {
    case StructureKind::ordered_set: return "ordered_set";
    case StructureKind::unordered_map: return "unordered_map";
    case StructureKind::queue: return "queue";
    case StructureKind::stack: return "stack";
    case StructureKind::black_box: return "black_box";
  }
  return "?";
}

// Queues and stacks run the queue workload (a stack in LIFO mode) and take its options.
constexpr bool runs_queue_workload(StructureKind k) { return k == StructureKind::queue || k == StructureKind::stack; }

std::optional<StructureKind> parse_kind(std::string_view name);
std::string kind_names();  // "ordered_set, unordered_map, ..." for messages

// The one definition of a test variant, i.e. of what the correctness matrix (differential,
// lincheck, the sanitizer trees) runs: the default reclaimer with every allocator, and every
// reclaimer with the default allocator. The sanitizer trees keep the default allocator only:
// the pools recycle nodes without the sanitizers knowing, and jemalloc (the segregated
// allocators) is not instrumented, so a use-after-free inside them is invisible to ASan, and
// TSan reports jemalloc's hand-over of freed memory between threads as races. The release
// tree's matrix runs every allocator; the allocators themselves run under the sanitizers in
// the unit tests (tests/unit/test_reclaim.cpp). Nor do the sanitizer trees build `none` (unless
// it is the default): it never frees a node, so a sanitizer finds in it nothing that another
// reclaimer's run does not show (a use-after-free or a race on a reused node needs a free);
// its differential and linearizability checks run in the release tree.
constexpr bool is_test_variant([[maybe_unused]] std::string_view reclaimer, std::string_view allocator,
                               [[maybe_unused]] std::string_view default_reclaimer, std::string_view default_allocator) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return allocator == default_allocator && (reclaimer != "none" || reclaimer == default_reclaimer);
#else
  return reclaimer == default_reclaimer || allocator == default_allocator;
#endif
}

// One instantiation of a structure: its reclaimer and its nodes' allocation policy.
struct Variant {
  std::string reclaimer, allocator;
  bool test = false;  // is_test_variant: recorded and checked by the correctness matrix
  bool operator==(const Variant&) const = default;
};

struct StructureEntry {
  std::string name;         // for people: --ds NAME
  std::string description;  // one line, shown by --list
  StructureKind kind = StructureKind::ordered_set;
  std::string library = "cdsbench";  // ours, or the peer library it comes from
  // Black-box structures: the method (nr, sl, rwl, fc, fcplus, lf) and the sequential
  // structure it runs; empty otherwise.
  std::string method, sequential;
  // The variants built in this tree, the default first. Sanitizer trees build the test
  // variants only (CDSBENCH_TEST_VARIANTS_ONLY).
  std::vector<Variant> variants;
  std::string layout;  // node sizes, shown by --list ("" when not applicable)
  bool range_queries = false;
  bool map_operations = false;  // a ConcurrentMap: find, find_or_insert (--find-or-insert)
  bool map_assign = false;      // and a linearizable assign (HasAssign: --assign)
  // Maps also built with other keys: for each --keys value ("digest", "bytes"), the named
  // hashes built with it, each with the default variant's reclaimer and allocator; empty:
  // 64-bit keys only.
  std::map<std::string, std::vector<std::string>> key_hashes;
  bool search_depths = false;  // reports search_depth_mean/max (trees)
  // False for a structure whose erase must not run beside other operations (a peer:
  // oneTBB's concurrent_map): deletes are refused with more than one thread; lincheck and
  // the stress test run it on inserts and searches.
  bool concurrent_erase = true;
  bool node_replicated = false;      // takes --nr-replicas and --nr-log-entries
  std::uint64_t max_key_range = 0;   // 0: no limit of its own (the synthetic buffer has one)
  // Queues and stacks: native batch operations (else batches are single operations); the
  // items a bounded queue holds (0: unbounded); FIFO per producer only, not linearizable as a
  // queue (moodycamel), or relaxed (reorders items: reported, not failed); a stack's LIFO.
  bool native_batch = false;
  std::uint64_t capacity = 0;
  std::string order;  // "fifo" (linearizable), "per_producer_fifo", "relaxed", "lifo"; "" for other kinds

  TrialOutcome (*run_trial)(const TrialContext&) = nullptr;
  // Why the structure cannot run on this machine ("" if it can; e.g. LCRQ without cmpxchg16b),
  // or null when it always can.
  std::string (*unavailable_reason)() = nullptr;

  // Correctness toolkit (null for `null`, which by design stores nothing).
  std::string model;  // the lincheck checker model its histories follow ("set", "stack", ...)
  RecordedHistory (*record_history)(const TrialContext&) = nullptr;  // test variants only
  std::string (*differential)(const DifferentialRun&) = nullptr;       // test variants only
  bool deliberately_broken = false;  // test-only structures the checks must catch
  // A peer's linearizability bug, found by lincheck and documented with its evidence:
  // lincheck's `all` and patterns leave the structure out and print this; naming it checks it.
  std::string known_violation;

  // For the applications (app_structures.hpp): a map's build with digest (or byte-string) keys
  // and the hash named, or null when it has none with that hash; null for a structure that is
  // not such a map (64-bit keys only, no linearizable assign, or its line keeps it from them). A queue's default variant in
  // a PipelineQueue; null for the other kinds and for a relaxed queue.
  std::unique_ptr<DigestMap> (*make_digest_map)(const DigestMapRequest&) = nullptr;
  std::vector<std::string> digest_map_hashes;  // the hashes make_digest_map builds
  std::unique_ptr<ItemQueue> (*make_item_queue)(int threads) = nullptr;

  const Variant& default_variant() const { return variants.front(); }
  const Variant* find_variant(std::string_view reclaimer, std::string_view allocator) const;
  std::vector<Variant> test_variants() const;
  std::vector<std::string> reclaimers() const;  // in variant order, each once
  std::vector<std::string> allocators() const;
};

class Registry {
 public:
  void add(StructureEntry entry) { entries_.push_back(std::move(entry)); }
  const StructureEntry* find(std::string_view name) const;
  const std::vector<StructureEntry>& entries() const { return entries_; }

 private:
  std::vector<StructureEntry> entries_;
};

// The built-in structures (bench/registry/structures.cpp, peers.cpp, black_box.cpp), in the
// order they are listed there; tests add their deliberately broken ones to a copy.
Registry builtin_registry();

}  // namespace cdsb::bench
