// The set workload: search / insert / delete / range query on keys, with key-sum validation.
//
// Each operation's type is drawn independently from the configured rates (P4) and its key
// from the configured distribution, range-query start keys included (P13), with the
// thread's own generator seeded from the master seed and its thread id (P2). Each thread
// keeps the sum of the keys it inserted minus those it deleted, and its size change; at
// the end the structure's contents must match both (P6), its own invariant check must
// pass, and `contains` must agree with the contents on a probe of keys.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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

// Everything of the set workload that does not depend on the structure, compiled once
// (set_workload.cpp): the threads' generators and counts, the prefill plan and its
// coordination, the prefill report and the quiescent validation. SetWorkload<S> adds the
// structure's calls: the measured step, the prefill's inserts and deletes, and the hooks
// through which validation reads the quiescent structure. Keys are 64-bit here; a structure
// with a narrower key type gets them converted.
class SetWorkloadCore {
 public:
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
    std::vector<std::uint64_t> rq_out;
  };

  // What the core needs to know of the structure.
  struct Traits {
    bool stores_keys;       // false: the `null` set (no prefill, validates as empty)
    bool search_depths;     // visit_keys gives search depths
    bool invariant_check;   // check_invariants exists
    std::optional<std::size_t> node_bytes;
  };

  SetWorkloadCore(const TrialContext& ctx, Traits traits);
  virtual ~SetWorkloadCore() = default;

  // Uniform keys: R × ins / (ins + del); 50% when the workload has no updates. A key's
  // stationary presence probability is ins / (ins + del) whatever its access frequency, so
  // this target holds for every key distribution.
  static std::int64_t steady_state_size(const Config& c);

  ThreadState& state(int tid) { return *states_[tid]; }

  // Draws the next operation and key of a thread (exposed so tests can check streams).
  // Always inlined into the measured loop, with the generator and the key distribution:
  // GCC's heuristics otherwise leave one of them out of line there (0.5-1 ns per operation).
  [[gnu::always_inline]] std::pair<int, std::uint64_t> draw(ThreadState& st) const {
    const int op = st.mix.draw(st.rng.next());
    return {op, keys_(st.rng)};
  }

  virtual void thread_start(int tid) = 0;
  virtual void thread_finish(int tid) = 0;

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
  void prefill_begin();
  bool prefill_failed() const { return deadline_.timed_out(); }
  void report_prefill(Json& j) const;

  // ---- quiescent validation (P6) and the workload's figures -------------------------------
  bool finish(Json& j);

 protected:
  using KeyVisitor = std::function<void(std::uint64_t key, std::size_t depth)>;
  // The quiescent structure as validation reads it: every key once (with its search depth
  // when Traits::search_depths), contains, the structure's own invariant check, and its
  // reclamation and own counters since construction (prefill included).
  virtual void visit_keys(const KeyVisitor& visit) const = 0;
  virtual bool contains_quiescent(std::uint64_t key) = 0;
  virtual std::string check_invariants() const = 0;
  virtual void put_structure_stats(Json& j) const = 0;

  bool prefill_skipped() const { return !traits_.stores_keys || cfg_.prefill == PrefillMode::none; }
  std::int64_t low() const { return target_size_ - tolerance_; }
  std::int64_t high() const { return target_size_ + tolerance_; }

  // The next chunk of the plan this thread inserts, once every chunk of the earlier rounds is
  // in; nullopt when the plan is done or the deadline passed (then prefill_failed()).
  std::optional<PrefillPlan::Chunk> next_chunk(std::uint64_t& iteration);
  void chunk_done(std::int64_t added);

  // One aging update: whether it inserts (else deletes), drawn from the configured
  // insert:delete ratio and steered back into the tolerance; false once the budget is spent.
  bool aging_step(ThreadState& st, bool& insert);

  const Config& cfg_;
  const Traits traits_;
  KeyDistribution keys_;
  OpMix update_mix_, prefill_mix_;
  std::vector<Padded<ThreadState>> states_;

  const std::uint64_t plan_seed_;
  const std::int64_t target_size_, tolerance_;
  PrefillPlan plan_;  // steady: written by prefill_begin before the workers start
  // Prefill coordination. Relaxed but for chunks_done_ (see next_chunk): they only steer which
  // operation a thread runs next (a stale read costs an extra insert or delete, which thread
  // 0's correction absorbs); the barrier after prefill publishes the structure and every count.
  alignas(false_sharing_range) std::atomic<std::int64_t> prefill_size_{0};  // exact while prefilling
  alignas(false_sharing_range) std::atomic<std::int64_t> aging_left_{0};
  alignas(false_sharing_range) std::atomic<std::size_t> next_chunk_{0};
  alignas(false_sharing_range) std::atomic<std::size_t> chunks_done_{0};
  PrefillDeadline deadline_;
};

// Recorder: NoRecorder for measurement, HistoryRecorder for linearizability histories.
template <ConcurrentSet S, class Recorder = NoRecorder>
class SetWorkload final : public SetWorkloadCore {
 public:
  using Key = typename S::key_type;
  static_assert(!HasRangeQuery<S> || std::same_as<Key, std::uint64_t>, "range queries fill a vector of 64-bit keys");

  explicit SetWorkload(const TrialContext& ctx)
    requires(!Recorder::enabled)
      : SetWorkload(ctx, Recorder{}) {}

  SetWorkload(const TrialContext& ctx, Recorder recorder)
      : SetWorkloadCore(ctx, {stores_keys<S>, HasSearchDepths<S>, HasInvariantCheck<S>, node_bytes_of()}),
        recorder_(std::move(recorder)),
        set_(make_structure<S>(cfg_.total_threads(), cfg_.reclaim_eager)) {}

  S& structure() { return *set_; }
  const Recorder& recorder() const { return recorder_; }

  void thread_start(int tid) override {
    if constexpr (HasThreadHooks<S>) set_->thread_init(tid);
  }
  void thread_finish(int tid) override {
    if constexpr (HasThreadHooks<S>) set_->thread_exit(tid);
  }

  // One measured operation.
  int step(int tid, ThreadState& st) {
    const auto [op, drawn] = draw(st);
    const auto key = static_cast<Key>(drawn);
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

  // ---- prefill (SetWorkloadCore says what each mode does) ----------------------------------
  void prefill(int tid, ThreadState& st) {
    if (prefill_skipped()) return;
    if (cfg_.prefill == PrefillMode::insert_only) {
      for (std::uint64_t i = 0; prefill_size_.load(std::memory_order_relaxed) < low(); ++i) {
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
    for (std::uint64_t i = 0;; ++i) {
      const std::int64_t size = prefill_size_.load(std::memory_order_relaxed);
      if (size >= low() && size <= high()) break;
      if (deadline_.expired(i)) break;
      prefill_update(tid, st, size < low());
    }
  }

 private:
  // Inserts the plan's keys, chunk by chunk; false if the deadline passed.
  bool build(int tid, ThreadState& st) {
    if (!plan_.complete()) return false;
    const auto& keys = plan_.keys();
    std::uint64_t i = 0;
    while (const auto chunk = next_chunk(i)) {
      std::int64_t added = 0;
      for (std::size_t k = chunk->begin; k < chunk->end; ++k) {
        if (deadline_.expired(i++)) return false;
        const auto key = static_cast<Key>(keys[k]);
        if (set_->insert(tid, key, key)) {
          st.key_sum += key;
          ++st.size;
          ++added;
        }
        ++st.prefill_ops;
      }
      chunk_done(added);
    }
    return !prefill_failed();
  }

  // Aging updates until the shared budget is spent (or the deadline passes).
  void age(int tid, ThreadState& st) {
    bool insert;
    for (std::uint64_t i = 0; aging_step(st, insert); ++i) {
      if (deadline_.expired(i)) return;
      prefill_update(tid, st, insert);
    }
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

  // ---- the quiescent structure, for SetWorkloadCore::finish -------------------------------
  void visit_keys(const KeyVisitor& visit) const override {
    if constexpr (HasSearchDepths<S>) {
      set_->for_each_key_depth([&](Key k, std::size_t depth) { visit(static_cast<std::uint64_t>(k), depth); });
    } else {
      set_->for_each_key([&](Key k) { visit(static_cast<std::uint64_t>(k), 0); });
    }
  }
  bool contains_quiescent(std::uint64_t key) override { return set_->contains(0, static_cast<Key>(key)); }
  std::string check_invariants() const override {
    if constexpr (HasInvariantCheck<S>) return set_->check_invariants();
    else return {};
  }
  void put_structure_stats(Json& j) const override {
    if constexpr (requires(const S& s) { { s.stats() } -> std::same_as<StatsReport>; }) put_stats(j, set_->stats());
  }
  static constexpr std::optional<std::size_t> node_bytes_of() {
    if constexpr (requires { S::node_bytes; }) return S::node_bytes;
    else return std::nullopt;
  }

  Recorder recorder_;
  std::unique_ptr<S> set_;
};

}  // namespace cdsb::bench
