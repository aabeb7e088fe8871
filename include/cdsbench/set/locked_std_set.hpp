// std::map behind one lock: the coarse-grained baseline every concurrent set must beat.
//
// LockedStdSet<SpinLock> serialises every operation. LockedStdSet<RwSpinLock> lets searches
// and range queries share the lock, so read-mostly workloads scale until the lock word's
// cache line saturates. Both are linearizable (each operation takes effect inside its
// critical section) and blocking. Reclaimers: none needed (std::map frees under the lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "cdsbench/platform/rw_lock.hpp"
#include "cdsbench/platform/spin_lock.hpp"
#include "cdsbench/set/concepts.hpp"

namespace cdsb {

template <class Lock, class Key = std::uint64_t, class Value = std::uint64_t>
class LockedStdSet {
 public:
  using key_type = Key;
  using mapped_type = Value;

  explicit LockedStdSet(int /*max_threads*/) {}

  // Linearizable, blocking.
  bool insert(int, Key k, Value v) {
    std::scoped_lock guard(lock_);
    return map_.try_emplace(k, v).second;
  }

  // Linearizable, blocking.
  bool erase(int, Key k) {
    std::scoped_lock guard(lock_);
    return map_.erase(k) == 1;
  }

  // Linearizable, blocking; shares the lock with other readers when Lock is a RW lock.
  bool contains(int, Key k) const {
    ReadGuard guard(lock_);
    return map_.contains(k);
  }

  // Linearizable (an atomic snapshot of [lo, hi]), blocking.
  std::size_t range_query(int, Key lo, Key hi, std::vector<Key>& out) const {
    out.clear();
    ReadGuard guard(lock_);
    for (auto it = map_.lower_bound(lo); it != map_.end() && it->first <= hi; ++it)
      out.push_back(it->first);
    return out.size();
  }

  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for (const auto& entry : map_) fn(entry.first);
  }

 private:
  // Readers take the shared side when the lock has one.
  struct ReadGuard {
    explicit ReadGuard(Lock& l) : lock(l) {
      if constexpr (requires { l.lock_shared(); }) lock.lock_shared(); else lock.lock();
    }
    ~ReadGuard() {
      if constexpr (requires { lock.unlock_shared(); }) lock.unlock_shared(); else lock.unlock();
    }
    Lock& lock;
  };

  mutable Lock lock_;
  std::map<Key, Value> map_;
};

static_assert(ConcurrentSet<LockedStdSet<SpinLock>>);

}  // namespace cdsb
