// Key distributions of the harness (`--distribution`): uniform, Zipf (scrambled or not) and
// hotspot, over keys [1, key_range] with key_range up to 2^63 and beyond.
//
// A KeyDistribution is built once per run (construction may be expensive) and then shared
// read-only by all threads; each thread draws with its own generator, so sampling is const
// and touches no shared mutable state. Every key the harness draws, range-query start keys
// included, comes from it (pitfall P13).
//
// The building blocks live in their own headers and are re-exported here:
//   uniform.hpp                   uniform_below (Lemire), uniform_01
//   zipf_rejection_inversion.hpp  ZipfSampler (Hörmann & Derflinger), generalized_harmonic
//   feistel_permutation.hpp       FeistelPermutation (scrambles Zipf ranks over the keys)
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>

#include "cdsbench/random/feistel_permutation.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/uniform.hpp"
#include "cdsbench/random/zipf_rejection_inversion.hpp"

namespace cdsb {

struct DistributionSpec {
  enum class Kind { uniform, zipf, hotspot };
  Kind kind = Kind::uniform;
  double theta = 0;             // zipf: exponent, > 0
  bool scrambled = true;        // zipf: ranks spread over the key range by a permutation
  double hot_fraction = 0;      // hotspot: share of the keys that are hot, in (0, 1]
  double hot_ops_fraction = 0;  // hotspot: share of the draws that go to hot keys, in (0, 1]
  std::string text;             // as given on the command line, for reports
};

namespace detail {

inline constexpr std::string_view distribution_allowed =
    "allowed: uniform, zipf:THETA (THETA > 0), zipf-unscrambled:THETA, "
    "hotspot:HOT_PCT:OPS_PCT (each in (0,100])";

inline std::string distribution_error(std::string_view text, std::string_view problem) {
  std::string message = "--distribution: '";
  message += text;
  message += "' ";
  message += problem;
  message += "; ";
  message += distribution_allowed;
  return message;
}

// The whole of `text` as a finite double: no sign prefix '+', no spaces, no trailing
// characters; from_chars also reads "nan"/"inf", which the finiteness check turns away.
inline std::optional<double> parse_finite_double(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace detail

// Parses `uniform`, `zipf:THETA`, `zipf-unscrambled:THETA`, `hotspot:HOT_PCT:OPS_PCT`.
// Returns the spec, or a one-line error message that names the option and what is allowed.
inline std::variant<DistributionSpec, std::string> parse_distribution(std::string_view text) {
  DistributionSpec spec;
  spec.text = std::string(text);
  if (text == "uniform") return spec;

  const auto parse_zipf = [&](std::string_view theta_text,
                              bool scrambled) -> std::variant<DistributionSpec, std::string> {
    const auto theta = detail::parse_finite_double(theta_text);
    if (!theta) return detail::distribution_error(text, "is malformed");
    if (!(*theta > 0)) return detail::distribution_error(text, "has THETA <= 0");
    spec.kind = DistributionSpec::Kind::zipf;
    spec.theta = *theta;
    spec.scrambled = scrambled;
    return spec;
  };
  constexpr std::string_view zipf_prefix = "zipf:";
  constexpr std::string_view unscrambled_prefix = "zipf-unscrambled:";
  constexpr std::string_view hotspot_prefix = "hotspot:";
  if (text.starts_with(zipf_prefix)) return parse_zipf(text.substr(zipf_prefix.size()), true);
  if (text.starts_with(unscrambled_prefix)) {
    return parse_zipf(text.substr(unscrambled_prefix.size()), false);
  }
  if (text.starts_with(hotspot_prefix)) {
    const std::string_view rest = text.substr(hotspot_prefix.size());
    const std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos) return detail::distribution_error(text, "is malformed");
    const auto hot_pct = detail::parse_finite_double(rest.substr(0, colon));
    const auto ops_pct = detail::parse_finite_double(rest.substr(colon + 1));
    if (!hot_pct || !ops_pct) return detail::distribution_error(text, "is malformed");
    const auto in_range = [](double pct) { return pct > 0 && pct <= 100; };
    if (!in_range(*hot_pct) || !in_range(*ops_pct)) {
      return detail::distribution_error(text, "has a percentage outside (0,100]");
    }
    spec.kind = DistributionSpec::Kind::hotspot;
    spec.hot_fraction = *hot_pct / 100;
    spec.hot_ops_fraction = *ops_pct / 100;
    return spec;
  }
  return detail::distribution_error(text, "is malformed");
}

class KeyDistribution {
 public:
  // Throws std::invalid_argument for key_range == 0 or a spec outside its documented ranges.
  KeyDistribution(const DistributionSpec& spec, std::uint64_t key_range,
                  std::uint64_t scramble_seed)
      : spec_(spec), kind_(spec.kind), key_range_(key_range) {
    if (key_range == 0) throw std::invalid_argument("KeyDistribution: key_range must be >= 1");
    switch (kind_) {
      case DistributionSpec::Kind::uniform:
        break;
      case DistributionSpec::Kind::zipf:
        zipf_.emplace(key_range, spec.theta);
        if (spec.scrambled) permutation_.emplace(key_range, scramble_seed);
        break;
      case DistributionSpec::Kind::hotspot:
        init_hotspot(spec);
        break;
    }
  }

  // A key in [1, key_range]. Always inlined (the measured loop draws one per operation;
  // GCC left it out of line there otherwise).
  template <Generator G>
  [[gnu::always_inline]] std::uint64_t operator()(G& g) const {
    // Uniform inline (the common case of the measured loop); the others out of line.
    if (kind_ == DistributionSpec::Kind::uniform) [[likely]] return 1 + uniform_below(g, key_range_);
    return draw_skewed(g);
  }

  const DistributionSpec& spec() const noexcept { return spec_; }
  std::uint64_t key_range() const noexcept { return key_range_; }

  // Zipf only: the key that rank r (1 = most frequent) maps to. For tests and reports.
  std::uint64_t key_of_rank(std::uint64_t rank) const {
    if (!zipf_) throw std::logic_error("KeyDistribution::key_of_rank: not a zipf distribution");
    return permutation_ ? 1 + (*permutation_)(rank - 1) : rank;
  }

  // Zipf only: the sampler, e.g. for its exact probability(rank).
  const ZipfSampler& zipf() const {
    if (!zipf_) throw std::logic_error("KeyDistribution::zipf: not a zipf distribution");
    return *zipf_;
  }

  // Hotspot only: the hot keys are [1, hot_size()].
  std::uint64_t hot_size() const noexcept { return hot_size_; }

 private:
  template <Generator G>
  [[gnu::noinline]] std::uint64_t draw_skewed(G& g) const {
    if (kind_ == DistributionSpec::Kind::zipf) {
      const std::uint64_t rank = (*zipf_)(g);
      return permutation_ ? 1 + (*permutation_)(rank - 1) : rank;
    }
    // Hotspot: the top 53 bits against a threshold on the 2^53 grid decide hot or cold.
    if ((g.next() >> 11) < hot_ops_threshold_) return 1 + uniform_below(g, hot_size_);
    return hot_size_ + 1 + uniform_below(g, key_range_ - hot_size_);
  }

  void init_hotspot(const DistributionSpec& spec) {
    const auto in_range = [](double f) { return f > 0 && f <= 1; };
    if (!in_range(spec.hot_fraction) || !in_range(spec.hot_ops_fraction)) {
      throw std::invalid_argument("KeyDistribution: hotspot fractions must be in (0, 1]");
    }
    // H = max(1, round(R * hot_fraction)), clamped in double: R * 1.0 may round above R.
    const double hot = std::floor(static_cast<double>(key_range_) * spec.hot_fraction + 0.5);
    if (hot >= static_cast<double>(key_range_)) {
      hot_size_ = key_range_;
    } else {
      hot_size_ = hot < 1 ? 1 : static_cast<std::uint64_t>(hot);
    }
    constexpr double grid = 0x1.0p53;
    // With no cold keys every draw is hot; a threshold of 2^53 exceeds every 53-bit draw.
    hot_ops_threshold_ = hot_size_ == key_range_
                             ? std::uint64_t{1} << 53
                             : static_cast<std::uint64_t>(std::floor(spec.hot_ops_fraction * grid + 0.5));
  }

  DistributionSpec spec_;
  DistributionSpec::Kind kind_;
  std::uint64_t key_range_;
  std::optional<ZipfSampler> zipf_;
  std::optional<FeistelPermutation> permutation_;
  std::uint64_t hot_size_ = 0;
  std::uint64_t hot_ops_threshold_ = 0;
};

}  // namespace cdsb
