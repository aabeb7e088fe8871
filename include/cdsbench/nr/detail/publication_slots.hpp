// Flat-combining publication slots (Hendler, Incze, Shavit & Tzafrir, "Flat Combining and
// the Synchronization-Parallelism Tradeoff", SPAA 2010), shared by flat combining (FC, FC+)
// and by Node Replication's combining inside a node.
//
// One slot per thread, in two parts on separate false-sharing ranges: the request (the
// operation and its sequence number), written by the thread and read by combiners, and
// the response (the result and the sequence number it answers), written by combiners and
// read by the thread. A thread's n-th request carries sequence number n; a request is
// pending while its number differs from the last one answered. Sequence numbers instead of
// a pending flag that combiners clear mean each field has one writer side, and the request
// line is written only by its thread.
//
// Protocol (the numbers pair the accesses):
//   thread:   op = ...; (P1) seq.store(n, release)            ...  (R2) done.load(acquire) == n; read result
//   combiner: (P2) seq.load(acquire) != done ? read op ...        result = ...; (R1) done.store(n, release)
// The arguments are written before the sequence number that publishes them, so a combiner
// that sees n sees the n-th operation's arguments; the thread writes its next arguments only
// after it has seen its answer, which the combiner wrote after reading the arguments, so a
// combiner never reads arguments being overwritten.
//
// Combiner-side calls must be made by one thread at a time (the caller's combiner lock
// orders successive combiners: `done` is read relaxed by the combiner because only
// combiners write it, and the lock's acquire/release orders their accesses).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "cdsbench/platform/cache.hpp"

namespace cdsb::detail {

template <class Op, class Result>
class PublicationSlots {
 public:
  explicit PublicationSlots(int slots)
      : count_(slots), requests_(std::make_unique<Request[]>(slots)), responses_(std::make_unique<Response[]>(slots)) {}

  int size() const noexcept { return count_; }

  // ---- thread side (slot's own thread only) ----------------------------------------------
  // Publishes op; returns its sequence number.
  std::uint64_t post(int slot, const Op& op) noexcept {
    Request& r = requests_[slot];
    r.op = op;
    // Only this thread writes seq: a relaxed read of our own last value.
    const std::uint64_t n = r.seq.load(std::memory_order_relaxed) + 1;
    r.seq.store(n, std::memory_order_release);  // (P1) pairs with (P2)
    return n;
  }

  bool answered(int slot, std::uint64_t n) const noexcept {
    return responses_[slot].done.load(std::memory_order_acquire) == n;  // (R2) pairs with (R1)
  }

  // The answer to the request `answered` just confirmed.
  const Result& result(int slot) const noexcept { return responses_[slot].result; }

  // ---- combiner side (one combiner at a time) --------------------------------------------
  // Calls fn(slot, op, n) for each pending request. Returns how many.
  template <class Fn>
  int for_each_pending(Fn&& fn) {
    int found = 0;
    for (int s = 0; s < count_; ++s) {
      const std::uint64_t n = requests_[s].seq.load(std::memory_order_acquire);  // (P2)
      if (n != responses_[s].done.load(std::memory_order_relaxed)) {
        fn(s, requests_[s].op, n);
        ++found;
      }
    }
    return found;
  }

  void respond(int slot, std::uint64_t n, const Result& result) noexcept {
    Response& r = responses_[slot];
    r.result = result;
    r.done.store(n, std::memory_order_release);  // (R1) pairs with (R2)
  }

  std::size_t memory_bytes() const noexcept {
    return static_cast<std::size_t>(count_) * (sizeof(Request) + sizeof(Response));
  }

 private:
  struct alignas(false_sharing_range) Request {
    Op op{};
    std::atomic<std::uint64_t> seq{0};
  };
  struct alignas(false_sharing_range) Response {
    Result result{};
    std::atomic<std::uint64_t> done{0};
  };
  int count_;
  std::unique_ptr<Request[]> requests_;
  std::unique_ptr<Response[]> responses_;
};

}  // namespace cdsb::detail
