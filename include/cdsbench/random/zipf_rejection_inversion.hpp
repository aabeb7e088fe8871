// Zipf ranks by rejection-inversion: Hörmann & Derflinger, "Rejection-inversion to generate
// variates from monotone discrete distributions", ACM TOMACS 6(3), 1996.
//
// Target: P(k) = k^-theta / H(n, theta) for ranks k in [1, n], any theta > 0 (theta = 1
// included), n up to 2^64 - 1.
//
// Method. The weights h(k) = k^-theta lie under the continuous hat h(x) = x^-theta, and since
// h is convex the area under it over [k - 1/2, k + 1/2] is at least h(k). So draw X with
// density proportional to h on [1/2, n + 1/2] by inverting its integral Hi(x) = ∫_1^x h:
// U uniform between Hi(3/2) - h(1) and Hi(n + 1/2), X = Hi^-1(U), K = round(X). Accept K when
// U >= Hi(K + 1/2) - h(K): the accepted part of K's cell has length exactly h(K), so the
// result is exact (no approximation beyond floating point). Starting U at Hi(3/2) - h(1)
// instead of Hi(1/2) cuts off the part of rank 1's cell that would always be rejected. The
// squeeze K - X <= s, with s = 2 - Hi^-1(Hi(5/2) - h(2)), accepts most draws without
// evaluating Hi again (the rejected sliver of a cell is widest at K = 2).
// Hi and Hi^-1 are written with log1p/expm1 helpers so that they stay accurate as theta -> 1,
// where (x^(1-theta) - 1) / (1 - theta) tends to log x.
//
// Cost. Setup: O(1) time and memory (four constants; no table, and no O(n) zeta sum as in
// Gray et al.'s approximate generator used by YCSB). Per sample: O(1) expected; the acceptance rate is at least
// 98% (checked numerically for theta in [1e-6, 30], n in [1, 2^63]), and an iteration costs
// one generator draw, one log1p and one exp, plus a log/expm1 pair when the squeeze does not
// decide.
//
// Ranks above 2^53 exceed double resolution; there the rank is spread uniformly over its
// double's rounding cell (a relative error below 2^-52 in the probability of any rank).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/uniform.hpp"

namespace cdsb {

namespace detail {

// log1p(x) / x, continuous at x = 0 (where the quotient is 0/0).
inline double log1p_over_x(double x) noexcept {
  if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
  return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}

// expm1(x) / x, continuous at x = 0.
inline double expm1_over_x(double x) noexcept {
  if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
  return 1.0 + 0.5 * x * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}

}  // namespace detail

// H(n, theta) = sum_{k=1}^{n} k^-theta. Exact summation (smallest terms first) for
// n <= 10^4; beyond, the first 999 terms exactly and the rest by Euler-Maclaurin with three
// Bernoulli corrections, whose truncation error at k = 1000 is far below double precision.
inline double generalized_harmonic(std::uint64_t n, double theta) {
  constexpr std::uint64_t exact_limit = 10000;
  constexpr std::uint64_t head = 1000;
  const auto term = [theta](double k) { return std::exp(-theta * std::log(k)); };
  if (n <= exact_limit) {
    double sum = 0;
    for (std::uint64_t k = n; k >= 1; --k) sum += term(static_cast<double>(k));
    return sum;
  }
  // Tail sum_{k=m}^{n} f(k) = ∫_m^n f + (f(m) + f(n)) / 2
  //   + sum_j B_2j / (2j)! (f^(2j-1)(n) - f^(2j-1)(m)),  f(x) = x^-theta.
  const double m = static_cast<double>(head);
  const double nn = static_cast<double>(n);
  const double log_m = std::log(m);
  const double span = std::log(nn) - log_m;
  // ∫_m^n x^-theta dx = m^(1-theta) (e^((1-theta) span) - 1) / (1 - theta), stable at theta = 1.
  const double integral =
      std::exp((1 - theta) * log_m) * detail::expm1_over_x((1 - theta) * span) * span;
  // d^(2j-1)/dx^(2j-1) x^-theta = -theta (theta+1) ... (theta+2j-2) x^(-theta-2j+1).
  const auto derivative = [theta](double x, int order) {
    double coefficient = -1;
    for (int i = 0; i < order; ++i) coefficient *= theta + i;
    return coefficient * std::exp((-theta - order) * std::log(x));
  };
  constexpr double bernoulli_over_factorial[] = {1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0};
  double tail = integral + 0.5 * (term(m) + term(nn));
  for (int j = 0; j < 3; ++j) {
    const int order = 2 * j + 1;
    tail += bernoulli_over_factorial[j] * (derivative(nn, order) - derivative(m, order));
  }
  double sum = 0;
  for (std::uint64_t k = head - 1; k >= 1; --k) sum += term(static_cast<double>(k));
  return sum + tail;
}

class ZipfSampler {
 public:
  // Throws std::invalid_argument unless n >= 1 and theta is finite and > 0 (theta = 0 is
  // the uniform distribution: the caller draws that directly).
  ZipfSampler(std::uint64_t n, double theta) : n_(n), theta_(theta) {
    if (n == 0) throw std::invalid_argument("ZipfSampler: n must be >= 1");
    if (!(theta > 0) || !std::isfinite(theta)) {
      throw std::invalid_argument("ZipfSampler: theta must be a finite number > 0");
    }
    n_as_double_ = static_cast<double>(n);
    u_high_ = hi(n_as_double_ + 0.5);
    u_low_ = hi(1.5) - 1.0;  // h(1) = 1
    squeeze_ = 2.0 - hi_inverse(hi(2.5) - h(2.0));
  }

  // A rank in [1, n]; rank 1 is the most frequent. Const and stateless: one sampler may be
  // shared by all threads, each bringing its own generator.
  template <Generator G>
  std::uint64_t operator()(G& g) const {
    for (;;) {
      // u runs from u_high_ down to u_low_, so uniform_01 = 0 maps inside the support.
      const double u = u_high_ + uniform_01(g) * (u_low_ - u_high_);
      const double x = hi_inverse(u);
      const double rounded = std::floor(x + 0.5);
      // Clamp in double before converting: x may round past n (or be +inf at u's edge).
      std::uint64_t k;
      double k_as_double;
      if (rounded >= n_as_double_) {
        k = n_;
        k_as_double = n_as_double_;
      } else if (rounded < 1.0) {
        k = 1;
        k_as_double = 1.0;
      } else {
        k = static_cast<std::uint64_t>(rounded);
        k_as_double = rounded;
      }
      if (k_as_double - x <= squeeze_ || u >= hi(k_as_double + 0.5) - h(k_as_double)) {
        if (k >= (std::uint64_t{1} << 53)) [[unlikely]] return spread(g, k, k_as_double);
        return k;
      }
    }
  }

  // Exact P(rank) = rank^-theta / H(n, theta); 0 outside [1, n]. Costs up to 10^4 pow
  // evaluations per call (the normaliser is recomputed, keeping the sampler stateless).
  double probability(std::uint64_t rank) const {
    if (rank < 1 || rank > n_) return 0.0;
    return h(static_cast<double>(rank)) / generalized_harmonic(n_, theta_);
  }

  std::uint64_t n() const noexcept { return n_; }
  double theta() const noexcept { return theta_; }

 private:
  double h(double x) const noexcept { return std::exp(-theta_ * std::log(x)); }

  // Hi(x) = ∫_1^x t^-theta dt = (x^(1-theta) - 1) / (1 - theta), or log x at theta = 1.
  double hi(double x) const noexcept {
    const double log_x = std::log(x);
    return detail::expm1_over_x((1.0 - theta_) * log_x) * log_x;
  }

  // Hi^-1(y) = (1 + (1-theta) y)^(1/(1-theta)), or e^y at theta = 1. For theta > 1 the
  // argument of log1p is > -1 in exact arithmetic; clamp what rounding pushes below.
  double hi_inverse(double y) const noexcept {
    double t = y * (1.0 - theta_);
    if (t < -1.0) t = -1.0;
    return std::exp(detail::log1p_over_x(t) * y);
  }

  // Doubles near k are ulp(k) apart, so only multiples of ulp(k) come out of the inversion;
  // h is flat across one ulp to 2^-52 relative, so a uniform offset restores the others.
  template <Generator G>
  std::uint64_t spread(G& g, std::uint64_t k, double k_as_double) const {
    const auto ulp = static_cast<std::uint64_t>(
        std::nextafter(k_as_double, std::numeric_limits<double>::infinity()) - k_as_double);
    const std::uint64_t low = k - ulp / 2;
    const std::uint64_t spread_k = low + uniform_below(g, ulp);
    return spread_k > n_ ? n_ : spread_k;
  }

  std::uint64_t n_;
  double theta_;
  double n_as_double_ = 1;
  double u_high_ = 0;
  double u_low_ = 0;
  double squeeze_ = 0;
};

}  // namespace cdsb
