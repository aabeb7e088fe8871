// The structure-independent part of the set workload (set_workload.hpp), compiled once.
#include "bench/workloads/set_workload.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <thread>

namespace cdsb::bench {

SetWorkloadCore::SetWorkloadCore(const TrialContext& ctx, Traits traits)
    : cfg_(ctx.config),
      traits_(traits),
      keys_(cfg_.distribution, cfg_.key_range, thread_seed(ctx.trial_seed, -1)),
      update_mix_(OpMix::from_percent(cfg_.insert_pct, cfg_.delete_pct, cfg_.rq_pct, cfg_.find_or_insert_pct, cfg_.assign_pct)),
      plan_seed_(thread_seed(ctx.trial_seed, -3)),
      target_size_(steady_state_size(cfg_)),
      tolerance_(static_cast<std::int64_t>(cfg_.prefill_tolerance * static_cast<double>(target_size_))) {
  const OpMix rq_only = OpMix::from_percent(0, 0, 100);
  states_.reserve(cfg_.total_threads());
  for (int tid = 0; tid < cfg_.total_threads(); ++tid) {
    auto& st = states_.emplace_back(cfg_, ctx.trial_seed, tid, tid < cfg_.threads ? update_mix_ : rq_only);
    if (cfg_.rq_pct > 0 || tid >= cfg_.threads) st->rq_out.reserve(cfg_.rq_size);
  }
  const double ins = cfg_.insert_pct + cfg_.find_or_insert_pct, del = cfg_.delete_pct;
  prefill_mix_ = OpMix::from_percent(ins + del > 0 ? 100.0 * ins / (ins + del) : 50.0, 0, 0);
}

std::int64_t SetWorkloadCore::steady_state_size(const Config& c) {
  const double ins = c.insert_pct + c.find_or_insert_pct, del = c.delete_pct;
  const double fraction = ins + del > 0 ? ins / (ins + del) : 0.5;
  return static_cast<std::int64_t>(static_cast<double>(c.key_range) * fraction + 0.5);
}

std::uint64_t SetWorkloadCore::size_hint(const Config& c) {
  if (!c.presize) return 0;
  auto keys = static_cast<std::uint64_t>(steady_state_size(c));
  if (c.ops && c.prefill == PrefillMode::none) {
    const double inserts = static_cast<double>(*c.ops) * (c.insert_pct + c.find_or_insert_pct) / 100.0;
    keys = std::min<std::uint64_t>(keys, static_cast<std::uint64_t>(std::ceil(inserts)));
  }
  return keys;
}

void SetWorkloadCore::prefill_begin() {
  deadline_.start(cfg_.prefill_timeout_ms);
  if (prefill_skipped() || cfg_.prefill != PrefillMode::steady) return;
  aging_left_ = static_cast<std::int64_t>(cfg_.prefill_aging * static_cast<double>(cfg_.key_range));
  plan_ = PrefillPlan(cfg_.key_range, static_cast<std::uint64_t>(target_size_), plan_seed_,
                      [this](std::uint64_t) { return !deadline_.expired(0); });
}

std::optional<PrefillPlan::Chunk> SetWorkloadCore::next_chunk(std::uint64_t& iteration) {
  // Relaxed: the ticket only names the chunk this thread inserts.
  const std::size_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed);
  const auto& chunks = plan_.chunks();
  if (c >= chunks.size()) return std::nullopt;
  // Acquire, pairing with chunk_done's release: the earlier rounds' inserts happen before this
  // chunk's searches, so they find those keys in place (the order is the shape).
  while (chunks_done_.load(std::memory_order_acquire) < chunks[c].chunks_before) {
    if (deadline_.expired(iteration++)) return std::nullopt;
    std::this_thread::yield();  // oversubscribed threads let the chunk's owner run
  }
  return chunks[c];
}

void SetWorkloadCore::chunk_done(std::int64_t added) {
  prefill_size_.fetch_add(added, std::memory_order_relaxed);
  chunks_done_.fetch_add(1, std::memory_order_release);
}

bool SetWorkloadCore::aging_step(ThreadState& st, bool& insert) {
  if (aging_left_.fetch_sub(1, std::memory_order_relaxed) <= 0) return false;
  const std::int64_t size = prefill_size_.load(std::memory_order_relaxed);
  insert = size < low() || (size <= high() && prefill_mix_.draw(st.rng.next()) == op_insert);
  return true;
}

void SetWorkloadCore::report_prefill(Json& j) const {
  const bool skipped = prefill_skipped();
  j["prefill"] = !traits_.stores_keys ? "skipped (the structure stores no keys)" : prefill_mode_name(cfg_.prefill);
  j["prefill_target_size"] = skipped ? 0 : target_size_;
  j["prefill_tolerance_keys"] = skipped ? 0 : tolerance_;
  j["prefill_aging_updates"] = skipped || cfg_.prefill != PrefillMode::steady
                                   ? 0 : static_cast<std::int64_t>(cfg_.prefill_aging * static_cast<double>(cfg_.key_range));
  j["prefill_size"] = prefill_size_.load(std::memory_order_relaxed);
  report_prefill_work(j, states_, !prefill_failed());
}

namespace {

// The keys whose contains() must agree with the traversal: every key of a small range;
// else sample_size random keys of the range (their truth read off the traversal by binary
// search) and about sample_size of the keys the traversal visits (present by definition).
// Bounded, so validation costs one traversal plus 2 * sample_size searches at any size.
constexpr std::uint64_t sample_size = 1u << 13;
constexpr std::int64_t parallel_validation_size = 1 << 16;  // smaller sets: one thread

struct ContainsSample {
  std::vector<std::uint64_t> keys;  // random keys first (sorted), then visited keys
  std::vector<char> present;        // per key: seen by the traversal
  std::size_t random = 0;           // how many of keys are the sorted random ones
  std::int64_t stride = 1;          // every stride-th visited key joins the sample
  bool exhaustive = false;          // keys[i] == i + 1 for every key of the range

  void saw(std::uint64_t k, std::int64_t index) {
    if (exhaustive) {
      if (k >= 1 && k <= keys.size()) present[k - 1] = 1;
      return;
    }
    const auto end = keys.begin() + static_cast<std::ptrdiff_t>(random);
    const auto it = std::lower_bound(keys.begin(), end, k);
    if (it != end && *it == k) present[it - keys.begin()] = 1;
    if (index % stride == 0 && keys.size() < random + sample_size) {
      keys.push_back(k);
      present.push_back(1);
    }
  }
};

ContainsSample draw_contains_sample(const Config& cfg, std::int64_t expected_size) {
  ContainsSample s;
  if (cfg.key_range <= 2 * sample_size) {
    s.exhaustive = true;
    s.keys.resize(cfg.key_range);
    for (std::uint64_t k = 0; k < cfg.key_range; ++k) s.keys[k] = k + 1;
    s.present.assign(s.keys.size(), 0);
    return s;
  }
  Xoshiro256StarStar rng;
  rng.seed(cfg.seed);
  s.keys.reserve(2 * sample_size);
  for (std::uint64_t i = 0; i < sample_size; ++i) s.keys.push_back(1 + uniform_below(rng, cfg.key_range));
  std::sort(s.keys.begin(), s.keys.end());
  s.keys.erase(std::unique(s.keys.begin(), s.keys.end()), s.keys.end());
  s.random = s.keys.size();
  s.present.assign(s.random, 0);
  s.stride = std::max<std::int64_t>(1, expected_size / static_cast<std::int64_t>(sample_size));
  return s;
}

}  // namespace

bool SetWorkloadCore::finish(Json& j) {
  report_counts<SetWorkloadCore>(j, states_);
  std::uint64_t expected_sum = 0, rq_keys = 0, wrong_values_read = 0;
  std::int64_t expected_size = 0;
  for (const auto& st : states_) {
    expected_sum += st->key_sum;
    expected_size += st->size;
    rq_keys += st->rq_keys;
    wrong_values_read += st->wrong_values;
  }
  j["range_query_keys_returned"] = rq_keys;

  // The structure's own invariant walk runs on a thread of its own beside the traversal when
  // the set is large: both only read the quiescent structure, and the user waits for
  // validation after every trial. The contains sample waits for both: a contains enters the
  // reclaimer, which may free retired nodes and count them, while a walk may read the counts.
  std::future<std::string> invariant_check;
  if (traits_.invariant_check) {
    // A thread of its own enters the structure as thread 0, whose worker has finished: a
    // peer's library serves only threads that did (libcds asserts it).
    const bool own_thread = expected_size >= parallel_validation_size;
    invariant_check = std::async(own_thread ? std::launch::async : std::launch::deferred, [this, own_thread] {
      if (own_thread) thread_start(0);
      std::string problem = check_invariants();
      if (own_thread) thread_finish(0);
      return problem;
    });
  }

  // One traversal gives the key sum, the size, the keys outside the range, the search depths
  // (trees: for_each_key_depth visits the same keys) and the truth for the contains sample.
  ContainsSample sample = draw_contains_sample(cfg_, expected_size);
  std::string error;
  std::uint64_t actual_sum = 0, out_of_range = 0, depth_sum = 0, deepest = 0, wrong_values_held = 0;
  std::int64_t actual_size = 0;
  visit_keys([&](std::uint64_t k, std::size_t depth, bool value_belongs) {
    actual_sum += k;
    out_of_range += k < 1 || k > cfg_.key_range;
    wrong_values_held += !value_belongs;
    sample.saw(k, actual_size++);
    depth_sum += depth;
    deepest = std::max<std::uint64_t>(deepest, depth);
  });
  j["expected_key_sum"] = expected_sum;
  j["actual_key_sum"] = actual_sum;
  j["expected_size"] = expected_size;
  j["actual_size"] = actual_size;
  if (out_of_range) error = std::to_string(out_of_range) + " keys outside [1, key_range]";
  else if (actual_size != expected_size) error = "size differs from successful inserts minus deletes";
  else if (actual_sum != expected_sum) error = "key sum differs from inserted minus deleted keys";
  if (traits_.map_values) {
    j["wrong_values_read"] = wrong_values_read;
    j["wrong_values_held"] = wrong_values_held;
    if (error.empty() && wrong_values_read)
      error = "finds returned a value not written for their key: " + std::to_string(wrong_values_read) + " times";
    if (error.empty() && wrong_values_held)
      error = "keys hold a value not written for them: " + std::to_string(wrong_values_held) + " keys";
  }

  std::string invariants = "not provided";
  if (traits_.invariant_check) {
    invariants = invariant_check.get();
    if (!invariants.empty() && error.empty()) error = "invariant violated: " + invariants;
    if (invariants.empty()) invariants = "ok";
  }

  std::uint64_t mismatches = 0, first_bad = 0;
  for (std::size_t i = 0; i < sample.keys.size(); ++i) {
    if (contains_quiescent(sample.keys[i]) != static_cast<bool>(sample.present[i]) && mismatches++ == 0)
      first_bad = sample.keys[i];
  }
  j["invariants"] = invariants;
  if (traits_.node_bytes) j["node_bytes"] = *traits_.node_bytes;
  if (traits_.search_depths) {
    // The tree's shape: nodes a search for a present key reads (why a balanced tree is or
    // is not faster; see docs/results-bst.md).
    j["search_depth_mean"] = actual_size ? static_cast<double>(depth_sum) / static_cast<double>(actual_size) : 0.0;
    j["search_depth_max"] = deepest;
  }
  put_structure_stats(j);

  j["contains_probes"] = sample.keys.size();
  j["contains_mismatches"] = mismatches;
  if (mismatches && error.empty()) error = "contains(" + std::to_string(first_bad) + ") disagrees with the set's contents";

  j["validation"] = error.empty() ? "PASS" : "FAIL";
  if (!error.empty()) j["validation_error"] = error;
  return error.empty();
}

}  // namespace cdsb::bench
