// Log-linear latency histogram: exact below 16 ns, then 16 sub-buckets per power of two
// (relative bucket width 1/16, so a reported percentile is within ~3% of the true value).
// Fixed size (976 counters), no allocation while recording; one per thread per op type, and
// only when --latency-sample is on (P11: buffers sized by what the run uses).
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <optional>

namespace cdsb::bench {

class LatencyHistogram {
 public:
  static constexpr int sub_bits = 4;
  static constexpr int sub_buckets = 1 << sub_bits;
  static constexpr int bucket_count = (64 - sub_bits + 1) * sub_buckets;

  void record(std::uint64_t ns) noexcept {
    ++counts_[bucket_of(ns)];
    ++total_;
  }

  void merge(const LatencyHistogram& other) noexcept {
    for (int i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
  }

  std::uint64_t total() const noexcept { return total_; }
  std::uint64_t count(int bucket) const noexcept { return counts_[bucket]; }

  // Smallest bucket whose cumulative count reaches q (0 < q ≤ 1) of the total, reported as
  // the bucket's midpoint; nullopt when nothing was recorded.
  std::optional<double> percentile(double q) const noexcept {
    if (total_ == 0) return std::nullopt;
    auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total_));
    if (rank == 0) rank = 1;
    std::uint64_t seen = 0;
    for (int i = 0; i < bucket_count; ++i) {
      seen += counts_[i];
      if (seen >= rank) return 0.5 * static_cast<double>(lower_bound(i) + upper_bound(i));
    }
    return static_cast<double>(lower_bound(bucket_count - 1));
  }

  // Bucket i holds values in [lower_bound(i), upper_bound(i)).
  static constexpr std::uint64_t lower_bound(int i) noexcept {
    if (i < sub_buckets) return static_cast<std::uint64_t>(i);
    const int exponent = i / sub_buckets + sub_bits - 1;
    const auto sub = static_cast<std::uint64_t>(i % sub_buckets);
    return (std::uint64_t{1} << exponent) | (sub << (exponent - sub_bits));
  }
  static constexpr std::uint64_t upper_bound(int i) noexcept {
    if (i < sub_buckets) return static_cast<std::uint64_t>(i) + 1;
    const int exponent = i / sub_buckets + sub_bits - 1;
    return lower_bound(i) + (std::uint64_t{1} << (exponent - sub_bits));
  }

  static constexpr int bucket_of(std::uint64_t ns) noexcept {
    if (ns < sub_buckets) return static_cast<int>(ns);
    const int exponent = 63 - std::countl_zero(ns);  // ≥ sub_bits
    const auto sub = static_cast<int>((ns >> (exponent - sub_bits)) & (sub_buckets - 1));
    return (exponent - sub_bits + 1) * sub_buckets + sub;
  }

 private:
  std::array<std::uint64_t, bucket_count> counts_{};
  std::uint64_t total_ = 0;
};

}  // namespace cdsb::bench
