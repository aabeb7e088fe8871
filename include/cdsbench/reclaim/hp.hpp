// `hp`: hazard pointers (Michael, "Hazard Pointers: Safe Memory Reclamation for Lock-Free
// Objects", IEEE TPDS 2004).
//
// Each thread owns K hazard slots (the structure says how many it needs) on its own cache
// lines. protect(slot, src) publishes the address it loaded from src and re-reads src: if
// src still holds it, the node was reachable after the hazard became visible, so a thread
// that unlinks it afterwards and scans will see the hazard. Retired nodes wait in a
// per-thread list; once R = 2·K·N + 64 more nodes than the last scan kept are there (N the thread count; R = 1 when eager)
// the thread scans all hazards and frees every node none of them holds. At most R + K·N
// nodes per thread are ever in limbo, whatever other threads do: garbage is bounded even
// when a thread stalls inside an operation.
//
// Progress: protect is lock-free (it retries only when src changed), retire and scans are
// wait-free (O(R log KN)). Structures must validate after protect as their algorithm says
// (e.g. Michael's list checks that the predecessor's link still points to the node,
// unmarked), and may not follow links out of a node they cannot prove was reachable.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "cdsbench/platform/fence.hpp"
#include "cdsbench/platform/interleave.hpp"
#include "cdsbench/platform/marked_ptr.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb::reclaim {

template <AllocationPolicy Alloc = SystemAllocator>
class HazardPointers : public ReclaimerBase<HazardPointers<Alloc>, Alloc> {
  using Base = ReclaimerBase<HazardPointers<Alloc>, Alloc>;
  using Retired = typename Base::Retired;
  friend Base;

 public:
  static constexpr const char* name = "hp";
  static constexpr bool guards_whole_operation = false;  // only what is protected, re-read from its link
  static constexpr int max_slots = 8;
  struct NodeBase {};

  HazardPointers(int max_threads, int slots, ReclaimOptions options = {})
      : Base(max_threads, {{"scans", StatKind::counter}}),
        slots_(slots),
        scan_threshold_(options.eager ? 1 : 2 * static_cast<std::size_t>(slots) * static_cast<std::size_t>(max_threads) + 64),
        hazards_(max_threads),
        local_(max_threads) {
    if (slots < 1 || slots > max_slots) throw std::invalid_argument("hazard pointers: 1..8 slots per thread");
    for (auto& l : local_) {
      l->retired.reserve(scan_threshold_);
      l->scan_at = scan_threshold_;
    }
  }

  ~HazardPointers() {
    for (int tid = 0; tid < this->max_threads_; ++tid) this->free_all(tid, local_[tid]->retired);
  }

  Guard<HazardPointers> enter(int tid) noexcept { return {*this, tid}; }

  // (4) release: clears this thread's hazards; what the operation read happens-before a
  // scan that sees a cleared slot in (3).
  void leave(int tid) noexcept {
    for (int s = 0; s < slots_; ++s) (*hazards_[tid])[s].store(nullptr, std::memory_order_release);
  }

  template <class P>
  P protect(int tid, int slot, const std::atomic<P>& src) noexcept {
    std::atomic<void*>& hazard = (*hazards_[tid])[slot];
    P v = src.load(std::memory_order_relaxed);
    for (;;) {
      CDSB_INTERLEAVE("hp.protect.loaded");  // loaded, not yet published: a scan now misses it
      // (1) seq_cst: the hazard must be visible before the re-read (2) (store-load order);
      // pairs with the scanner's fence and load (3).
      hazard.store(address_of(v), std::memory_order_seq_cst);
      CDSB_INTERLEAVE("hp.protect.published");  // published, src not yet re-read
      // (2) seq_cst, hence acquire: pairs with the release that published the node.
      const P again = src.load(std::memory_order_seq_cst);
      if (again == v || CDSB_MUTANT("hp.skip_recheck")) return v;
      v = again;
    }
  }

  // Drops one slot's protection early (a traversal that no longer needs the node).
  void clear(int tid, int slot) noexcept {
    (*hazards_[tid])[slot].store(nullptr, std::memory_order_release);
  }

  template <class T>
  void retire(int tid, T* node) {
    Local& me = *local_[tid];
    me.retired.push_back(this->retired(tid, node));
    this->note_limbo(tid, me.retired.size());
    if (me.retired.size() >= me.scan_at) scan(tid);
  }

 private:
  struct Local {  // thread-private
    std::size_t scan_at = 0;
    std::vector<Retired> retired, keep, freeing;
    std::vector<void*> hazards;
  };

  void scan(int tid) {
    Local& me = *local_[tid];
    this->stats_.add(tid, stat_scheme_first);
    // The unlinking of every node in our list (sequenced before its retire) is ordered before
    // the hazard reads below: with (1)/(2) on the reader's side, a reader either sees the
    // unlink in (2) and drops the node, or its hazard is visible to (3).
    seq_cst_fence();
    me.hazards.clear();
    for (int t = 0; t < this->max_threads_; ++t)
      for (int s = 0; s < slots_; ++s)
        // (3) seq_cst (an acquire too): pairs with (1) and, for TSan's happens-before, (4).
        if (void* h = (*hazards_[t])[s].load(std::memory_order_seq_cst)) me.hazards.push_back(h);
    std::sort(me.hazards.begin(), me.hazards.end());
    me.keep.clear();
    me.freeing.clear();
    for (const Retired& r : me.retired)
      (std::binary_search(me.hazards.begin(), me.hazards.end(), r.node) ? me.keep : me.freeing).push_back(r);
    me.retired.swap(me.keep);
    // Re-armed past what had to be kept, so nodes a reader still holds are not rescanned at
    // every retire: scans stay amortised over scan_threshold_ retirements.
    me.scan_at = me.retired.size() + scan_threshold_;
    this->free_all(tid, me.freeing);
  }

  std::size_t in_limbo() const {
    std::size_t n = 0;
    for (const auto& l : local_) n += l->retired.size();
    return n;
  }

  const int slots_;
  const std::size_t scan_threshold_;
  std::vector<Padded<std::array<std::atomic<void*>, max_slots>>> hazards_;  // read by scanners
  std::vector<Padded<Local>> local_;
};

static_assert(Reclaimer<HazardPointers<>>);

}  // namespace cdsb::reclaim
