// Per-thread statistics for structure and reclaimer authors (in the spirit of Setbench's
// gstats): declare named counters, maxima and histograms once, bump them from any thread
// in one line, and read the totals quiescently.
//
//   enum Stat { cas_failures, restarts };
//   UserStats stats_{max_threads, {{"cas_failures", StatKind::counter},
//                                  {"restarts", StatKind::counter}}};
//   stats_.add(tid, cas_failures);          // on the hot path: one add to a private slot
//   StatsReport r = stats_.report();        // only while no thread runs an operation
//
// Each thread writes only its own slots (plain, non-atomic words on its own cache lines),
// so counting costs no coherence traffic; the report is read after the threads were joined
// (or otherwise synchronised with), which orders their writes before the read. Storage is
// allocated for the structure's thread count only (pitfall P11).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <new>

#include "cdsbench/platform/cache.hpp"

namespace cdsb {

enum class StatKind {
  counter,    // summed over threads
  maximum,    // the largest value any thread recorded
  histogram,  // count, sum, max and a log2 histogram of recorded values
};

struct StatSpec {
  std::string name;
  StatKind kind;
};

// A histogram's totals; bucket b counts values v with bit_width(v) == b, i.e. v in
// [2^(b-1), 2^b - 1] (bucket 0 counts zeros).
struct HistogramFigure {
  std::string name;
  std::uint64_t count = 0, sum = 0, max = 0;
  std::array<std::uint64_t, 65> log2_buckets{};
  double average() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0.0; }
};

struct StatsReport {
  std::vector<std::pair<std::string, std::uint64_t>> values;  // counters and maxima
  std::vector<HistogramFigure> histograms;

  void append(const StatsReport& other) {
    values.insert(values.end(), other.values.begin(), other.values.end());
    histograms.insert(histograms.end(), other.histograms.begin(), other.histograms.end());
  }
};

class UserStats {
 public:
  UserStats(int max_threads, std::vector<StatSpec> specs)
      : specs_(std::move(specs)), threads_(max_threads) {
    std::size_t words = 0;
    for (const auto& s : specs_) {
      offsets_.push_back(words);
      words += s.kind == StatKind::histogram ? histogram_words : 1;
    }
    // One block, each thread's words on lines of their own (no false sharing between them).
    constexpr std::size_t line_words = false_sharing_range / sizeof(std::uint64_t);
    stride_ = std::max<std::size_t>(1, (words + line_words - 1) / line_words) * line_words;
    words_.reset(new (std::align_val_t{false_sharing_range})
                     std::uint64_t[stride_ * static_cast<std::size_t>(max_threads)]());
  }

  // Hot path: thread tid only.
  void add(int tid, int stat, std::uint64_t amount = 1) noexcept { slot(tid, stat) += amount; }
  void set_max(int tid, int stat, std::uint64_t value) noexcept {
    std::uint64_t& m = slot(tid, stat);
    m = std::max(m, value);
  }
  void record(int tid, int stat, std::uint64_t value) noexcept {
    std::uint64_t* h = &slot(tid, stat);
    h[0] += 1;
    h[1] += value;
    h[2] = std::max(h[2], value);
    h[3 + std::bit_width(value)] += 1;
  }
  std::uint64_t value(int tid, int stat) const noexcept { return thread_words(tid)[offsets_[stat]]; }

  // Quiescent: totals over all threads.
  StatsReport report() const {
    StatsReport r;
    for (std::size_t s = 0; s < specs_.size(); ++s) {
      const std::size_t at = offsets_[s];
      if (specs_[s].kind == StatKind::histogram) {
        HistogramFigure h;
        h.name = specs_[s].name;
        for (int t = 0; t < threads_; ++t) {
          const std::uint64_t* w = thread_words(t) + at;
          h.count += w[0];
          h.sum += w[1];
          h.max = std::max(h.max, w[2]);
          for (std::size_t b = 0; b < h.log2_buckets.size(); ++b) h.log2_buckets[b] += w[3 + b];
        }
        r.histograms.push_back(std::move(h));
      } else {
        std::uint64_t total = 0;
        for (int t = 0; t < threads_; ++t) {
          const std::uint64_t v = thread_words(t)[at];
          total = specs_[s].kind == StatKind::counter ? total + v : std::max(total, v);
        }
        r.values.emplace_back(specs_[s].name, total);
      }
    }
    return r;
  }

 private:
  static constexpr std::size_t histogram_words = 3 + 65;  // count, sum, max, buckets

  struct AlignedDelete {
    void operator()(std::uint64_t* p) const noexcept {
      ::operator delete[](p, std::align_val_t{false_sharing_range});
    }
  };

  std::uint64_t* thread_words(int tid) const noexcept {
    return words_.get() + stride_ * static_cast<std::size_t>(tid);
  }
  std::uint64_t& slot(int tid, int stat) noexcept { return thread_words(tid)[offsets_[stat]]; }

  std::vector<StatSpec> specs_;
  std::vector<std::size_t> offsets_;
  int threads_;
  std::size_t stride_ = 0;
  std::unique_ptr<std::uint64_t[], AlignedDelete> words_;
};

}  // namespace cdsb
