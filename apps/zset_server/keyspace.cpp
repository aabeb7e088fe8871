#include "apps/zset_server/keyspace.hpp"

#include <sched.h>

#include <algorithm>
#include <stdexcept>

#include "cdsbench/nr/flat_combining.hpp"
#include "cdsbench/nr/node_replication.hpp"
#include "cdsbench/nr/rw_locked.hpp"
#include "cdsbench/nr/spin_locked.hpp"
#include "cdsbench/platform/interleave.hpp"

namespace cdsb::zset {

namespace {

template <class Construction>
class MethodOf final : public KeyMethod {
 public:
  template <class... Args>
  explicit MethodOf(Args&&... args) : c_(std::forward<Args>(args)...) {}
  KeyedZSet::Result execute(int tid, const KeyedZSet::Op& op) override { return c_.execute(tid, op); }
  void add_counters(MethodCounters& sum) const override {
    if constexpr (requires { c_.stats(); }) {  // NR
      const auto s = c_.stats();
      sum.combines += s.combines;
      sum.combined_ops += s.combined_ops;
      sum.log_entries_written += s.log_entries_written;
      sum.log_full_waits += s.space_waits;
      sum.catch_ups_by_others += s.catch_ups_by_others;
    }
    if constexpr (requires { c_.combines(); }) {  // FC, FC+
      sum.combines += c_.combines();
      sum.combined_ops += c_.combined_ops();
    }
    if constexpr (requires { c_.lock_waits(); }) sum.lock_waits += c_.lock_waits();  // SL, RWL
  }

 private:
  Construction c_;
};

}  // namespace

Keyspace::Keyspace(KeyspaceConfig config)
    : config_(config),
      zkeys_(config.threads),
      map_(config.threads, {}, {}, hash::Even{config.seed}),
      shards_(std::make_unique<Shard[]>(config.threads)),
      counts_(std::make_unique<ThreadCounts[]>(config.threads)) {
  if (config_.threads < 1) throw std::invalid_argument("Keyspace: at least one thread");
  if (config_.nr_replicas < 1 || config_.nr_replicas > config_.threads)
    throw std::invalid_argument("Keyspace: NR replicas must be 1 to the thread count");
  // Contiguous groups of workers share a replica (a machine's node holds consecutive CPUs).
  for (int t = 0; t < config_.threads; ++t) node_of_thread_.push_back(t * config_.nr_replicas / config_.threads);
}

// Quiescent: every ZKey still listed is in the map (or dead and being buried: none at rest).
Keyspace::~Keyspace() {
  for (int s = 0; s < config_.threads; ++s)
    for (ZKey* z = shards_[s].head; z;) {
      ZKey* next = z->next;
      zkeys_.deallocate(0, z);
      z = next;
    }
}

std::unique_ptr<KeyMethod> Keyspace::make_method() const {
  const std::uint64_t seed = config_.seed;
  const int n = config_.threads;
  switch (config_.method) {
    case Method::nr: {
      NodeReplicationOptions options;
      options.log_entries = config_.nr_log_entries;
      return std::make_unique<MethodOf<NodeReplicated<KeyedZSet>>>(node_of_thread_, config_.nr_replicas, options,
                                                                   [seed] { return KeyedZSet(seed); });
    }
    case Method::sl: return std::make_unique<MethodOf<SpinLocked<KeyedZSet>>>(n, KeyedZSet(seed));
    case Method::rwl: return std::make_unique<MethodOf<RwLocked<KeyedZSet>>>(n, KeyedZSet(seed));
    case Method::fc: return std::make_unique<MethodOf<FlatCombining<KeyedZSet>>>(n, KeyedZSet(seed));
    case Method::fcplus: return std::make_unique<MethodOf<FlatCombiningRw<KeyedZSet>>>(n, KeyedZSet(seed));
  }
  throw std::logic_error("Keyspace: unknown method");
}

Keyspace::ZKey* Keyspace::find(int tid, std::string_view key) {
  // Acquire inside the map (its slot's value is written under the bucket's lock, released at
  // the unlock): the ZKey's construction and its first op happen-before our use of it.
  const auto v = map_.find(tid, key);
  return v ? reinterpret_cast<ZKey*>(static_cast<std::uintptr_t>(*v)) : nullptr;
}

Keyspace::ZKey* Keyspace::create(int tid, std::string_view key, const Op& op, Result& result) {
  ZKey* z = zkeys_.allocate<ZKey>(tid, key, make_method(), tid);
  result = execute_on(tid, z, op);  // alone: nobody else can reach z yet
  // Listed before it is published, so the killer of its set (who unlists it) finds it listed.
  {
    std::lock_guard lock(shards_[tid].mutex);
    z->next = shards_[tid].head;
    if (z->next) z->next->prev = z;
    shards_[tid].head = z;
  }
  // Counted before it is visible, so a DEL that removes it at once never counts first.
  bump(counts_[tid].created, 1);
  const auto [winner, inserted] = map_.find_or_insert(tid, key, reinterpret_cast<std::uintptr_t>(z));
  CDSB_INTERLEAVE("zset.create.inserted");  // the key maps to z, which is still pending
  if (!inserted) {  // another thread created the key first: z was never reachable from the map
    bump(counts_[tid].created, -1);
    z->state.store(ZKey::lost, std::memory_order_release);  // pairs with remove_all's acquire
    unlist(z);
    zkeys_.retire(tid, z);  // a FLUSHALL may hold it (inside our caller's guard)
    return nullptr;
  }
  z->state.store(ZKey::published, std::memory_order_release);  // pairs with remove_all's acquire
  return z;
}

void Keyspace::unlist(ZKey* z) {
  std::lock_guard lock(shards_[z->shard].mutex);
  (z->prev ? z->prev->next : shards_[z->shard].head) = z->next;
  if (z->next) z->next->prev = z->prev;
}

void Keyspace::bury(int tid, ZKey* z) {
  // Only the killer erases, and the key maps to z until it does (see the header): this erase
  // removes z and nothing else.
  map_.erase(tid, z->name.view());
  unlist(z);
  bump(counts_[tid].removed, 1);
  zkeys_.retire(tid, z);  // inside the caller's guard; commands that found z keep it alive
}

void Keyspace::wait_for_burial(int tid) {
  // The killer is between its op and its erase: a short window unless it was preempted.
  counts_[tid].dead_retries.store(counts_[tid].dead_retries.load(std::memory_order_relaxed) + 1,
                                  std::memory_order_relaxed);
  sched_yield();
}

bool Keyspace::remove(int tid, std::string_view key) {
  return run(tid, key, false, [] { return seq::SortedSet::clear(); }).exists;
}

bool Keyspace::exists(int tid, std::string_view key) {
  return run(tid, key, false, [] { return seq::SortedSet::zcard(); }).exists;
}

void Keyspace::remove_all(int tid) {
  auto guard = zkeys_.enter(tid);  // keeps every ZKey collected below alive until we are done
  std::vector<ZKey*> keys;
  for (int s = 0; s < config_.threads; ++s) {
    std::lock_guard lock(shards_[s].mutex);
    for (ZKey* z = shards_[s].head; z; z = z->next) keys.push_back(z);
  }
  for (ZKey* z : keys) {
    // A pending set may already be the key's (its creator is between the insert and the
    // store): wait for the outcome, a few instructions unless the creator was preempted.
    int state = z->state.load(std::memory_order_acquire);
    while (state == ZKey::pending && !CDSB_MUTANT("zset.flushall_skips_pending")) {
      CDSB_INTERLEAVE("zset.flushall.waits_for_pending");
      sched_yield();
      state = z->state.load(std::memory_order_acquire);
    }
    if (state != ZKey::published) continue;
    const Result r = execute_on(tid, z, seq::SortedSet::clear());
    if (r.died) bury(tid, z);  // else it had died already: its killer buries it
  }
}

bool Keyspace::reclaim(int tid) {
  // An epoch advances once a thread has seen every other one current or idle, one look per
  // advance_every of its operations; the garbage goes two advances later. Empty operations
  // (a guard; a find in the map, whose own reclaimer holds its key blobs and old tables) drive
  // it, as long as no other thread stays inside an operation.
  const int rounds = 3 * static_cast<int>(reclaim::EpochBased<>::advance_every) * (config_.threads + 1);
  for (int i = 0; i < rounds; ++i) {
    { auto guard = zkeys_.enter(tid); }
    map_.find(tid, std::string_view());
  }
  return zkeys_.limbo_size(tid) > 0;
}

MethodCounters Keyspace::method_counters(int tid) {
  auto guard = zkeys_.enter(tid);  // the keys collected stay alive while we read them
  MethodCounters sum;
  for (int s = 0; s < config_.threads; ++s) {
    std::lock_guard lock(shards_[s].mutex);
    for (ZKey* z = shards_[s].head; z; z = z->next)
      if (z->state.load(std::memory_order_acquire) == ZKey::published) z->method->add_counters(sum);
  }
  return sum;
}

KeyspaceCounts Keyspace::counts() const {
  KeyspaceCounts c;
  for (int t = 0; t < config_.threads; ++t) {
    const std::int64_t created = counts_[t].created.load(std::memory_order_relaxed);
    const std::int64_t removed = counts_[t].removed.load(std::memory_order_relaxed);
    c.created += static_cast<std::uint64_t>(created);
    c.removed += static_cast<std::uint64_t>(removed);
    c.keys += created - removed;  // each term read at its own moment (see DBSIZE in the header)
    c.dead_retries += counts_[t].dead_retries.load(std::memory_order_relaxed);
  }
  c.keys = std::max<std::int64_t>(c.keys, 0);
  return c;
}

}  // namespace cdsb::zset
