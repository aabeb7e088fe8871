// An allocation policy (reclaim::AllocationPolicy) that hands no memory back while it lives, for
// scripted tests: an object the reclaimer frees is poisoned and remembered, its memory kept
// until the policy is destroyed. A test then asks whether a pointer a parked thread still holds
// was freed: a use-after-free shown by a state check, the same on every run and in every
// build tree, with no sanitizer needed (and none reports one, since the memory was never
// returned: a seeded bug can be proved caught in the ASan and TSan trees too). Addresses are
// never reused while a policy lives, so `was_freed` cannot confuse two objects.
//
// At destruction it frees everything it allocated and counts the objects the structure never
// freed (`leaked`): a leak check that does not depend on LeakSanitizer. It can also make one
// allocation fail (`fail_allocation_after`). Its one mutex orders
// the threads that allocate and free (TSan sees those edges): scripted tests check
// interleavings; TSan's view of a structure's own synchronisation comes from the stress tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

namespace cdsb::testing {

class QuarantineAllocator {
 public:
  static constexpr const char* name = "quarantine";
  static constexpr unsigned char poison = 0xdd;

  explicit QuarantineAllocator(int /*max_threads*/) {}
  QuarantineAllocator(const QuarantineAllocator&) = delete;
  QuarantineAllocator& operator=(const QuarantineAllocator&) = delete;

  ~QuarantineAllocator() {
    std::lock_guard lock(mutex_);
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      if (it->second.owner != this) {
        ++it;
        continue;
      }
      if (!it->second.freed) ++leaked_;
      ::operator delete(const_cast<void*>(it->first), std::align_val_t(it->second.align));
      it = blocks_.erase(it);
    }
  }

  template <class T>
  void* allocate(int /*tid*/) {
    {
      std::lock_guard lock(mutex_);
      if (fail_after_ == 0) {
        fail_after_ = -1;
        throw std::bad_alloc();
      }
      if (fail_after_ > 0) --fail_after_;
    }
    void* p = ::operator new(sizeof(T), std::align_val_t(alignof(T)));
    std::lock_guard lock(mutex_);
    blocks_[p] = Block{this, sizeof(T), alignof(T), false};
    return p;
  }

  // The object was destroyed: poison it (a reader that still uses it sees 0xdd bytes) and
  // keep its memory.
  template <class T>
  void deallocate(int /*tid*/, void* p) noexcept {
    std::lock_guard lock(mutex_);
    Block& b = blocks_.at(p);
    b.freed = true;
    std::memset(p, poison, b.size);
  }

  // Whether the reclaimer freed the object at p (false for memory not allocated here).
  static bool was_freed(const void* p) {
    std::lock_guard lock(mutex_);
    const auto it = blocks_.find(p);
    return it != blocks_.end() && it->second.freed;
  }

  // Objects never freed by the policies destroyed since the last reset_leaks.
  static std::int64_t leaked() {
    std::lock_guard lock(mutex_);
    return leaked_;
  }
  static void reset_leaks() {
    std::lock_guard lock(mutex_);
    leaked_ = 0;
  }

  // The allocation after the next n (of any instance) throws std::bad_alloc, once: a structure's
  // cleanup when an allocation fails mid-way.
  static void fail_allocation_after(int n) {
    std::lock_guard lock(mutex_);
    fail_after_ = n;
  }

 private:
  struct Block {
    const QuarantineAllocator* owner;
    std::size_t size, align;
    bool freed;
  };
  // One table for all instances (a test reaches the policy only through its type: the
  // reclaimer owns the instance). Every access takes the mutex: tests only.
  static inline std::mutex mutex_;
  static inline std::unordered_map<const void*, Block> blocks_;
  static inline std::int64_t leaked_ = 0;
  static inline int fail_after_ = -1;  // allocations left before one fails; -1: none fails
};

}  // namespace cdsb::testing
