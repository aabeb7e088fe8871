// `pool` / `segregated_pool`: per-thread free lists on top of another allocation policy.
//
// A freed node goes to the freeing thread's own list and is reused by that thread's next
// allocation of the type, with no atomic operation. Nodes are usually freed by a different
// thread than the one that allocated them (whoever retired them), so lists would drift
// towards the threads that delete: a thread whose list reaches two batches hands the older
// batch (`batch_size` nodes, linked through their first word; the newer, cache-warm one
// stays) to a shared stack, and a thread whose list is empty takes a whole batch from it
// before falling back on the base policy. The shared stack is touched once per batch, under
// a spin lock that is never held across a call to the base policy, and skipped while a
// relaxed count says it is empty.
//
// Under AddressSanitizer a pooled node is poisoned but for its link word, so that a use of a
// node after its free is still reported while the node waits in a list (ASan cannot see a free
// that never reaches the system allocator); it is unpoisoned when handed out or released.
//
// Memory stays in the pool until the pool is destroyed (then it goes back to the base
// policy): the pool keeps its peak footprint, which is what peak RSS then shows.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <type_traits>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/spin_lock.hpp"
#include "cdsbench/reclaim/alloc_segregated.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/detail/type_slots.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace cdsb::reclaim {

namespace detail {
inline void pool_poison([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  __asan_poison_memory_region(p, bytes);
#endif
}
inline void pool_unpoison([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  __asan_unpoison_memory_region(p, bytes);
#endif
}
}  // namespace detail

template <class Base>
class PoolAllocator {
 public:
  static constexpr const char* name = std::is_same_v<Base, SegregatedAllocator> ? "segregated_pool" : "pool";
  static constexpr int max_types = 8;  // node types of one structure (the batch queue has 7 segment sizes)
  static constexpr std::size_t batch_size = 64;
  static_assert(batch_size >= 2);

  explicit PoolAllocator(int max_threads) : base_(max_threads), lists_(max_threads) {}
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;

  // Everything goes back to the base policy (each list through the slot's type).
  ~PoolAllocator() {
    for (int slot = 0; slot < max_types; ++slot) {
      if (!release_[slot]) continue;
      for (std::size_t tid = 0; tid < lists_.size(); ++tid) release_chain(slot, static_cast<int>(tid), (*lists_[tid])[slot].head);
      for (Record* batch : shared_[slot]->batches) release_chain(slot, 0, batch);
    }
  }

  template <class T>
  void* allocate(int tid) {
    static_assert(sizeof(T) >= sizeof(Record), "a pooled node must hold the free-list link");
    const int slot = slot_of<T>();
    List& list = (*lists_[tid])[slot];
    if (!list.head && !take_batch(shared_[slot].value, list)) return base_.template allocate<T>(tid);
    Record* r = list.head;
    list.head = r->next;
    if (--list.count == batch_size) list.above_older = nullptr;  // it was r
    detail::pool_unpoison(r, sizeof(T));
    return r;
  }

  template <class T>
  void deallocate(int tid, void* p) {
    const int slot = slot_of<T>();
    List& list = (*lists_[tid])[slot];
    list.head = new (p) Record{list.head};
    detail::pool_poison(static_cast<char*>(p) + sizeof(Record), sizeof(T) - sizeof(Record));
    if (++list.count == batch_size + 1) list.above_older = list.head;
    if (list.count < 2 * batch_size) return;
    // Hand the older batch_size records (those below above_older) to the shared stack.
    Record* batch = list.above_older->next;
    list.above_older->next = nullptr;
    list.above_older = nullptr;
    list.count = batch_size;
    Shared& shared = *shared_[slot];
    std::scoped_lock lock(shared.lock);  // release: publishes the batch's links to its taker
    shared.batches.push_back(batch);
    shared.available.store(shared.batches.size(), std::memory_order_relaxed);
  }

 private:
  struct Record {
    Record* next;
  };
  struct List {
    Record* head = nullptr;
    std::size_t count = 0;
    Record* above_older = nullptr;  // the record above the older batch while count > batch_size
  };
  struct Shared {
    SpinLock lock;
    std::atomic<std::size_t> available{0};  // batches.size(), read without the lock
    std::vector<Record*> batches;           // each a null-terminated chain of batch_size records
  };

  // Moves one shared batch into an empty list; false when there is none.
  static bool take_batch(Shared& shared, List& list) {
    // relaxed: only a hint; a stale value costs one base allocation or one locked look.
    if (shared.available.load(std::memory_order_relaxed) == 0) return false;
    std::scoped_lock lock(shared.lock);  // acquire: pairs with the release of the hand-off
    if (shared.batches.empty()) return false;
    list.head = shared.batches.back();
    list.count = batch_size;
    shared.batches.pop_back();
    shared.available.store(shared.batches.size(), std::memory_order_relaxed);
    return true;
  }

  template <class T>
  int slot_of() {
    return slots_.template index<T>([this](int slot) {
      release_[slot] = [](Base& base, int tid, void* p) {
        detail::pool_unpoison(p, sizeof(T));
        base.template deallocate<T>(tid, p);
      };
    });
  }

  void release_chain(int slot, int tid, Record* r) {
    while (r) {
      Record* next = r->next;
      release_[slot](base_, tid, r);
      r = next;
    }
  }

  Base base_;
  detail::TypeSlots<max_types> slots_;
  std::array<void (*)(Base&, int, void*), max_types> release_{};
  std::vector<Padded<std::array<List, max_types>>> lists_;
  std::array<Padded<Shared>, max_types> shared_;
};

}  // namespace cdsb::reclaim
