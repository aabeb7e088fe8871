// The registry: the one place where structures are named (bench/registry.cpp). The harness,
// the tests and later tools find structures only through it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/differential.hpp"
#include "bench/history.hpp"
#include "bench/set_workload.hpp"
#include "bench/trial.hpp"

namespace cdsb::bench {

// One recorded history: the trial's outcome (validated as usual) and every thread's events.
struct RecordedHistory {
  TrialOutcome outcome;
  HistoryRecorder recorder;
};

struct StructureEntry {
  std::string name;
  std::string description;              // one line, shown by --list
  std::vector<std::string> reclaimers;  // supported reclaimers; the first is the default
  std::vector<std::string> allocators;  // supported allocators; the first is the default
  bool range_queries = false;
  std::function<TrialOutcome(const TrialContext&)> run_trial;

  // Correctness toolkit (empty for `null`, which by design is not a set: it stores nothing).
  std::string model;  // the lincheck checker model its histories follow ("set", ...)
  std::function<RecordedHistory(const TrialContext&)> record_history;
  std::function<std::string(std::uint64_t seed, int ops, std::uint64_t key_range)> differential;
  bool deliberately_broken = false;  // test-only structures the checks must catch
};

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

// A set structure run by the set workload through the one measured loop.
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
  e.run_trial = [](const TrialContext& ctx) {
    SetWorkload<S> workload(ctx);
    return run_trial(workload, ctx);
  };
  if constexpr (stores_keys<S>) {
    e.model = "set";
    e.record_history = [](const TrialContext& ctx) {
      const Config& c = ctx.config;
      const std::size_t per_thread = c.ops ? *c.ops / c.threads + 1 : 1024;
      SetWorkload<S, HistoryRecorder> workload(ctx, HistoryRecorder(c.total_threads(), per_thread));
      TrialOutcome outcome = run_trial(workload, ctx);
      return RecordedHistory{std::move(outcome), workload.recorder()};
    };
    e.differential = &set_differential<S>;
  }
  return e;
}

// The built-in structures; tests add their deliberately broken ones to a copy.
Registry builtin_registry();

}  // namespace cdsb::bench
