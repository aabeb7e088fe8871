// `none`: never frees a retired node while the structure lives (the leaky baseline that
// published implementations often were). Retired nodes are only remembered, so that the
// structure's destruction still frees them (LeakSanitizer stays quiet) and the report
// shows exactly how much garbage piled up. They are remembered in fixed chunks (16 bytes a
// node, never copied), so retiring costs no reallocation spikes on the hot path; the
// chunks are part of the memory growth this scheme shows.
//
// Progress: every operation is wait-free. protect is a plain acquire load: nothing is ever
// freed under a reader, so this scheme has no window for a scripted test to park a thread in
// (it has no interleaving points, platform/interleave.hpp).
#pragma once

#include <atomic>
#include <vector>

#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb::reclaim {

template <AllocationPolicy Alloc = SystemAllocator>
class NoReclaim : public ReclaimerBase<NoReclaim<Alloc>, Alloc> {
  using Base = ReclaimerBase<NoReclaim<Alloc>, Alloc>;
  friend Base;

 public:
  static constexpr const char* name = "none";
  static constexpr bool guards_whole_operation = true;  // nothing is freed while it lives
  struct NodeBase {};

  explicit NoReclaim(int max_threads, int /*slots*/ = 0, ReclaimOptions = {})
      : Base(max_threads, {}), retired_(max_threads) {}
  ~NoReclaim() {
    for (int tid = 0; tid < this->max_threads_; ++tid)
      for (auto& chunk : retired_[tid]->chunks) this->free_all(tid, chunk);
  }

  Guard<NoReclaim> enter(int tid) noexcept { return {*this, tid}; }
  void leave(int) noexcept {}

  // acquire: pairs with the release that published the node, so its fields are visible.
  template <class P>
  P protect(int, int, const std::atomic<P>& src) const noexcept {
    return src.load(std::memory_order_acquire);
  }

  template <class T>
  void retire(int tid, T* node) {
    Kept& kept = *retired_[tid];
    if (kept.chunks.empty() || kept.chunks.back().size() == chunk_size) {
      kept.chunks.emplace_back();
      kept.chunks.back().reserve(chunk_size);
    }
    kept.chunks.back().push_back(this->retired(tid, node));
    this->note_limbo(tid, ++kept.count);
  }

 private:
  static constexpr std::size_t chunk_size = 4096;

  struct Kept {
    std::vector<std::vector<typename Base::Retired>> chunks;  // each reserved once: never copied
    std::size_t count = 0;
  };

  std::size_t in_limbo() const {
    std::size_t n = 0;
    for (const auto& k : retired_) n += k->count;
    return n;
  }

  std::vector<Padded<Kept>> retired_;
};

static_assert(Reclaimer<NoReclaim<>>);

}  // namespace cdsb::reclaim
