// The set workload: search / insert / delete / range query on keys, with key-sum validation;
// on maps (ConcurrentMap) also find_or_insert and assign, and every value validated.
//
// Each operation's type is drawn independently from the configured rates (P4) and its key
// from the configured distribution, range-query start keys included (P13), with the
// thread's own generator seeded from the master seed and its thread id (P2). Each thread
// keeps the sum of the keys it inserted minus those it deleted, and its size change; at
// the end the structure's contents must match both (P6), its own invariant check must
// pass, and `contains` must agree with the contents on a probe of keys.
//
// A map's search is `find`, and every value a thread writes is value_for(key, ...): the key's
// 32-bit check in the high half, so a find, a find_or_insert or a final entry that yields a
// value written for another key (or a torn one) fails the trial.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/check/history.hpp"
#include "bench/core/report.hpp"
#include "bench/harness/make_structure.hpp"
#include "bench/harness/trial_context.hpp"
#include "bench/workloads/key_codec.hpp"
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
// with another key type gets them encoded (KeyCodec: narrower integers, digests, byte strings).
class SetWorkloadCore {
 public:
  static constexpr int op_type_count = 6;
  static const char* op_type_name(int op) {
    static constexpr std::array names{"search", "insert", "delete", "range_query", "find_or_insert", "assign"};
    return names[op];
  }

  struct ThreadState : ThreadBasics<op_type_count> {
    using ThreadBasics<op_type_count>::ThreadBasics;
    std::uint64_t key_sum = 0;  // Σ inserted − Σ deleted keys, modulo 2^64
    std::int64_t size = 0;      // successful inserts − successful deletes
    std::uint64_t rq_keys = 0;  // keys returned by range queries
    std::vector<std::uint64_t> rq_out;
    std::uint64_t writes = 0;        // maps: values written (value_for's counter)
    std::uint64_t wrong_values = 0;  // maps: values read that were not written for their key
  };

  // A map's values: the key's 32-bit check in the high half; the writing thread (12 bits) and
  // its write count (20 bits) in the low half, so that writes differ.
  static std::uint32_t key_check(std::uint64_t key) {
    return static_cast<std::uint32_t>((key * 0x9e3779b97f4a7c15ULL) >> 32);
  }
  static std::uint64_t value_for(std::uint64_t key, int tid, std::uint64_t write) {
    return std::uint64_t{key_check(key)} << 32 | (static_cast<std::uint64_t>(tid) & 0xfff) << 20 | (write & 0xfffff);
  }
  static bool value_belongs(std::uint64_t key, std::uint64_t value) { return value >> 32 == key_check(key); }

  // What the core needs to know of the structure.
  struct Traits {
    bool stores_keys;       // false: the `null` set (no prefill, validates as empty)
    bool search_depths;     // visit_keys gives search depths
    bool invariant_check;   // check_invariants exists
    bool map_values;        // a map: its values are validated (value_for)
    std::optional<std::size_t> node_bytes;
  };

  SetWorkloadCore(const TrialContext& ctx, Traits traits);
  virtual ~SetWorkloadCore() = default;

  // Uniform keys: R × ins / (ins + del); 50% when the workload has no updates. A key's
  // stationary presence probability is ins / (ins + del) whatever its access frequency, so
  // this target holds for every key distribution. A find_or_insert inserts an absent key as
  // an insert does, so it counts as one here.
  static std::int64_t steady_state_size(const Config& c);
  // The keys the structure is told to expect (SizeHint): the steady size, capped by what
  // --ops can insert into an empty map (so a huge --key-range with few operations does not
  // size a table for keys that never come); 0, the structure's own default, with --presize no.
  static std::uint64_t size_hint(const Config& c);

  ThreadState& state(int tid) { return *states_[tid]; }

  // Draws the next operation and key of a thread (exposed so tests can check streams);
  // OpTypes: the rated types drawn (OpMix::draw), 3 for sets, 5 for maps. Always inlined into
  // the measured loop, with the generator and the key distribution: GCC's heuristics otherwise
  // leave one of them out of line there (0.5-1 ns per operation).
  template <int OpTypes = 3>
  [[gnu::always_inline]] std::pair<int, std::uint64_t> draw(ThreadState& st) const {
    const int op = st.mix.template draw<OpTypes>(st.rng.next());
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
  using KeyVisitor = std::function<void(std::uint64_t key, std::size_t depth, bool value_belongs)>;
  // The quiescent structure as validation reads it: every key once (with its search depth
  // when Traits::search_depths, and for a map whether its value belongs to it), contains, the
  // structure's own invariant check, and its reclamation and own counters since construction
  // (prefill included).
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
  using Value = typename S::mapped_type;
  using Codec = KeyCodec<Key>;
  static_assert(!HasRangeQuery<S> || std::same_as<Key, std::uint64_t>, "range queries fill a vector of 64-bit keys");
  static constexpr bool is_map = ConcurrentMap<S>;
  static_assert(!is_map || std::same_as<Value, std::uint64_t>, "a map's values are value_for's 64 bits");
  static constexpr int drawn_types = is_map ? 5 : 3;  // OpMix::draw: maps add find_or_insert and assign

  explicit SetWorkload(const TrialContext& ctx)
    requires(!Recorder::enabled)
      : SetWorkload(ctx, Recorder{}) {}

  SetWorkload(const TrialContext& ctx, Recorder recorder)
      : SetWorkloadCore(ctx, {stores_keys<S>, HasSearchDepths<S>, HasInvariantCheck<S>, is_map, node_bytes_of()}),
        recorder_(std::move(recorder)),
        set_(make_structure<S>(cfg_.total_threads(), cfg_.reclaim_eager, size_hint(cfg_))) {}

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
    const auto [op, k] = draw<drawn_types>(st);
    const auto encoded = Codec::encode(k);  // what the structure sees; k is what the counts see
    const Key key = encoded;                // (a byte string: a view of `encoded`)
    std::uint64_t call_ns = 0;
    if constexpr (Recorder::enabled) call_ns = call_stamp_ns();
    bool ok;
    [[maybe_unused]] Value written{}, read{};  // maps: the value written, the value read
    switch (op) {
      case op_insert:
        written = value_of(tid, st, k);
        ok = set_->insert(tid, key, written);
        if (ok) {
          st.key_sum += k;
          ++st.size;
        }
        break;
      case op_delete:
        ok = set_->erase(tid, key);
        if (ok) {
          st.key_sum -= k;
          --st.size;
        }
        break;
      case op_range_query:
        if constexpr (HasRangeQuery<S>) {
          const Key hi = key + std::min<Key>(cfg_.rq_size - 1, cfg_.key_range - key);  // Key is k here
          const std::size_t found = set_->range_query(tid, key, hi, st.rq_out);
          st.rq_keys += found;
          ok = found > 0;
        } else {
          ok = false;  // rejected by the command line: the structure has no range_query
        }
        break;
      case op_find_or_insert:
        if constexpr (is_map) {
          written = value_of(tid, st, k);
          bool inserted;
          std::tie(read, inserted) = set_->find_or_insert(tid, key, written);
          ok = inserted;
          if (inserted) {
            st.key_sum += k;
            ++st.size;
          }
          st.wrong_values += inserted ? read != written : !value_belongs(k, read);
        } else {
          ok = false;  // rejected by the command line: not a map
        }
        break;
      case op_assign:
        if constexpr (HasAssign<S>) {
          written = value_of(tid, st, k);
          ok = set_->assign(tid, key, written);
        } else {
          ok = false;  // rejected by the command line: no assign
        }
        break;
      default:  // op_read: a search
        if constexpr (is_map) {
          const std::optional<Value> found = set_->find(tid, key);
          ok = found.has_value();
          if (ok) {
            read = *found;
            st.wrong_values += !value_belongs(k, read);
          }
        } else {
          ok = set_->contains(tid, key);
        }
    }
    if constexpr (Recorder::enabled) record(tid, op, k, ok, written, read, call_ns);
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
        if (set_->insert(tid, Codec::encode(keys[k]), value_of(tid, st, keys[k]))) {
          st.key_sum += keys[k];
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
    const std::uint64_t k = 1 + uniform_below(st.rng, cfg_.key_range);
    if (insert) {
      if (set_->insert(tid, Codec::encode(k), value_of(tid, st, k))) {
        st.key_sum += k;
        ++st.size;
        prefill_size_.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (set_->erase(tid, Codec::encode(k))) {
      st.key_sum -= k;
      --st.size;
      prefill_size_.fetch_sub(1, std::memory_order_relaxed);
    }
    ++st.prefill_ops;
  }

  // ---- the quiescent structure, for SetWorkloadCore::finish -------------------------------
  void visit_keys(const KeyVisitor& visit) const override {
    if constexpr (HasSearchDepths<S>) {
      set_->for_each_key_depth([&](const Key& k, std::size_t depth) { visit(Codec::decode(k), depth, true); });
    } else if constexpr (is_map && HasForEachEntry<S>) {
      set_->for_each_entry([&](const Key& k, Value v) { visit(Codec::decode(k), 0, value_belongs(Codec::decode(k), v)); });
    } else {
      set_->for_each_key([&](const Key& k) { visit(Codec::decode(k), 0, true); });
    }
  }
  bool contains_quiescent(std::uint64_t key) override { return set_->contains(0, Codec::encode(key)); }
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

  // What a thread writes under key k: value_for on maps; the key itself on sets.
  static Value value_of(int tid, ThreadState& st, std::uint64_t k) {
    if constexpr (is_map) return value_for(k, tid, st.writes++);
    else return static_cast<Value>(k);
  }

  // One operation as the checker's model names it (lincheck's "set" or "map").
  void record(int tid, int op, std::uint64_t key, bool ok, Value written, Value read, std::uint64_t call_ns) {
    const auto k = static_cast<std::int64_t>(key), w = static_cast<std::int64_t>(written),
               r = static_cast<std::int64_t>(read);
    HistoryEvent e{nullptr, {k, w}, 1, ok, true, call_ns, return_stamp_ns()};
    if constexpr (is_map) {
      static constexpr std::array names{"find", "insert", "erase", "range_query", "find_or_insert", "assign"};
      e.op = names[op];
      e.arg_count = op == op_insert || op == op_find_or_insert || op == op_assign ? 2 : 1;
      // find: the value, or null when absent; find_or_insert: the value found, or null when
      // it inserted (then its value is the argument).
      if (op == op_read) e.result = r, e.has_result = ok;
      if (op == op_find_or_insert) e.result = r, e.has_result = !ok;
    } else {
      static constexpr std::array names{"contains", "insert", "erase", "range_query"};
      e.op = names[op];
      e.args[1] = k;
      e.arg_count = op == op_insert ? 2 : 1;
    }
    recorder_.record(tid, e);
  }

  Recorder recorder_;
  std::unique_ptr<S> set_;
};

}  // namespace cdsb::bench
