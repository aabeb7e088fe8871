// Node counts for the peers (bench/adapters/): an allocator that counts what a library
// structure allocates and frees, so a peer reports `nodes_allocated` / `nodes_freed` like
// our reclaimers do (docs/output.md) and nodes per key can be compared side by side.
//
// Library containers (libcds, oneTBB) build their allocators where they need them from the
// allocator *type*, so the counts cannot live in an allocator object. They live in per-thread
// blocks reached through `thread_local`: each block is written by its own thread only (a
// relaxed load and store, no read-modify-write, nothing shared on the hot path), summed while
// the structure is quiescent, and folded into a process total when its thread exits. The
// memory itself comes from std::allocator, i.e. the process's malloc: the same source as our
// structures' `system` allocator.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace cdsb::bench::peers {

// Totals of one counter family (Tag) over every thread, live or exited, since the process
// started; read them only while no thread allocates or frees through Tag.
struct AllocationTotals {
  std::uint64_t allocated = 0, freed = 0;
};

template <class Tag>
class AllocationCounter {
 public:
  static void on_allocate() noexcept { bump(&Block::allocated, &Shared::late_allocated); }
  static void on_free() noexcept { bump(&Block::freed, &Shared::late_freed); }

  static AllocationTotals totals() {
    Shared& s = shared();
    std::lock_guard lock(s.mutex);
    AllocationTotals t = s.exited;
    for (const Block* b = s.live; b; b = b->next) {
      t.allocated += b->allocated.load(std::memory_order_relaxed);
      t.freed += b->freed.load(std::memory_order_relaxed);
    }
    t.allocated += s.late_allocated.load(std::memory_order_relaxed);
    t.freed += s.late_freed.load(std::memory_order_relaxed);
    return t;
  }

 private:
  struct Block {
    // Written by the owning thread only; atomics so that totals() may read them (after the
    // owner's operations are ordered before it by a join or the trial's barriers).
    std::atomic<std::uint64_t> allocated{0}, freed{0};
    Block* prev = nullptr;
    Block* next = nullptr;
  };
  struct Shared {
    std::mutex mutex;
    Block* live = nullptr;   // blocks of running threads
    AllocationTotals exited;  // folded in by threads that ended
    // Counts made during thread teardown, after the thread's block was folded (e.g. a library
    // freeing nodes from a TLS destructor that runs after ours): rare, so an RMW is fine.
    std::atomic<std::uint64_t> late_allocated{0}, late_freed{0};
  };
  // Never destroyed: threads may count until the very end of the process.
  static Shared& shared() {
    static Shared* s = new Shared;
    return *s;
  }

  // The thread's registration: its block while it runs, folded into `exited` when it ends.
  struct Holder {
    Block* block = nullptr;
    Block* get() {
      if (!block) {
        block = new Block;
        Shared& s = shared();
        std::lock_guard lock(s.mutex);
        block->next = s.live;
        if (s.live) s.live->prev = block;
        s.live = block;
      }
      return block;
    }
    ~Holder() {
      if (!block) return;
      Shared& s = shared();
      {
        std::lock_guard lock(s.mutex);
        s.exited.allocated += block->allocated.load(std::memory_order_relaxed);
        s.exited.freed += block->freed.load(std::memory_order_relaxed);
        (block->prev ? block->prev->next : s.live) = block->next;
        if (block->next) block->next->prev = block->prev;
      }
      delete block;
      torn_down = true;
    }
  };
  static inline thread_local Holder holder;
  static inline thread_local bool torn_down = false;  // trivially destructible: valid to the end

  static void bump(std::atomic<std::uint64_t> Block::*field, std::atomic<std::uint64_t> Shared::*late) noexcept {
    if (torn_down) [[unlikely]] {
      (shared().*late).fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::atomic<std::uint64_t>& c = holder.get()->*field;
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // owner-only
  }
};

// A std::allocator that reports each allocation and deallocation to AllocationCounter<Tag>.
// Every call counts as one node: the peers allocate one block per node through it (libcds's
// and oneTBB's skip lists allocate a node and its tower as one block), so a structure whose
// nodes and descriptors come from different allocators gives each its own Tag.
template <class T, class Tag>
struct CountingAllocator {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = CountingAllocator<U, Tag>;
  };

  CountingAllocator() noexcept = default;
  template <class U>
  CountingAllocator(const CountingAllocator<U, Tag>&) noexcept {}

  T* allocate(std::size_t n) {
    T* p = std::allocator<T>{}.allocate(n);
    AllocationCounter<Tag>::on_allocate();
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept {
    AllocationCounter<Tag>::on_free();
    std::allocator<T>{}.deallocate(p, n);
  }

  template <class U>
  bool operator==(const CountingAllocator<U, Tag>&) const noexcept {
    return true;
  }
};

// Counts since a structure was built: totals minus a baseline taken at construction (only
// one peer of a tag lives at a time in the harness; a second would share the counts).
template <class Tag>
class AllocationSince {
 public:
  AllocationSince() : base_(AllocationCounter<Tag>::totals()) {}
  AllocationTotals now() const {
    const AllocationTotals t = AllocationCounter<Tag>::totals();
    return {t.allocated - base_.allocated, t.freed - base_.freed};
  }

 private:
  AllocationTotals base_;
};

}  // namespace cdsb::bench::peers
