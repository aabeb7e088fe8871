// Node Replication: Calciu, Sen, Balakrishnan & Aguilera, "Black-box Concurrent Data
// Structures for NUMA Architectures", ASPLOS 2017.
//
// NodeReplicated<D> turns a deterministic sequential structure D (nr/sequential.hpp) into a
// linearizable concurrent one. Each NUMA node (or virtual node) keeps its own replica of D;
// the replicas agree because every update goes through one shared log and each replica
// applies the log in order.
//
// The pieces and who touches them:
//   log_        a circular array of `capacity_` entries {op, alive}. Entry i (a 64-bit log
//               index, never wrapped) lives in slot i mod capacity; `alive` is an
//               alternating bit: in round r = i / capacity the slot counts as written when
//               its bit is 1 for even r and 0 for odd r. Every slot is written once per
//               round, so its bit flips each round and is never reset (no pass that empties
//               recycled entries); the value left from the previous round reads as "not yet
//               written" in this one.
//   log_tail_   the next free log index. A combiner reserves its batch [t, t+b) with one CAS.
//   log_head_   the lowest index some replica may not have applied yet (a lower bound on
//               the minimum of the local tails). Slots below it may be reused. Recycling is
//               lazy: the head is recomputed only when a reservation would leave fewer than
//               `low_mark_` free entries, not on every operation.
//   completed_tail_  an index every update below which has been applied by some replica
//               *and* is visible to every read that starts later. Readers wait for it, not
//               for log_tail_ (entries between the two may not even be written yet).
//   replica r   { combiner lock, local_tail, distributed readers-writer lock (§5.5),
//               the D instance, one publication slot per thread of the node }.
//
// An update (not D::is_read_only) by thread t of node r:
//   1. t publishes the op in its slot (flat combining inside the node) and spins until it is
//      answered or it gets r's combiner lock (try_lock, so no thread ever blocks on it).
//   2. The combiner collects the node's pending ops (waiting briefly for `min_batch` of them
//      when the node has that many threads), reserves b log entries by CAS on log_tail_,
//      writes them (op, then the alive bit), takes r's writer lock, applies every log entry
//      from r's local_tail up to the end of its batch (waiting for entries other combiners
//      reserved and have not yet filled), keeping the results of its own entries, stores
//      local_tail, raises completed_tail_, releases the writer lock, then answers its slots.
// A read (D::is_read_only) by thread t of node r:
//   1. ct = completed_tail_; until r's local_tail >= ct, either take r's combiner lock and
//      bring r up to ct itself, or wait for the combiner that holds it.
//   2. Takes r's reader lock (its own flag: readers never write a shared line) and runs the
//      op on r's replica.
//
// Log space. Before reserving [t, t+b) a combiner needs t+b <= head + capacity (slot reuse
// is safe only once every replica applied the entry a round earlier). When the log is full
// the combiner (which holds its own combiner lock) brings its own replica up to the tail, and
// *catches up every lagging replica whose combiner lock is free*: a replica whose threads
// went idle would otherwise pin the head forever and stall every other node (the lesson of
// the public Rust implementation). A lagging replica whose lock is held is being driven by
// a thread (its combiner, a reader catching it up, or a helper) that finishes in bounded
// steps unless preempted, and a holder waiting for space catches its own replica up on every
// try, so someone always advances. Everything that makes space happens *before* the reservation; after it a
// combiner never waits for space, so the entries it reserved are always filled, and the
// waits in step 2 (for other combiners' entries) always end.
//
// Exactly once. An entry is applied to a replica only by the holder of that replica's
// combiner lock, under its writer lock, at index local_tail, which it then advances; so
// each replica applies each entry once, in log order. A combiner's results come only from
// applying its own reserved range to its own replica, which nobody else can touch while it
// holds the lock; so no operation is executed twice, and no log-space recovery (which runs
// before the reservation) can interrupt a batch half-way.
//
// Linearizability. Updates take effect in log order (an update completed before another is
// invoked was reserved first). A read that observes a state of replica r observes a log
// prefix of length L; every writer raises completed_tail_ to >= L before releasing the
// writer lock, so a read or update that completed before this read began had its index
// below completed_tail_ when this read loaded it, and is in the observed prefix; and a read
// that starts after this one ends loads completed_tail_ >= L, so reads never go back in
// time across replicas. Reads linearize at the point of the log they observe.
//
// Progress: blocking (a combiner descheduled while holding its lock stalls its node, and an
// unfilled reserved entry stalls every replica that reaches it).
//
// Ownership: execute(tid, op) takes op over (nr/sequential.hpp). A read is disposed of after it
// ran; an update belongs to the log, which disposes of it when its slot is reused (every
// replica has applied it then) or when the log is destroyed.
//
// Memory: the log (capacity x sizeof(Entry)) plus, per replica, D, the reader flags and the
// slots (each a false-sharing range). Placement: the log and each replica's initial state are
// first touched by the constructing thread; what a replica allocates later comes from the
// thread applying ops to it (its node's combiners, or a helper catching it up). Building each
// replica on a thread pinned to its node is left for a machine with several NUMA nodes to
// measure it on (these have one).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cdsbench/nr/detail/publication_slots.hpp"
#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/distributed_rw_lock.hpp"
#include "cdsbench/platform/pause.hpp"
#include "cdsbench/platform/spin_lock.hpp"

namespace cdsb {

struct NodeReplicationOptions {
  std::size_t log_entries = std::size_t{1} << 20;  // rounded up to a power of two
  std::size_t low_mark = 0;  // refresh the head when fewer entries are free; 0: capacity / 4
  int min_batch = 1;         // a combiner waits (a little) for this many ops of its node
  int batch_wait_spins = 64; // how long it waits for them, in pause instructions
};

template <SequentialStructure D>
class NodeReplicated {
 public:
  using structure_type = D;
  using Op = typename D::Op;
  using Result = typename D::Result;
  static_assert(std::is_default_constructible_v<Result> && std::is_copy_assignable_v<Result>);

  // node_of_thread[tid] is the replica thread tid uses, in [0, replicas). A replica with no
  // thread is allowed: it is kept up to date by whoever needs its log space, and compared
  // with the others at the end. make_replica() builds each replica; all must be equal.
  NodeReplicated(std::vector<int> node_of_thread, int replicas, NodeReplicationOptions options,
                 const std::function<D()>& make_replica)
      : node_of_(std::move(node_of_thread)), rank_(node_of_.size()) {
    if (replicas < 1) throw std::invalid_argument("NodeReplicated: at least one replica");
    std::vector<int> members(replicas, 0);
    for (std::size_t t = 0; t < node_of_.size(); ++t) {
      if (node_of_[t] < 0 || node_of_[t] >= replicas)
        throw std::invalid_argument("NodeReplicated: thread mapped to a replica that does not exist");
      rank_[t] = members[node_of_[t]]++;
    }
    const int largest = *std::max_element(members.begin(), members.end());
    // The log must hold at least two of the largest batches, or one batch could never fit.
    capacity_ = std::bit_ceil(std::max<std::size_t>({options.log_entries, 2 * static_cast<std::size_t>(std::max(largest, 1)), 2}));
    mask_ = capacity_ - 1;
    low_mark_ = options.low_mark ? std::min(options.low_mark, capacity_ / 2) : capacity_ / 4;
    min_batch_ = std::max(options.min_batch, 1);
    batch_wait_spins_ = std::max(options.batch_wait_spins, 0);
    log_ = std::make_unique<Entry[]>(capacity_);  // value-initialized: every alive bit 0
    replicas_.reserve(replicas);
    for (int r = 0; r < replicas; ++r) replicas_.push_back(std::make_unique<Replica>(members[r], make_replica()));
  }

  NodeReplicated(std::vector<int> node_of_thread, int replicas, NodeReplicationOptions options = {})
    requires std::is_default_constructible_v<D>
      : NodeReplicated(std::move(node_of_thread), replicas, options, [] { return D(); }) {}

  NodeReplicated(const NodeReplicated&) = delete;
  NodeReplicated& operator=(const NodeReplicated&) = delete;

  // Quiescent: every reserved entry is filled. The ops of the last round of the log are the
  // ones not yet disposed of (each earlier one was, when its slot was reused).
  ~NodeReplicated() {
    const std::uint64_t tail = log_tail_->load(std::memory_order_relaxed);
    for (std::uint64_t i = tail > capacity_ ? tail - capacity_ : 0; i < tail; ++i) dispose_op<D>(log_[i & mask_].op);
  }

  // Linearizable; blocking; reclamation: immediate (each replica's D frees inside the
  // replica's writer critical section). Updates go through the shared log (flat combining
  // per node); reads run on the caller's node's replica once it has every completed update.
  Result execute(int tid, const Op& op) {
    Replica& r = *replicas_[node_of_[tid]];
    const int rank = rank_[tid];
    if (D::is_read_only(op)) return read(r, rank, op);
    const std::uint64_t n = r.slots.post(rank, op);
    Backoff backoff(64);
    while (!r.slots.answered(rank, n)) {
      if (r.combiner_lock.try_lock()) {
        combine(r);  // our request was published before we took the lock: it is served now
        r.combiner_lock.unlock();
      } else {
        backoff();
      }
    }
    return r.slots.result(rank);
  }

  // ---- quiescent helpers: only while no operation runs -----------------------------------
  int replica_count() const noexcept { return static_cast<int>(replicas_.size()); }
  int node_of(int tid) const noexcept { return node_of_[tid]; }
  std::size_t log_capacity() const noexcept { return capacity_; }
  std::uint64_t log_tail() const noexcept { return log_tail_->load(std::memory_order_relaxed); }
  std::uint64_t completed_tail() const noexcept { return completed_tail_->load(std::memory_order_relaxed); }
  std::uint64_t local_tail(int r) const noexcept { return replicas_[r]->local_tail->load(std::memory_order_relaxed); }
  const D& replica(int r) const noexcept { return replicas_[r]->structure; }

  // Brings every replica up to the log tail. Quiescent only.
  void sync_all() {
    const std::uint64_t end = log_tail_->load(std::memory_order_relaxed);
    for (auto& q : replicas_) {
      q->combiner_lock.lock();
      catch_up(*q, end);
      q->combiner_lock.unlock();
    }
  }

  // Brings every replica up to date, then: empty when they are all equal and each passes
  // its own invariant check, else what differs. Quiescent only.
  std::string check_invariants() {
    sync_all();
    for (int r = 0; r < replica_count(); ++r) {
      if (local_tail(r) != log_tail())
        return "replica " + std::to_string(r) + " stopped at log index " + std::to_string(local_tail(r)) +
               " of " + std::to_string(log_tail());
      if constexpr (QuiescentlyCheckable<D>) {
        const std::string own = replica(r).check_invariants();
        if (!own.empty()) return "replica " + std::to_string(r) + ": " + own;
        if (r > 0 && !(replica(r) == replica(0)))
          return "replica " + std::to_string(r) + " differs from replica 0 after applying the same log";
      }
    }
    if (completed_tail() > log_tail()) return "completedTail beyond logTail";
    return {};
  }

  // The structure as every replica now holds it: replica 0 after sync_all().
  const D& structure() {
    sync_all();
    return replica(0);
  }

  std::size_t log_bytes() const noexcept { return capacity_ * sizeof(Entry); }
  // Replicas with their locks and slots (D's own nodes included when D reports them).
  std::size_t replica_bytes() const {
    std::size_t bytes = 0;
    for (const auto& q : replicas_) {
      bytes += sizeof(Replica) + q->rw.memory_bytes() + q->slots.memory_bytes() +
               q->batch.capacity() * sizeof(Pending) + q->results.capacity() * sizeof(Result);
      if constexpr (QuiescentlyCheckable<D>) bytes += q->structure.memory_bytes() - sizeof(D);
    }
    return bytes;
  }
  std::size_t memory_bytes() const { return sizeof(*this) + log_bytes() + replica_bytes(); }

  // May be called while operations run (a server's INFO): each figure is read relaxed, so the
  // sums are a moment's view, not one consistent snapshot.
  struct Stats {
    std::uint64_t combines = 0, combined_ops = 0, catch_ups_by_others = 0, space_waits = 0;
    std::uint64_t log_entries_written = 0;  // the log tail: updates that went through the log
  };
  Stats stats() const {
    Stats s;
    for (const auto& q : replicas_) {
      s.combines += q->combines.load(std::memory_order_relaxed);
      s.combined_ops += q->combined_ops.load(std::memory_order_relaxed);
      s.catch_ups_by_others += q->catch_ups_by_others.load(std::memory_order_relaxed);
      s.space_waits += q->space_waits.load(std::memory_order_relaxed);
    }
    s.log_entries_written = log_tail_->load(std::memory_order_relaxed);
    return s;
  }

 private:
  struct Entry {
    Op op{};
    std::atomic<std::uint32_t> alive{0};  // the alternating bit
  };

  struct Pending {
    int slot;
    std::uint64_t seq;
    Op op;
  };

  struct Replica {
    Replica(int threads, D d)
        : rw(std::max(threads, 1)), structure(std::move(d)), slots(std::max(threads, 1)) {
      batch.reserve(threads);
      results.resize(std::max(threads, 1));
      collected.assign(std::max(threads, 1), 0);
    }
    // Line 1: taken by the node's would-be combiners and by helpers from other nodes.
    alignas(false_sharing_range) SpinLock combiner_lock;
    // Line 2: read by every node computing the head, written by this replica's writers.
    alignas(false_sharing_range) Padded<std::atomic<std::uint64_t>> local_tail{0};
    DistributedRwLock rw;
    // Each on its own range: the structure's header is written by every applied op, and the
    // slots' header is what the node's waiting threads poll.
    alignas(false_sharing_range) D structure;
    alignas(false_sharing_range) detail::PublicationSlots<Op, Result> slots;
    // Combiner-private (under combiner_lock): the batch being built and its results.
    alignas(false_sharing_range) std::vector<Pending> batch;
    std::vector<Result> results;
    std::vector<std::uint64_t> collected;  // per slot: the seq already in this batch
    // Statistics, relaxed: the first three written only under combiner_lock (a load and a
    // store, no read-modify-write), atomic so that stats() may read them meanwhile.
    std::atomic<std::uint64_t> combines{0}, combined_ops{0}, space_waits{0};
    std::atomic<std::uint64_t> catch_ups_by_others{0};
  };

  // A statistic written by one thread at a time (the combiner lock's holder).
  static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  // The value of the alive bit that marks entry i written in its round.
  std::uint32_t filled_mark(std::uint64_t i) const noexcept { return ((i / capacity_) & 1) == 0 ? 1u : 0u; }

  // Holding r.combiner_lock.
  void combine(Replica& r) {
    r.batch.clear();
    auto take = [&](int slot, const Op& op, std::uint64_t n) {
      if (r.collected[slot] == n) return;  // already in this batch (a rescan)
      r.collected[slot] = n;
      r.batch.push_back({slot, n, op});
    };
    r.slots.for_each_pending(take);
    // Minimum batch: with several threads on the node, wait a little for more of them so
    // one log reservation and one writer-lock acquisition serve several operations.
    const std::size_t want = std::min<std::size_t>(min_batch_, r.slots.size());
    for (int spin = 0; r.batch.size() < want && spin < batch_wait_spins_; ++spin) {
      cpu_relax();
      if ((spin & 7) == 7) r.slots.for_each_pending(take);
    }
    if (r.batch.empty()) return;  // our request was answered by the previous combiner
    const std::uint64_t b = r.batch.size();
    const std::uint64_t t = reserve(r, b);
    // Every advance of r's local tail is ordered by its combiner lock and goes to a tail that
    // happens-before our CAS, so r is not past our batch (apply_until relies on it).
    assert(r.local_tail->load(std::memory_order_relaxed) <= t);
    for (std::uint64_t i = 0; i < b; ++i) {
      Entry& e = log_[(t + i) & mask_];
      // The slot's op of the previous round was applied by every replica (the reservation
      // needs t + b <= head + capacity) and is ours to dispose of: the log owns each update.
      if (t + i >= capacity_) dispose_op<D>(e.op);
      e.op = r.batch[i].op;
      // (L1) release: publishes the op to appliers that acquire-load the bit at (L2).
      e.alive.store(filled_mark(t + i), std::memory_order_release);
    }
    r.rw.lock();
    apply_until(r, t + b, [&](std::uint64_t i, const Result& result) {
      if (i >= t) r.results[i - t] = result;
    });
    r.rw.unlock();
    // Answer only now: completed_tail_ >= t + b (raised in apply_until), so a read that starts
    // after an answer sees the update.
    for (std::uint64_t i = 0; i < b; ++i) r.slots.respond(r.batch[i].slot, r.batch[i].seq, r.results[i]);
    bump(r.combines, 1);
    bump(r.combined_ops, b);
  }

  // Reserves b consecutive log entries for the combiner of r (which holds r's combiner
  // lock); returns the first index. Makes space first when the log is full.
  std::uint64_t reserve(Replica& r, std::uint64_t b) {
    Backoff backoff(64);  // yields while the log stays full: its holders may need our CPU
    for (;;) {
      // Relaxed: the tail only names indices; the entries' contents are published by their
      // alive bits (L1/L2), and a stale value only makes the CAS below fail.
      std::uint64_t t = log_tail_->load(std::memory_order_relaxed);
      // (H2) acquire pairs with (H1): the entries below the head were applied by every
      // replica (their reads of those slots happen-before our writes to them).
      std::uint64_t head = log_head_->load(std::memory_order_acquire);
      if (t + b > head + capacity_ - low_mark_) {  // lazy recycling: only past the low mark
        head = refresh_head();
        if (t + b > head + capacity_) {
          make_space(r, t + b - capacity_);
          backoff();
          continue;
        }
      }
      // Relaxed CAS: it only claims indices (see above). Success reserves [t, t+b).
      if (log_tail_->compare_exchange_weak(t, t + b, std::memory_order_relaxed, std::memory_order_relaxed)) return t;
    }
  }

  // Recomputes the head as the minimum local tail; returns the (new) head.
  std::uint64_t refresh_head() {
    std::uint64_t low = UINT64_MAX;
    for (const auto& q : replicas_)
      // (T2) acquire pairs with (T1): the replica's reads of the entries below its tail
      // happen-before whatever we (or a combiner that reads the head from us) write there.
      low = std::min(low, q->local_tail->load(std::memory_order_acquire));
    // Acquire (H2) on the load and on a failed CAS: a head another combiner raised past ours
    // carries its (T2) acquisitions, which we rely on when we return it.
    std::uint64_t head = log_head_->load(std::memory_order_acquire);
    // (H1) release: passes the (T2) acquisitions on to combiners that read the head at (H2).
    while (head < low && !log_head_->compare_exchange_weak(head, low, std::memory_order_acq_rel, std::memory_order_acquire)) {
    }
    return std::max(head, low);
  }

  // The log is full: every replica must reach `needed` before the slots can be reused.
  // The caller holds r's combiner lock, so it advances r itself; a lagging replica whose
  // combiner lock is free has nobody driving it (its threads are idle): catch it up too.
  void make_space(Replica& r, std::uint64_t needed) {
    bump(r.space_waits, 1);
    const std::uint64_t end = log_tail_->load(std::memory_order_relaxed);
    catch_up(r, end);
    for (auto& q : replicas_) {
      if (q.get() == &r || q->local_tail->load(std::memory_order_acquire) >= needed) continue;
      if (q->combiner_lock.try_lock()) {
        q->catch_ups_by_others.fetch_add(1, std::memory_order_relaxed);
        catch_up(*q, log_tail_->load(std::memory_order_relaxed));
        q->combiner_lock.unlock();
      }
    }
  }

  // Applies log entries to q up to `end` (exclusive). Holding q's combiner lock; the entries
  // below `end` are reserved, so their combiners will fill them without waiting for space.
  void catch_up(Replica& q, std::uint64_t end) {
    if (q.local_tail->load(std::memory_order_relaxed) >= end) return;
    q.rw.lock();
    apply_until(q, end, [](std::uint64_t, const Result&) {});
    q.rw.unlock();
  }

  // Holding q's combiner lock and writer lock: applies entries [local_tail, end) in order,
  // calls on_result(index, result) for each, stores local_tail and raises completed_tail_.
  template <class OnResult>
  void apply_until(Replica& q, std::uint64_t end, OnResult&& on_result) {
    // Relaxed: only holders of q's combiner lock write local_tail, and the lock orders them.
    std::uint64_t i = q.local_tail->load(std::memory_order_relaxed);
    assert(i <= end);  // never move local_tail back: that would apply entries twice
    for (; i < end; ++i) {
      Entry& e = log_[i & mask_];
      const std::uint32_t mark = filled_mark(i);
      Backoff backoff(64);
      // (L2) acquire pairs with (L1): the entry's op is the one its combiner wrote.
      while (e.alive.load(std::memory_order_acquire) != mark) backoff();
      on_result(i, q.structure.execute(e.op));
    }
    // (T1) release: our reads of the entries happen-before a combiner that sees this tail
    // through (T2) and reuses their slots; also pairs with the readers' (T3).
    q.local_tail->store(end, std::memory_order_release);
    // (C1) release CAS-max, while we still hold the writer lock: any read that sees this
    // replica's new state (after our unlock) is covered by completed_tail_. Pairs with (C2).
    std::uint64_t done = completed_tail_->load(std::memory_order_relaxed);
    while (done < end && !completed_tail_->compare_exchange_weak(done, end, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }

  Result read(Replica& r, int rank, const Op& op) {
    // (C2) acquire pairs with (C1). What matters is the value: an update answered before this
    // read began raised completed_tail_ past its entry before it answered.
    const std::uint64_t ct = completed_tail_->load(std::memory_order_acquire);
    Backoff backoff(64);
    // (T3) acquire pairs with (T1), which the writer stored inside its writer section: our
    // lock_shared below then reads the writer flag no older than that writer's (1), so we
    // wait for its unlock and read the replica at >= ct.
    while (r.local_tail->load(std::memory_order_acquire) < ct) {
      if (r.combiner_lock.try_lock()) {
        catch_up(r, ct);  // entries below ct were applied somewhere: all filled
        r.combiner_lock.unlock();
        break;
      }
      backoff();
    }
    r.rw.lock_shared(rank);
    // Read-only by D's contract: several readers may run it on one replica at once.
    Result result = r.structure.execute(op);
    r.rw.unlock_shared(rank);
    dispose_op<D>(op);  // a read never enters the log
    return result;
  }

  std::vector<int> node_of_;
  std::vector<int> rank_;  // a thread's slot (and reader flag) inside its node
  std::size_t capacity_ = 0, mask_ = 0, low_mark_ = 0;
  int min_batch_ = 1, batch_wait_spins_ = 0;
  std::unique_ptr<Entry[]> log_;
  Padded<std::atomic<std::uint64_t>> log_tail_{0};
  Padded<std::atomic<std::uint64_t>> log_head_{0};
  Padded<std::atomic<std::uint64_t>> completed_tail_{0};
  std::vector<std::unique_ptr<Replica>> replicas_;
};

}  // namespace cdsb
