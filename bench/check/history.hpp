// History recording for linearizability checking (tools/lincheck).
//
// A workload takes a Recorder policy. NoRecorder (the default) compiles to nothing, so the
// measured loop is the same code with or without recording (P1). HistoryRecorder keeps one
// buffer per thread (nothing shared while recording) and stamps every operation's call and
// return with one monotonic clock (CLOCK_MONOTONIC through steady_clock) for all threads.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "bench/core/clock.hpp"
#include "bench/harness/trial_context.hpp"
#include "cdsbench/platform/cache.hpp"
#include "cdsbench/platform/fence.hpp"

namespace cdsb::bench {

// The checker orders operations by these stamps, so they must agree with what the memory
// system saw. A full fence before the return stamp drains the store buffer: an update whose
// linearization point is a plain store (the lazy list's link under its locks) is visible to
// every thread before its return is stamped; without it x86 TSO alone yields histories that
// look non-linearizable. A fence (and on x86 an lfence, which orders the clock read itself)
// after the call stamp keeps the operation's first loads from running before it.
inline std::uint64_t call_stamp_ns() noexcept {
  const std::uint64_t t = now_ns();
  seq_cst_fence();
#if defined(__x86_64__)
  __builtin_ia32_lfence();
#endif
  return t;
}

inline std::uint64_t return_stamp_ns() noexcept {
  seq_cst_fence();
#if defined(__x86_64__)
  __builtin_ia32_lfence();
#endif
  return now_ns();
}

struct NoRecorder {
  static constexpr bool enabled = false;
};

struct HistoryEvent {
  const char* op;             // the checker model's name of the operation
  std::int64_t args[3];
  int arg_count;
  std::int64_t result;
  bool has_result;            // false: the operation returned nothing (JSON null)
  std::uint64_t call_ns, return_ns;
  // A list result (a batch dequeue's items): list_count values at list_offset of the thread's
  // list buffer (HistoryRecorder::record_list); then result and has_result are unused.
  bool list_result = false;
  std::uint32_t list_offset = 0, list_count = 0;
};

class HistoryRecorder {
 public:
  static constexpr bool enabled = true;

  HistoryRecorder(int threads, std::size_t reserve_per_thread) : buffers_(threads), lists_(threads) {
    for (auto& b : buffers_) b->reserve(reserve_per_thread);
  }

  // Called only by thread tid: its own buffers.
  void record(int tid, const HistoryEvent& e) { buffers_[tid]->push_back(e); }
  void record_list(int tid, HistoryEvent e, std::span<const std::uint64_t> items) {
    std::vector<std::int64_t>& list = *lists_[tid];
    e.list_result = true;
    e.list_offset = static_cast<std::uint32_t>(list.size());
    e.list_count = static_cast<std::uint32_t>(items.size());
    list.insert(list.end(), items.begin(), items.end());
    buffers_[tid]->push_back(e);
  }

  int threads() const { return static_cast<int>(buffers_.size()); }
  const std::vector<HistoryEvent>& events(int tid) const { return *buffers_[tid]; }

  // JSON lines, one per operation, in the checker's input format:
  // {"history":H,"thread":T,"op":"insert","args":[5,5],"result":1,"call":NS,"return":NS}
  // (a list result: "result":[1,2,3])
  void write_jsonl(std::ostream& out, int history) const {
    for (int tid = 0; tid < threads(); ++tid) {
      for (const HistoryEvent& e : events(tid)) {
        out << "{\"history\":" << history << ",\"thread\":" << tid << ",\"op\":\"" << e.op
            << "\",\"args\":[";
        for (int a = 0; a < e.arg_count; ++a) out << (a ? "," : "") << e.args[a];
        out << "],\"result\":";
        if (e.list_result) {
          out << '[';
          for (std::uint32_t i = 0; i < e.list_count; ++i) out << (i ? "," : "") << (*lists_[tid])[e.list_offset + i];
          out << ']';
        } else if (e.has_result) {
          out << e.result;
        } else {
          out << "null";
        }
        out << ",\"call\":" << e.call_ns << ",\"return\":" << e.return_ns << "}\n";
      }
    }
  }

 private:
  std::vector<Padded<std::vector<HistoryEvent>>> buffers_;
  std::vector<Padded<std::vector<std::int64_t>>> lists_;  // the values of list results
};

// One recorded history: the trial's outcome (validated as usual) and every thread's events.
struct RecordedHistory {
  TrialOutcome outcome;
  HistoryRecorder recorder;
};

}  // namespace cdsb::bench
