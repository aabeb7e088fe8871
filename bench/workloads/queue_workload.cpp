// The queue-independent part of the queue workload (queue_workload.hpp), compiled once.
#include "bench/workloads/queue_workload.hpp"

#include <algorithm>
#include <cmath>

namespace cdsb::bench {

QueueWorkloadCore::QueueWorkloadCore(const TrialContext& ctx, std::string_view order)
    : cfg_(ctx.config),
      order_(order),
      fifo_(order == "fifo" || order == "per_producer_fifo"),
      dequeue_below_(static_cast<std::uint64_t>(std::ldexp(1 - cfg_.enqueue_pct / 100, 64))) {
  const int n = cfg_.total_threads();
  const bool split = cfg_.queue_mode == QueueMode::split;
  const int producers = split ? cfg_.producers : n;
  states_.reserve(n);
  for (int tid = 0; tid < n; ++tid) {
    auto& st = states_.emplace_back(cfg_, ctx.trial_seed, tid, OpMix{});
    st->role = !split ? Role::both : tid < producers ? Role::producer : Role::consumer;
    if (cfg_.items && st->role != Role::consumer)
      st->share = *cfg_.items / producers + (static_cast<std::uint64_t>(tid) < *cfg_.items % producers);
  }
}

std::uint64_t QueueWorkloadCore::prefill_share(int tid) const {
  const std::uint64_t total = cfg_.prefill == PrefillMode::none ? 0 : cfg_.prefill_items.value_or(0);
  const auto n = static_cast<std::uint64_t>(cfg_.total_threads());
  return total / n + (static_cast<std::uint64_t>(tid) < total % n);
}

void QueueWorkloadCore::report_prefill(Json& j) const {
  std::uint64_t items = 0;
  for (const auto& st : states_) items += st->prefilled;
  j["prefill"] = items ? "items" : "none";
  j["prefill_target_size"] = cfg_.prefill == PrefillMode::none ? 0 : cfg_.prefill_items.value_or(0);
  j["prefill_items"] = items;
  report_prefill_work(j, states_, !prefill_failed());
}

std::string QueueWorkloadCore::validate(Json& j, const std::vector<std::uint64_t>& remaining) const {
  report_counts<QueueWorkloadCore>(j, states_);
  const int producers = static_cast<int>(states_.size());
  std::uint64_t enqueued = 0, dequeued = 0, log_bytes = 0;
  for (const auto& st : states_) {
    enqueued += st->produced - st->prefilled;
    dequeued += st->dequeued;
    log_bytes += st->log.bytes();
  }
  const double elapsed_s = j.value("elapsed_ms", 0.0) / 1e3;
  j["queue_order"] = order_;
  j["items_enqueued"] = enqueued;
  j["items_dequeued"] = dequeued;
  j["items_remaining"] = remaining.size();
  j["throughput_items_per_s"] = elapsed_s > 0 ? static_cast<double>(dequeued) / elapsed_s : 0.0;
  j["enqueue_items_per_s"] = elapsed_s > 0 ? static_cast<double>(enqueued) / elapsed_s : 0.0;
  j["item_log_bytes"] = log_bytes;
  if (j.contains("structure_memory_bytes") && !remaining.empty())
    j["memory_per_queued_item_bytes"] = j["structure_memory_bytes"].get<double>() / static_cast<double>(remaining.size());

  // Each producer's items 0..produced-1 must each be seen exactly once: in a log or left over.
  std::vector<std::vector<bool>> seen(producers);
  for (int p = 0; p < producers; ++p) seen[p].resize(states_[p]->produced);
  std::vector<std::uint64_t> last(producers);  // per producer: 1 + the last sequence number taken
  std::vector<std::uint64_t> taken_end(producers, 0);  // per producer: 1 + the largest one any consumer took
  std::uint64_t reorders = 0;
  std::string error;
  auto check = [&](std::uint64_t item, const char* where) {
    const std::uint64_t producer_plus_one = item >> sequence_bits, sequence = item & ((std::uint64_t{1} << sequence_bits) - 1);
    if (producer_plus_one == 0 || producer_plus_one > static_cast<std::uint64_t>(producers) ||
        sequence >= seen[producer_plus_one - 1].size()) {
      if (error.empty()) error = "item " + std::to_string(item) + " " + where + " was never enqueued";
      return false;
    }
    const int p = static_cast<int>(producer_plus_one - 1);
    if (seen[p][sequence]) {
      if (error.empty())
        error = "item " + std::to_string(sequence) + " of producer " + std::to_string(p) + " " + where + " was dequeued twice";
      return false;
    }
    seen[p][sequence] = true;
    if (sequence + 1 <= last[p]) ++reorders;  // an earlier item of the same producer came after it
    last[p] = sequence + 1;
    return true;
  };
  for (const auto& st : states_) {
    std::fill(last.begin(), last.end(), 0);
    st->log.for_each([&](std::uint64_t item) { check(item, "dequeued"); });
    for (int p = 0; p < producers; ++p) taken_end[p] = std::max(taken_end[p], last[p]);
  }
  std::fill(last.begin(), last.end(), 0);
  for (const std::uint64_t item : remaining) {
    if (!check(item, "left in the queue")) continue;
    const int p = static_cast<int>((item >> sequence_bits) - 1);
    if ((item & ((std::uint64_t{1} << sequence_bits) - 1)) < taken_end[p]) ++reorders;  // left behind a later one taken
  }
  for (int p = 0; p < producers && error.empty(); ++p) {
    const auto lost = std::find(seen[p].begin(), seen[p].end(), false);
    if (lost != seen[p].end())
      error = "item " + std::to_string(lost - seen[p].begin()) + " of producer " + std::to_string(p) +
              " was lost (neither dequeued nor left in the queue)";
  }
  j["fifo_reorders"] = reorders;
  if (error.empty() && fifo_ && reorders)
    error = std::to_string(reorders) + " items left their producer's FIFO order";
  return error;
}

bool QueueWorkloadCore::conclude(Json& j, const std::string& error) {
  j["validation"] = error.empty() ? "PASS" : "FAIL";
  if (!error.empty()) j["validation_error"] = error;
  return error.empty();
}

}  // namespace cdsb::bench
