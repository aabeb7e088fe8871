// The server's key space: byte-string keys, each holding one sorted set made concurrent by the
// chosen method (Node Replication or a black-box baseline, include/cdsbench/nr/).
//
// Keys live in SeqlockProbeMap<ebr, std::string_view> (set/hash/seqlock_probe_map.hpp: finds
// only read, so no read resizes the table; SipHash-1-3 keyed by a per-server random seed, so a
// client cannot aim its keys at one bucket), mapping each key to its ZKey: the key's name and
// its method object. ZKeys are freed through an epoch-based reclaimer of their own: every
// command runs inside a guard, so a ZKey that DEL removes stays alive for the commands that
// already found it.
//
// A key's life is part of its sorted set's state (KeyedZSet): a set is created holding the
// effect of the command that created it (never empty and visible), and dies, for good, in the
// update that empties it (ZREM of its last member, DEL, FLUSHALL). Because death is an
// operation of the set, it is ordered with every other operation on it by the method itself:
//   - a read that meets a dead set answers as for a missing key (it linearizes after the death);
//   - an update that meets a dead set starts over (looks the key up again), so it lands in the
//     key's next set, never in a removed one;
//   - the one update that killed the set erases the key from the map. Until then the key maps to
//     the dead set, so no new set can be inserted for it: the erase removes exactly that set.
// So each single-key command is linearizable: at its operation on the set it found (a command
// that found a set and ran on it after a DEL removed the key from the map linearizes just
// before that DEL: it had found the set, so its interval contains a moment before the DEL).
// Progress: as the method's (blocking for all five), and an update that meets a dead set waits
// for the killer's erase.
//
// Multi-key commands (DEL k1 k2, EXISTS k1 k2, FLUSHALL) are a sequence of single-key operations:
// each key's part is linearizable, the command as a whole is not atomic (Redis's are). FLUSHALL
// removes every key that existed when it started (it waits for a set being published as it
// starts) and was not removed meanwhile; a key created while it runs may survive it. DBSIZE is
// exact when no command runs, else a count taken while keys come and go (never below 0).
//
// Memory per key: the method's object. NR keeps a log of --nr-log-entries entries per key
// (each sizeof(Op) + 8 bytes: 48 bytes), fixed at the key's creation, plus one replica of the set
// per --nr-replicas; FC/FC+ a publication slot per worker thread (two cache lines each); RWL and
// FC+ a reader flag per worker thread; SL one lock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cdsbench/nr/sequential.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/reclaim/ebr.hpp"
#include "cdsbench/seq/sorted_set.hpp"
#include "cdsbench/set/hash/seqlock_probe_map.hpp"
#include "cdsbench/set/stored_key.hpp"

namespace cdsb::zset {

enum class Method { nr, sl, rwl, fc, fcplus };
inline constexpr std::array<const char*, 5> method_names{"nr", "sl", "rwl", "fc", "fcplus"};
inline const char* method_name(Method m) { return method_names[static_cast<int>(m)]; }
// The method of a name (--method), or nullopt.
inline std::optional<Method> method_named(std::string_view name) {
  for (std::size_t m = 0; m < method_names.size(); ++m)
    if (name == method_names[m]) return static_cast<Method>(m);
  return std::nullopt;
}

// A sorted set with its key's life: the sequential structure each method makes concurrent.
class KeyedZSet {
 public:
  using Op = seq::SortedSet::Op;
  struct Result {
    seq::SortedSet::Result value;
    bool dead = false;  // the set had died before this op: nothing ran
    bool died = false;  // this update emptied the set, which is now dead
  };
  static bool is_read_only(const Op& op) noexcept { return seq::SortedSet::is_read_only(op); }
  static void dispose(const Op& op) noexcept { seq::SortedSet::dispose(op); }

  explicit KeyedZSet(std::uint64_t hash_seed) : set_(hash_seed) {}

  Result execute(const Op& op) {
    if (dead_) return {.dead = true};
    Result r{.value = set_.execute(op)};
    if (!is_read_only(op) && set_.size() == 0) dead_ = r.died = true;
    return r;
  }

  // Quiescent helpers (nr/sequential.hpp).
  template <class Fn>
  void for_each_item(Fn&& fn) const {
    set_.for_each_item(fn);
  }
  std::string check_invariants() const { return set_.check_invariants(); }
  std::size_t memory_bytes() const noexcept { return sizeof(*this) - sizeof(set_) + set_.memory_bytes(); }
  friend bool operator==(const KeyedZSet& a, const KeyedZSet& b) { return a.dead_ == b.dead_ && a.set_ == b.set_; }

 private:
  seq::SortedSet set_;
  bool dead_ = false;
};

// The methods' own figures, summed over keys (those a method lacks stay 0).
struct MethodCounters {
  std::uint64_t combines = 0, combined_ops = 0;               // NR (per node), FC, FC+: batches, their ops
  std::uint64_t log_entries_written = 0, log_full_waits = 0;  // NR
  std::uint64_t catch_ups_by_others = 0;                      // NR: replicas brought up to date by another node
  std::uint64_t lock_waits = 0;                               // SL, RWL: operations that found the lock unavailable
};

// One key's method: the construction over its KeyedZSet, behind one virtual call.
class KeyMethod {
 public:
  virtual ~KeyMethod() = default;
  // Takes op over (nr/sequential.hpp). Linearizable, blocking.
  virtual KeyedZSet::Result execute(int tid, const KeyedZSet::Op& op) = 0;
  virtual void add_counters(MethodCounters& sum) const = 0;  // safe while operations run
};

struct KeyspaceConfig {
  Method method = Method::nr;
  int threads = 1;                      // worker threads: tids 0..threads-1
  int nr_replicas = 1;                  // NR: replicas per key; workers split into contiguous groups
  std::size_t nr_log_entries = 1024;    // NR: log entries per key
  std::uint64_t seed = 0;               // the hashes' secret (the map's and every set's)
};

// What the key space counts (per thread, summed on demand: never a shared counter).
struct KeyspaceCounts {
  std::int64_t keys = 0;               // live keys (exact when no command runs)
  std::uint64_t created = 0, removed = 0, dead_retries = 0;
};

class Keyspace {
 public:
  using Op = KeyedZSet::Op;
  using Result = KeyedZSet::Result;

  explicit Keyspace(KeyspaceConfig config);
  ~Keyspace();
  Keyspace(const Keyspace&) = delete;
  Keyspace& operator=(const Keyspace&) = delete;

  const KeyspaceConfig& config() const noexcept { return config_; }

  // Runs make_op() on key's set and says whether the key existed. An absent key is created by
  // an op that `creates` (ZADD without XX, ZINCRBY: they always add a member), holding its
  // effect; otherwise the answer is "no such key" and nothing runs. make_op may be called more
  // than once (a lost race to create the key, an update that met a dead set); each op it makes
  // is run or disposed of.
  struct Outcome {
    bool exists = false;
    seq::SortedSet::Result value;
  };
  template <class MakeOp>
  Outcome run(int tid, std::string_view key, bool creates, MakeOp&& make_op);

  bool remove(int tid, std::string_view key);  // DEL of one key: true iff it existed
  bool exists(int tid, std::string_view key);
  void remove_all(int tid);                     // FLUSHALL (see above for what it promises)
  // Frees what thread tid retired, as far as the other threads allow (each reclaimer frees a
  // thread's garbage only inside that thread's own operations: a worker that goes idle calls
  // this, or what it removed would stay allocated until it serves again). True: some is left.
  bool reclaim(int tid);
  KeyspaceCounts counts() const;
  MethodCounters method_counters(int tid);      // over the keys that exist now

 private:
  struct ZKey : reclaim::EpochBased<>::NodeBase {
    ZKey(std::string_view key, std::unique_ptr<KeyMethod> m, int owner) : name(key), method(std::move(m)), shard(owner) {}
    const ByteString name;
    const std::unique_ptr<KeyMethod> method;
    const int shard;                    // the registry shard that lists it
    ZKey *prev = nullptr, *next = nullptr;  // in its shard's list, under the shard's mutex
    // pending: listed, maybe already in the map; published: in the map; lost: another set won
    // the key, never reachable. FLUSHALL waits out a pending one.
    enum State : int { pending, published, lost };
    std::atomic<int> state{pending};
  };
  // Every ZKey that may be in the map, for FLUSHALL: one list per creating thread.
  struct alignas(false_sharing_range) Shard {
    std::mutex mutex;
    ZKey* head = nullptr;
  };
  struct alignas(false_sharing_range) ThreadCounts {
    std::atomic<std::int64_t> created{0}, removed{0};  // one writer each: relaxed load + store
    std::atomic<std::uint64_t> dead_retries{0};
  };
  using Map = SeqlockProbeMap<reclaim::EpochBased<>, std::string_view>;

  std::unique_ptr<KeyMethod> make_method() const;
  Result execute_on(int tid, ZKey* key, const Op& op) { return key->method->execute(tid, op); }
  ZKey* find(int tid, std::string_view key);
  // Creates key holding op's effect. nullptr (op disposed of) when another thread created it first.
  ZKey* create(int tid, std::string_view key, const Op& op, Result& result);
  void bury(int tid, ZKey* key);  // the killer of key's set: erase, unlist, retire
  void unlist(ZKey* key);
  static void bump(std::atomic<std::int64_t>& c, std::int64_t by) {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  void wait_for_burial(int tid);

  KeyspaceConfig config_;
  std::vector<int> node_of_thread_;
  reclaim::EpochBased<> zkeys_;  // reclaims ZKeys (the map has its own for its tables and key blobs)
  Map map_;
  std::unique_ptr<Shard[]> shards_;
  std::unique_ptr<ThreadCounts[]> counts_;
};

template <class MakeOp>
Keyspace::Outcome Keyspace::run(int tid, std::string_view key, bool creates, MakeOp&& make_op) {
  for (;;) {
    auto guard = zkeys_.enter(tid);
    if (ZKey* z = find(tid, key)) {
      const Op op = make_op();
      const bool read_only = KeyedZSet::is_read_only(op);
      const Result r = execute_on(tid, z, op);
      if (!r.dead) {
        if (r.died) bury(tid, z);
        return {true, r.value};
      }
      if (read_only) return {};  // the key died before this read: absent
      wait_for_burial(tid);      // an update goes to the key's next set
      continue;
    }
    if (!creates) return {};
    Result r;
    if (create(tid, key, make_op(), r)) return {true, r.value};
  }
}

}  // namespace cdsb::zset
