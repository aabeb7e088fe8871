// The set workload: search / insert / delete / range query on keys, with key-sum validation.
//
// Each operation's type is drawn independently from the configured rates (P4) and its key
// from the configured distribution, range-query start keys included (P13), with the
// thread's own generator seeded from the master seed and its thread id (P2). Each thread
// keeps the sum of the keys it inserted minus those it deleted, and its size change; at
// the end the structure's contents must match both (P6), its own invariant check must
// pass, and `contains` must agree with the contents on a probe of keys.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/core/report.hpp"
#include "bench/harness/make_structure.hpp"
#include "bench/harness/trial_context.hpp"
#include "bench/workloads/op_mix.hpp"
#include "bench/workloads/prefill_plan.hpp"
#include "bench/workloads/workload.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/random/any_generator.hpp"
#include "cdsbench/random/distributions.hpp"
#include "cdsbench/random/reseeding.hpp"
#include "cdsbench/random/seeding.hpp"
#include "cdsbench/set/concepts.hpp"

namespace cdsb::bench {

// A structure that keeps no keys (the `null` set) skips prefill and validates as empty.
template <class S>
consteval bool stores_keys_of() {
  if constexpr (requires { S::stores_keys; }) return S::stores_keys;
  else return true;
}
template <class S>
constexpr bool stores_keys = stores_keys_of<S>();

// A structure whose erase must not run beside other operations (a peer: oneTBB's
// concurrent_map, whose only erase is unsafe_erase) says `concurrent_erase = false`: the
// command line then refuses deletes when more than one thread runs, and steady prefill ages
// its shape on thread 0 alone (prefill_correct).
template <class S>
consteval bool erases_concurrently_of() {
  if constexpr (requires { S::concurrent_erase; }) return S::concurrent_erase;
  else return true;
}
template <class S>
constexpr bool erases_concurrently = erases_concurrently_of<S>();

// Recorder: NoRecorder for measurement, HistoryRecorder for linearizability histories.
template <ConcurrentSet S, class Recorder = NoRecorder>
class SetWorkload {
 public:
  using Key = typename S::key_type;
  static constexpr int op_type_count = 4;
  static const char* op_type_name(int op) {
    static constexpr std::array names{"search", "insert", "delete", "range_query"};
    return names[op];
  }

  struct ThreadState : ThreadBasics<op_type_count> {
    using ThreadBasics<op_type_count>::ThreadBasics;
    std::uint64_t key_sum = 0;  // Σ inserted − Σ deleted keys, modulo 2^64
    std::int64_t size = 0;      // successful inserts − successful deletes
    std::uint64_t rq_keys = 0;  // keys returned by range queries
    std::vector<Key> rq_out;
  };

  explicit SetWorkload(const TrialContext& ctx)
    requires(!Recorder::enabled)
      : SetWorkload(ctx, Recorder{}) {}

  SetWorkload(const TrialContext& ctx, Recorder recorder)
      : cfg_(ctx.config),
        recorder_(std::move(recorder)),
        set_(make_structure<S>(cfg_.total_threads(), cfg_.reclaim_eager)),
        keys_(cfg_.distribution, cfg_.key_range, thread_seed(ctx.trial_seed, -1)),
        update_mix_(OpMix::from_percent(cfg_.insert_pct, cfg_.delete_pct, cfg_.rq_pct)),
        plan_seed_(thread_seed(ctx.trial_seed, -3)),
        target_size_(steady_state_size(cfg_)),
        tolerance_(static_cast<std::int64_t>(cfg_.prefill_tolerance * static_cast<double>(target_size_))) {
    const OpMix rq_only = OpMix::from_percent(0, 0, 100);
    states_.reserve(cfg_.total_threads());
    for (int tid = 0; tid < cfg_.total_threads(); ++tid) {
      auto& st = states_.emplace_back(cfg_, ctx.trial_seed, tid, tid < cfg_.threads ? update_mix_ : rq_only);
      if (cfg_.rq_pct > 0 || tid >= cfg_.threads) st->rq_out.reserve(cfg_.rq_size);
    }
    const double ins = cfg_.insert_pct, del = cfg_.delete_pct;
    prefill_mix_ = OpMix::from_percent(ins + del > 0 ? 100.0 * ins / (ins + del) : 50.0, 0, 0);
  }

  // Uniform keys: R × ins / (ins + del); 50% when the workload has no updates. A key's
  // stationary presence probability is ins / (ins + del) whatever its access frequency, so
  // this target holds for every key distribution.
  static std::int64_t steady_state_size(const Config& c) {
    const double ins = c.insert_pct, del = c.delete_pct;
    const double fraction = ins + del > 0 ? ins / (ins + del) : 0.5;
    return static_cast<std::int64_t>(static_cast<double>(c.key_range) * fraction + 0.5);
  }

  S& structure() { return *set_; }
  const Recorder& recorder() const { return recorder_; }
  ThreadState& state(int tid) { return *states_[tid]; }

  void thread_start(int tid) {
    if constexpr (HasThreadHooks<S>) set_->thread_init(tid);
  }
  void thread_finish(int tid) {
    if constexpr (HasThreadHooks<S>) set_->thread_exit(tid);
  }

  // Draws the next operation and key of a thread (exposed so tests can check streams).
  std::pair<int, Key> draw(ThreadState& st) const {
    const int op = st.mix.draw(st.rng.next());
    return {op, static_cast<Key>(keys_(st.rng))};
  }

  // One measured operation.
  int step(int tid, ThreadState& st) {
    const auto [op, key] = draw(st);
    std::uint64_t call_ns = 0;
    if constexpr (Recorder::enabled) call_ns = call_stamp_ns();
    bool ok;
    switch (op) {
      case op_insert:
        ok = set_->insert(tid, key, key);
        if (ok) {
          st.key_sum += key;
          ++st.size;
        }
        break;
      case op_delete:
        ok = set_->erase(tid, key);
        if (ok) {
          st.key_sum -= key;
          --st.size;
        }
        break;
      case op_range_query:
        if constexpr (HasRangeQuery<S>) {
          const Key hi = key + std::min<Key>(cfg_.rq_size - 1, cfg_.key_range - key);
          const std::size_t found = set_->range_query(tid, key, hi, st.rq_out);
          st.rq_keys += found;
          ok = found > 0;
        } else {
          ok = false;  // rejected by the command line: the structure has no range_query
        }
        break;
      default:  // op_read: a search
        ok = set_->contains(tid, key);
    }
    if constexpr (Recorder::enabled) {
      static constexpr std::array model_names{"contains", "insert", "erase", "range_query"};
      const auto k = static_cast<std::int64_t>(key);
      recorder_.record(tid, {model_names[op], {k, k}, op == op_insert ? 2 : 1, ok, true, call_ns, return_stamp_ns()});
    }
    st.count(op, ok);
    return op;
  }

  // ---- steady-state prefill by the measuring threads themselves (P5, P12) ----------------
  // steady: the threads build a uniform set of about the target size together, in the order
  // of a PrefillPlan (the shape random inserts give, three times faster); then they age it
  // with key_range x --prefill-aging updates drawn from the configured insert:delete ratio,
  // steering back whenever the size leaves the tolerance; then thread 0 alone corrects the
  // few keys by which the set missed the tolerance. insert-only: uniform random inserts until
  // within the tolerance (the pitfall, for comparison). Prefill keys are uniform even for
  // skewed distributions: rarely drawn keys would take far longer to reach their stationary
  // state (see steady_state_size).
  // Called by the trial's own thread before it releases the workers into prefill.
  void prefill_begin() {
    deadline_.start(cfg_.prefill_timeout_ms);
    if (prefill_skipped() || cfg_.prefill != PrefillMode::steady) return;
    aging_left_ = static_cast<std::int64_t>(cfg_.prefill_aging * static_cast<double>(cfg_.key_range));
    plan_ = PrefillPlan(cfg_.key_range, static_cast<std::uint64_t>(target_size_), plan_seed_,
                        [this](std::uint64_t) { return !deadline_.expired(0); });
  }

  void prefill(int tid, ThreadState& st) {
    if (prefill_skipped()) return;
    if (cfg_.prefill == PrefillMode::insert_only) {
      for (std::uint64_t i = 0; prefill_size_.load(std::memory_order_relaxed) < target_size_ - tolerance_; ++i) {
        if (deadline_.expired(i)) return;
        prefill_update(tid, st, true);
      }
      return;
    }
    if (!build(tid, st)) return;
    if constexpr (erases_concurrently<S>) age(tid, st);  // else thread 0 alone, in prefill_correct
  }

  void prefill_correct(int tid, ThreadState& st) {
    plan_.release();
    if (prefill_skipped() || prefill_failed()) return;
    if constexpr (!erases_concurrently<S>) {
      if (cfg_.prefill == PrefillMode::steady) age(tid, st);
    }
    const std::int64_t low = target_size_ - tolerance_, high = target_size_ + tolerance_;
    for (std::uint64_t i = 0;; ++i) {
      const std::int64_t size = prefill_size_.load(std::memory_order_relaxed);
      if (size >= low && size <= high) break;
      if (deadline_.expired(i)) break;
      prefill_update(tid, st, size < low);
    }
  }

  bool prefill_failed() const { return deadline_.timed_out(); }

  void report_prefill(Json& j) const {
    const bool skipped = !stores_keys<S> || cfg_.prefill == PrefillMode::none;
    j["prefill"] = !stores_keys<S> ? "skipped (the structure stores no keys)" : prefill_mode_name(cfg_.prefill);
    j["prefill_target_size"] = skipped ? 0 : target_size_;
    j["prefill_tolerance_keys"] = skipped ? 0 : tolerance_;
    j["prefill_aging_updates"] = skipped || cfg_.prefill != PrefillMode::steady
                                     ? 0 : static_cast<std::int64_t>(cfg_.prefill_aging * static_cast<double>(cfg_.key_range));
    j["prefill_size"] = prefill_size_.load(std::memory_order_relaxed);
    report_prefill_work(j, states_, !prefill_failed());
  }

  // ---- quiescent validation (P6) and the workload's figures -------------------------------
  bool finish(Json& j) {
    report_counts<SetWorkload>(j, states_);
    std::uint64_t expected_sum = 0, rq_keys = 0;
    std::int64_t expected_size = 0;
    for (const auto& st : states_) {
      expected_sum += st->key_sum;
      expected_size += st->size;
      rq_keys += st->rq_keys;
    }
    j["range_query_keys_returned"] = rq_keys;

    // The structure's own invariant walk runs on a thread of its own beside the traversal when
    // the set is large: both only read the quiescent structure, and the user waits for
    // validation after every trial. The contains sample waits for both: a contains enters the
    // reclaimer, which may free retired nodes and count them, while a walk may read the counts.
    std::future<std::string> invariant_check;
    if constexpr (HasInvariantCheck<S>) {
      // A thread of its own enters the structure as thread 0, whose worker has finished: a
      // peer's library serves only threads that did (libcds asserts it).
      const bool own_thread = expected_size >= parallel_validation_size;
      invariant_check = std::async(own_thread ? std::launch::async : std::launch::deferred, [this, own_thread] {
        if (own_thread) thread_start(0);
        std::string problem = set_->check_invariants();
        if (own_thread) thread_finish(0);
        return problem;
      });
    }

    // One traversal gives the key sum, the size, the keys outside the range, the search depths
    // (trees: for_each_key_depth visits the same keys) and the truth for the contains sample.
    ContainsSample sample = draw_contains_sample(expected_size);
    std::string error;
    std::uint64_t actual_sum = 0, out_of_range = 0, depth_sum = 0, deepest = 0;
    std::int64_t actual_size = 0;
    auto visit = [&](Key k) {
      actual_sum += k;
      out_of_range += k < 1 || k > cfg_.key_range;
      sample.saw(k, actual_size++);
    };
    if constexpr (HasSearchDepths<S>) {
      set_->for_each_key_depth([&](Key k, std::size_t depth) {
        visit(k);
        depth_sum += depth;
        deepest = std::max<std::uint64_t>(deepest, depth);
      });
    } else {
      set_->for_each_key(visit);
    }
    j["expected_key_sum"] = expected_sum;
    j["actual_key_sum"] = actual_sum;
    j["expected_size"] = expected_size;
    j["actual_size"] = actual_size;
    if (out_of_range) error = std::to_string(out_of_range) + " keys outside [1, key_range]";
    else if (actual_size != expected_size) error = "size differs from successful inserts minus deletes";
    else if (actual_sum != expected_sum) error = "key sum differs from inserted minus deleted keys";

    std::string invariants = "not provided";
    if constexpr (HasInvariantCheck<S>) {
      invariants = invariant_check.get();
      if (!invariants.empty() && error.empty()) error = "invariant violated: " + invariants;
      if (invariants.empty()) invariants = "ok";
    }

    std::uint64_t mismatches = 0;
    Key first_bad{};
    for (std::size_t i = 0; i < sample.keys.size(); ++i) {
      if (set_->contains(0, sample.keys[i]) != static_cast<bool>(sample.present[i]) && mismatches++ == 0)
        first_bad = sample.keys[i];
    }
    j["invariants"] = invariants;
    if constexpr (requires { S::node_bytes; }) j["node_bytes"] = S::node_bytes;
    if constexpr (HasSearchDepths<S>) {
      // The tree's shape: nodes a search for a present key reads (why a balanced tree is or
      // is not faster; see docs/results-bst.md).
      j["search_depth_mean"] = actual_size ? static_cast<double>(depth_sum) / static_cast<double>(actual_size) : 0.0;
      j["search_depth_max"] = deepest;
    }
    // Reclamation and the structure's own counters, since construction (prefill included).
    if constexpr (requires(const S& s) { { s.stats() } -> std::same_as<StatsReport>; }) put_stats(j, set_->stats());

    j["contains_probes"] = sample.keys.size();
    j["contains_mismatches"] = mismatches;
    if (mismatches && error.empty())
      error = "contains(" + std::to_string(first_bad) + ") disagrees with the set's contents";

    j["validation"] = error.empty() ? "PASS" : "FAIL";
    if (!error.empty()) j["validation_error"] = error;
    return error.empty();
  }

 private:
  bool prefill_skipped() const { return !stores_keys<S> || cfg_.prefill == PrefillMode::none; }

  // Inserts the plan's keys, chunk by chunk, each chunk once every chunk of the earlier rounds
  // is in; false if the deadline passed (the plan's own scan included).
  bool build(int tid, ThreadState& st) {
    if (!plan_.complete()) return false;
    const auto& chunks = plan_.chunks();
    const auto& keys = plan_.keys();
    for (std::uint64_t i = 0;;) {
      // Relaxed: the ticket only names the chunk this thread inserts.
      const std::size_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks.size()) return true;
      // Acquire, pairing with the release below: the earlier rounds' inserts happen before this
      // chunk's searches, so they find those keys in place (the order is the shape).
      while (chunks_done_.load(std::memory_order_acquire) < chunks[c].chunks_before) {
        if (deadline_.expired(i++)) return false;
        std::this_thread::yield();  // oversubscribed threads let the chunk's owner run
      }
      std::int64_t added = 0;
      for (std::size_t k = chunks[c].begin; k < chunks[c].end; ++k) {
        if (deadline_.expired(i++)) return false;
        const auto key = static_cast<Key>(keys[k]);
        if (set_->insert(tid, key, key)) {
          st.key_sum += key;
          ++st.size;
          ++added;
        }
        ++st.prefill_ops;
      }
      prefill_size_.fetch_add(added, std::memory_order_relaxed);
      chunks_done_.fetch_add(1, std::memory_order_release);
    }
  }

  // Aging updates until the shared budget is spent (or the deadline passes).
  void age(int tid, ThreadState& st) {
    const std::int64_t low = target_size_ - tolerance_, high = target_size_ + tolerance_;
    bool insert;
    for (std::uint64_t i = 0; aging_step(st, low, high, insert); ++i) {
      if (deadline_.expired(i)) return;
      prefill_update(tid, st, insert);
    }
  }

  // One aging update: whether it inserts (else deletes), drawn from the configured
  // insert:delete ratio and steered back into the tolerance; false once the budget is spent.
  bool aging_step(ThreadState& st, std::int64_t low, std::int64_t high, bool& insert) {
    if (aging_left_.fetch_sub(1, std::memory_order_relaxed) <= 0) return false;
    const std::int64_t size = prefill_size_.load(std::memory_order_relaxed);
    insert = size < low || (size <= high && prefill_mix_.draw(st.rng.next()) == op_insert);
    return true;
  }

  void prefill_update(int tid, ThreadState& st, bool insert) {
    const Key k = static_cast<Key>(1 + uniform_below(st.rng, cfg_.key_range));
    if (insert) {
      if (set_->insert(tid, k, k)) {
        st.key_sum += k;
        ++st.size;
        prefill_size_.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (set_->erase(tid, k)) {
      st.key_sum -= k;
      --st.size;
      prefill_size_.fetch_sub(1, std::memory_order_relaxed);
    }
    ++st.prefill_ops;
  }

  // The keys whose contains() must agree with the traversal: every key of a small range;
  // else sample_size random keys of the range (their truth read off the traversal by binary
  // search) and about sample_size of the keys the traversal visits (present by definition).
  // Bounded, so validation costs one traversal plus 2 * sample_size searches at any size.
  static constexpr std::uint64_t sample_size = 1u << 13;
  static constexpr std::int64_t parallel_validation_size = 1 << 16;  // smaller sets: one thread
  struct ContainsSample {
    std::vector<Key> keys;      // random keys first (sorted), then visited keys
    std::vector<char> present;  // per key: seen by the traversal
    std::size_t random = 0;     // how many of keys are the sorted random ones
    std::int64_t stride = 1;    // every stride-th visited key joins the sample
    bool exhaustive = false;    // keys[i] == i + 1 for every key of the range

    void saw(Key k, std::int64_t index) {
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

  ContainsSample draw_contains_sample(std::int64_t expected_size) const {
    ContainsSample s;
    if (cfg_.key_range <= 2 * sample_size) {
      s.exhaustive = true;
      s.keys.resize(cfg_.key_range);
      for (std::uint64_t k = 0; k < cfg_.key_range; ++k) s.keys[k] = static_cast<Key>(k + 1);
      s.present.assign(s.keys.size(), 0);
      return s;
    }
    Xoshiro256StarStar rng;
    rng.seed(cfg_.seed);
    s.keys.reserve(2 * sample_size);
    for (std::uint64_t i = 0; i < sample_size; ++i) s.keys.push_back(static_cast<Key>(1 + uniform_below(rng, cfg_.key_range)));
    std::sort(s.keys.begin(), s.keys.end());
    s.keys.erase(std::unique(s.keys.begin(), s.keys.end()), s.keys.end());
    s.random = s.keys.size();
    s.present.assign(s.random, 0);
    s.stride = std::max<std::int64_t>(1, expected_size / static_cast<std::int64_t>(sample_size));
    return s;
  }

  const Config& cfg_;
  Recorder recorder_;
  std::unique_ptr<S> set_;
  KeyDistribution keys_;
  OpMix update_mix_, prefill_mix_;
  std::vector<Padded<ThreadState>> states_;

  const std::uint64_t plan_seed_;
  const std::int64_t target_size_, tolerance_;
  PrefillPlan plan_;  // steady: written by prefill_begin before the workers start
  // Prefill coordination. Relaxed but for chunks_done_ (see build): they only steer which
  // operation a thread runs next (a stale read costs an extra insert or delete, which thread
  // 0's correction absorbs); the barrier after prefill publishes the structure and every count.
  alignas(false_sharing_range) std::atomic<std::int64_t> prefill_size_{0};  // exact while prefilling
  alignas(false_sharing_range) std::atomic<std::int64_t> aging_left_{0};
  alignas(false_sharing_range) std::atomic<std::size_t> next_chunk_{0};
  alignas(false_sharing_range) std::atomic<std::size_t> chunks_done_{0};
  PrefillDeadline deadline_;
};

}  // namespace cdsb::bench
