// The registry: the one place where structures are named (bench/registry.cpp). The harness,
// the tests and later tools find structures only through it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/set_workload.hpp"
#include "bench/trial.hpp"

namespace cdsb::bench {

struct StructureEntry {
  std::string name;
  std::string description;              // one line, shown by --list
  std::vector<std::string> reclaimers;  // supported reclaimers; the first is the default
  std::vector<std::string> allocators;  // supported allocators; the first is the default
  bool range_queries = false;
  std::function<TrialOutcome(const TrialContext&)> run_trial;
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
  return {std::move(name), std::move(description), std::move(reclaimers), std::move(allocators),
          HasRangeQuery<S>, [](const TrialContext& ctx) {
            SetWorkload<S> workload(ctx);
            return run_trial(workload, ctx);
          }};
}

// The built-in structures; tests add their deliberately broken ones to a copy.
Registry builtin_registry();

}  // namespace cdsb::bench
