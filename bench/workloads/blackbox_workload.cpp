// The method-independent part of the black-box workload (blackbox_workload.hpp), compiled once.
#include "bench/workloads/blackbox_workload.hpp"

namespace cdsb::bench {

BlackBoxWorkloadCore::BlackBoxWorkloadCore(const TrialContext& ctx, PrefillRule rule)
    : cfg_(ctx.config),
      keys_(cfg_.distribution, cfg_.key_range, thread_seed(ctx.trial_seed, -1)),
      prefill_keys_(cfg_.key_range, thread_seed(ctx.trial_seed, -2)),
      prefill_target_(prefill_target(cfg_, rule)) {
  const OpMix mix = OpMix::from_percent(cfg_.insert_pct, cfg_.delete_pct, 0);
  states_.reserve(cfg_.total_threads());
  for (int tid = 0; tid < cfg_.total_threads(); ++tid) {
    auto& st = states_.emplace_back(cfg_, ctx.trial_seed, tid, mix);
    if (cfg_.external_work) st->private_lines = std::make_unique<std::array<std::uint64_t, cache_line_size / 8>[]>(external_lines);
  }
}

std::uint64_t BlackBoxWorkloadCore::prefill_target(const Config& c, PrefillRule rule) {
  if (c.prefill == PrefillMode::none) return 0;
  std::uint64_t n = c.prefill_items.value_or(rule.paper_items);
  if (rule.distinct_keys || !c.prefill_items) n = std::min(n, c.key_range);
  return n;
}

std::optional<std::uint64_t> BlackBoxWorkloadCore::next_prefill_ticket(std::uint64_t iteration) {
  if (deadline_.expired(iteration)) return std::nullopt;
  // Relaxed: a ticket only names which item this thread adds; the barrier after prefill
  // publishes the structure and the counts.
  const std::uint64_t ticket = next_ticket_.fetch_add(1, std::memory_order_relaxed);
  if (ticket >= prefill_target_) return std::nullopt;
  return ticket;
}

void BlackBoxWorkloadCore::report_prefill(Json& j) const {
  j["prefill"] = prefill_target_ ? "items"
                 : cfg_.prefill == PrefillMode::none ? "none"
                                                     : "skipped (the structure has no items to fill)";
  j["prefill_target_size"] = prefill_target_;
  report_prefill_work(j, states_, !prefill_failed());
}

ItemTotals BlackBoxWorkloadCore::expected_totals(Json& j) const {
  report_counts<BlackBoxWorkloadCore>(j, states_);
  ItemTotals expected;
  for (const auto& st : states_) {
    expected.sum += st->item_sum;
    expected.count += st->items;
  }
  j["external_work_lines"] = cfg_.external_work;
  return expected;
}

std::string BlackBoxWorkloadCore::compare(Json& j, const std::string& invariants, ItemTotals expected, ItemTotals actual) const {
  std::string error;
  if (!invariants.empty()) error = "invariant violated: " + invariants;
  j["invariants"] = invariants.empty() ? "ok" : invariants;
  j["expected_items"] = expected.count;
  j["actual_items"] = actual.count;
  j["expected_item_checksum"] = expected.sum;
  j["actual_item_checksum"] = actual.sum;
  if (error.empty() && actual.count != expected.count) error = "item count differs from successful adds minus removes";
  if (error.empty() && actual.sum != expected.sum) error = "item checksum differs from items added minus removed";
  return error;
}

bool BlackBoxWorkloadCore::conclude(Json& j, const std::string& error) {
  j["validation"] = error.empty() ? "PASS" : "FAIL";
  if (!error.empty()) j["validation_error"] = error;
  return error.empty();
}

}  // namespace cdsb::bench
