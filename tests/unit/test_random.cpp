// Tests of include/cdsbench/random: reference vectors, seeding (P2), the flaws kept on purpose
// (P3), and the statistics of the key distributions. Statistical checks use fixed seeds and
// 5-sigma (or 0.999-quantile) bounds, so they are deterministic and far from flaky.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "cdsbench/random/any_generator.hpp"
#include "cdsbench/random/distributions.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/reseeding.hpp"
#include "cdsbench/random/seeding.hpp"

namespace random_test {

using cdsb::AnyGenerator;
using cdsb::DistributionSpec;
using cdsb::GeneratorKind;
using cdsb::KeyDistribution;

static_assert(cdsb::Generator<cdsb::SplitMix64>);
static_assert(cdsb::Generator<cdsb::Xoshiro256StarStar>);
static_assert(cdsb::Generator<cdsb::Xorshift64Star>);
static_assert(cdsb::Generator<cdsb::Murmur3Counter>);
static_assert(cdsb::Generator<cdsb::Murmur2Counter>);
static_assert(cdsb::Generator<cdsb::Mt19937_64>);
static_assert(cdsb::Generator<cdsb::Fnv1aCounter>);
static_assert(cdsb::Generator<cdsb::Rdrand>);
static_assert(cdsb::Generator<AnyGenerator>);
static_assert(cdsb::Generator<cdsb::Reseeding<cdsb::Xoshiro256StarStar>>);

// ---- published reference outputs -------------------------------------------------------

// xoshiro256** from state {1, 2, 3, 4}: the test vector of rand_xoshiro (rust-random/rngs,
// rand_xoshiro/src/xoshiro256starstar.rs, test `reference`), produced there with Blackman &
// Vigna's reference xoshiro256starstar.c.
TEST(RandomReference, Xoshiro256StarStar) {
  cdsb::Xoshiro256StarStar g({1, 2, 3, 4});
  constexpr std::array<std::uint64_t, 10> expected = {
      11520ULL,
      0ULL,
      1509978240ULL,
      1215971899390074240ULL,
      1216172134540287360ULL,
      607988272756665600ULL,
      16172922978634559625ULL,
      8476171486693032832ULL,
      10595114339597558777ULL,
      2904607092377533576ULL,
  };
  for (std::uint64_t e : expected) EXPECT_EQ(g.next(), e);
}

TEST(RandomReference, Xoshiro256StarStarRejectsZeroState) {
  EXPECT_THROW(cdsb::Xoshiro256StarStar({0, 0, 0, 0}), std::invalid_argument);
}

// splitmix64 from state 1477776061723855037: the test vector of rand_xoshiro (rust-random/rngs,
// rand_xoshiro/src/splitmix64.rs, test `reference`), produced there with Vigna's reference
// splitmix64.c.
TEST(RandomReference, SplitMix64) {
  cdsb::SplitMix64 g(1477776061723855037ULL);
  constexpr std::array<std::uint64_t, 10> expected = {
      1985237415132408290ULL,  2979275885539914483ULL,  13511426838097143398ULL,
      8488337342461049707ULL,  15141737807933549159ULL, 17093170987380407015ULL,
      16389528042912955399ULL, 13177319091862933652ULL, 10841969400225389492ULL,
      17094824097954834098ULL,
  };
  for (std::uint64_t e : expected) EXPECT_EQ(g.next(), e);
  g.seed(1477776061723855037ULL);  // seed() sets the state: the stream restarts
  EXPECT_EQ(g.next(), expected[0]);
}

// C++ standard [rand.predef]: the 10000th consecutive invocation of a default-constructed
// mt19937_64 (seed 5489) produces 9981545732273789042.
TEST(RandomReference, MersenneTwister64) {
  cdsb::Mt19937_64 g;
  std::uint64_t value = 0;
  for (int i = 0; i < 10000; ++i) value = g.next();
  EXPECT_EQ(value, 9981545732273789042ULL);

  g.seed(5489);
  for (int i = 0; i < 10000; ++i) value = g.next();
  EXPECT_EQ(value, 9981545732273789042ULL);
}

// Copies are deep and continue the same sequence independently (the engine is on the heap).
TEST(RandomGenerators, MersenneTwisterCopiesAreIndependent) {
  cdsb::Mt19937_64 a(99);
  a.next();
  cdsb::Mt19937_64 b = a;
  const std::uint64_t from_a = a.next();
  a.next();
  EXPECT_EQ(b.next(), from_a);
  cdsb::Mt19937_64 c(1);
  c = b;
  EXPECT_EQ(c.next(), b.next());
  AnyGenerator any(GeneratorKind::mt19937_64, 5);
  AnyGenerator copy = any;
  EXPECT_EQ(copy.next(), any.next());
}

// ---- properties common to the seedable generators --------------------------------------

template <class G>
class SeedableGenerator : public ::testing::Test {};

using SeedableTypes =
    ::testing::Types<cdsb::SplitMix64, cdsb::Xoshiro256StarStar, cdsb::Xorshift64Star,
                     cdsb::Murmur3Counter, cdsb::Murmur2Counter, cdsb::Mt19937_64>;
TYPED_TEST_SUITE(SeedableGenerator, SeedableTypes);

template <class G>
std::vector<std::uint64_t> draws(std::uint64_t seed, int count) {
  G g;
  g.seed(seed);
  std::vector<std::uint64_t> out(static_cast<std::size_t>(count));
  for (auto& v : out) v = g.next();
  return out;
}

TYPED_TEST(SeedableGenerator, SameSeedSameSequence) {
  EXPECT_EQ(draws<TypeParam>(12345, 1000), draws<TypeParam>(12345, 1000));
}

TYPED_TEST(SeedableGenerator, DifferentSeedsDiffer) {
  const auto a = draws<TypeParam>(1, 1000);
  const auto b = draws<TypeParam>(2, 1000);
  int equal = 0;
  for (std::size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i];
  EXPECT_EQ(equal, 0);
}

// Each output bit is set in about half of the draws: a weak sanity check, not a quality
// test (the PRNG tools measure quality). 5 sigma of Binomial(100000, 1/2) is ~790.
TYPED_TEST(SeedableGenerator, EachBitSetAboutHalfTheTime) {
  constexpr int n = 100000;
  TypeParam g;
  g.seed(0xC0FFEE);
  std::array<int, 64> ones{};
  for (int i = 0; i < n; ++i) {
    const std::uint64_t v = g.next();
    for (int b = 0; b < 64; ++b) ones[b] += static_cast<int>((v >> b) & 1);
  }
  const double sigma = std::sqrt(n * 0.25);
  for (int b = 0; b < 64; ++b) {
    EXPECT_NEAR(ones[b], n / 2.0, 5 * sigma) << "bit " << b;
  }
}

// ---- the flaws kept on purpose (P3) ----------------------------------------------------

// FNV-1a's low output bit is 1 ^ (xor of the low bits of the counter's 8 bytes) because the
// FNV prime is odd. Incrementing the counter flips byte 0's low bit, so consecutive outputs
// alternate odd/even, except where a carry also flips byte 1's (every 256th step).
TEST(RandomFlaws, Fnv1aCounterAlternatesParity) {
  cdsb::Fnv1aCounter g(0);
  std::vector<std::uint64_t> out(4096);
  for (auto& v : out) v = g.next();
  int alternations = 0;
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    const bool alternates = ((out[i] ^ out[i + 1]) & 1) == 1;
    alternations += alternates;
    if ((i + 1) % 256 != 0) {
      EXPECT_TRUE(alternates) << "at counter " << i;
    }
  }
  EXPECT_GE(alternations, static_cast<int>(out.size()) * 255 / 256 - 1);
}

TEST(RandomFlaws, RdrandWhenAvailable) {
  if (!cdsb::Rdrand::available()) {
    GTEST_SKIP() << "this CPU has no RDRAND instruction (CPUID.1:ECX bit 30 clear)";
  }
  cdsb::Rdrand g;
  g.seed(1);  // a no-op, but part of the Generator interface
  const std::uint64_t first = g.next();
  bool differs = false;
  for (int i = 0; i < 64 && !differs; ++i) differs = g.next() != first;
  EXPECT_TRUE(differs);
}

// ---- AnyGenerator ----------------------------------------------------------------------

TEST(AnyGenerator, NamesRoundTrip) {
  EXPECT_EQ(cdsb::all_generators().size(), 8u);
  EXPECT_EQ(cdsb::all_generators().front(), GeneratorKind::xoshiro256starstar);
  for (GeneratorKind kind : cdsb::all_generators()) {
    const auto back = cdsb::generator_from_name(cdsb::generator_name(kind));
    ASSERT_TRUE(back.has_value()) << cdsb::generator_name(kind);
    EXPECT_EQ(*back, kind);
  }
  EXPECT_EQ(cdsb::generator_name(GeneratorKind::xoshiro256starstar), "xoshiro256starstar");
  EXPECT_EQ(cdsb::generator_name(GeneratorKind::fnv1a_counter), "fnv1a_counter");
  EXPECT_FALSE(cdsb::generator_from_name("rand").has_value());
  EXPECT_FALSE(cdsb::generator_from_name("").has_value());
}

TEST(AnyGenerator, Availability) {
  for (GeneratorKind kind : cdsb::all_generators()) {
    if (kind != GeneratorKind::rdrand) {
      EXPECT_TRUE(cdsb::generator_available(kind));
    }
  }
  EXPECT_EQ(cdsb::generator_available(GeneratorKind::rdrand), cdsb::Rdrand::available());
  if (!cdsb::Rdrand::available()) {
    EXPECT_THROW(AnyGenerator(GeneratorKind::rdrand, 1), std::invalid_argument);
  }
}

template <class G>
void expect_same_stream(GeneratorKind kind, std::uint64_t seed) {
  AnyGenerator any(kind, seed);
  EXPECT_EQ(any.kind(), kind);
  G direct;
  direct.seed(seed);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(any.next(), direct.next()) << any.name();
  any.seed(seed + 1);
  direct.seed(seed + 1);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(any.next(), direct.next()) << any.name();
}

TEST(AnyGenerator, MatchesConcreteGenerators) {
  expect_same_stream<cdsb::Xoshiro256StarStar>(GeneratorKind::xoshiro256starstar, 7);
  expect_same_stream<cdsb::SplitMix64>(GeneratorKind::splitmix64, 7);
  expect_same_stream<cdsb::Xorshift64Star>(GeneratorKind::xorshift64star, 7);
  expect_same_stream<cdsb::Murmur3Counter>(GeneratorKind::murmur3_counter, 7);
  expect_same_stream<cdsb::Murmur2Counter>(GeneratorKind::murmur2_counter, 7);
  expect_same_stream<cdsb::Mt19937_64>(GeneratorKind::mt19937_64, 7);
  expect_same_stream<cdsb::Fnv1aCounter>(GeneratorKind::fnv1a_counter, 7);
}

// ---- reseeding -------------------------------------------------------------------------

TEST(Reseeding, ReseedsEveryNDraws) {
  cdsb::Xoshiro256StarStar plain;
  plain.seed(42);
  cdsb::Reseeding<cdsb::Xoshiro256StarStar> wrapped(plain, 1000);
  int equal_after = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t expected = plain.next();
    const std::uint64_t got = wrapped.next();
    if (i < 1000) {
      ASSERT_EQ(got, expected) << "draw " << i;
    } else {
      equal_after += got == expected;
    }
  }
  EXPECT_EQ(wrapped.reseeds(), 10u);
  EXPECT_EQ(equal_after, 0);
}

TEST(Reseeding, EveryZeroNeverReseeds) {
  cdsb::Xoshiro256StarStar plain;
  plain.seed(42);
  cdsb::Reseeding<cdsb::Xoshiro256StarStar> wrapped(plain, 0);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(wrapped.next(), plain.next()) << "draw " << i;
  EXPECT_EQ(wrapped.reseeds(), 0u);
}

TEST(Reseeding, SeedRestartsTheCountdown) {
  cdsb::Reseeding<cdsb::SplitMix64> wrapped(cdsb::SplitMix64(0), 10);
  for (int i = 0; i < 5; ++i) wrapped.next();
  wrapped.seed(9);  // 10 more draws before the first reseed
  cdsb::SplitMix64 plain(9);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(wrapped.next(), plain.next());
  EXPECT_EQ(wrapped.reseeds(), 1u);
}

// ---- seeding (P2) ----------------------------------------------------------------------

TEST(Seeding, ThreadSeedIsTheTidthSplitMixOutput) {
  cdsb::SplitMix64 stream(0xDEADBEEF);
  for (int tid = 0; tid < 100; ++tid) EXPECT_EQ(cdsb::thread_seed(0xDEADBEEF, tid), stream.next());
}

TEST(Seeding, ThreadSeedsDistinct) {
  std::vector<std::uint64_t> seeds;
  // tid -1 is what the harness uses for its key-scrambling seed.
  for (int tid = -1; tid <= 10000; ++tid) seeds.push_back(cdsb::thread_seed(2024, tid));
  std::sort(seeds.begin(), seeds.end());
  EXPECT_EQ(std::adjacent_find(seeds.begin(), seeds.end()), seeds.end());
}

// 1000 threads x 1000 draws of the default generator: no value appears twice, so no two
// threads repeat each other's keys (a collision among 10^6 random 64-bit values has
// probability ~3e-8).
TEST(Seeding, ThreadStreamsDisjoint) {
  constexpr int threads = 1000;
  constexpr int per_thread = 1000;
  std::vector<std::uint64_t> values;
  values.reserve(threads * per_thread);
  const std::uint64_t master = 77;
  for (int tid = 0; tid < threads; ++tid) {
    AnyGenerator g(GeneratorKind::xoshiro256starstar, cdsb::thread_seed(master, tid));
    for (int i = 0; i < per_thread; ++i) values.push_back(g.next());
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(std::adjacent_find(values.begin(), values.end()), values.end());
}

TEST(Seeding, MasterSeedsDiffer) {
  // Two 64-bit draws of OS entropy coincide with probability 2^-64.
  EXPECT_NE(cdsb::draw_master_seed(), cdsb::draw_master_seed());
}

// ---- uniform ---------------------------------------------------------------------------

double chi_square(const std::vector<double>& observed, const std::vector<double>& expected) {
  double sum = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    const double d = observed[i] - expected[i];
    sum += d * d / expected[i];
  }
  return sum;
}

TEST(Uniform, ChiSquareOver100Buckets) {
  constexpr int n = 100;
  constexpr int draws_count = 1000000;
  cdsb::Xoshiro256StarStar g;
  g.seed(1);
  std::vector<double> observed(n, 0.0);
  for (int i = 0; i < draws_count; ++i) {
    const std::uint64_t v = cdsb::uniform_below(g, n);
    ASSERT_LT(v, static_cast<std::uint64_t>(n));
    observed[v] += 1;
  }
  const std::vector<double> expected(n, draws_count / static_cast<double>(n));
  EXPECT_LT(chi_square(observed, expected), 148.2);  // 0.999 quantile of chi-square(99)
}

TEST(Uniform, LargeNonPowerOfTwo) {
  constexpr std::uint64_t n = 3ULL << 62;
  constexpr int draws_count = 100000;
  cdsb::Xoshiro256StarStar g;
  g.seed(2);
  int low_half = 0;
  for (int i = 0; i < draws_count; ++i) {
    const std::uint64_t v = cdsb::uniform_below(g, n);
    ASSERT_LT(v, n);
    low_half += v < n / 2;
  }
  EXPECT_NEAR(low_half, draws_count / 2.0, 5 * std::sqrt(draws_count * 0.25));
}

TEST(Uniform, NOneIsAlwaysZero) {
  cdsb::Xoshiro256StarStar g;
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(cdsb::uniform_below(g, 1), 0u);
}

// Replays a fixed list of outputs, to drive the rejection path deterministically.
class ScriptedGenerator {
 public:
  explicit ScriptedGenerator(std::vector<std::uint64_t> outputs) : outputs_(std::move(outputs)) {}
  std::uint64_t next() { return outputs_.at(used_++); }
  void seed(std::uint64_t) {}
  std::size_t used() const { return used_; }

 private:
  std::vector<std::uint64_t> outputs_;
  std::size_t used_ = 0;
};

// n = 2^63 + 1: 2^64 mod n = 2^63 - 1, so a draw of 0 (low word 0) lies in the biased region
// and is rejected; a draw of 1 (low word 2^63 + 1) is accepted and yields 0.
TEST(Uniform, RejectsTheBiasedRegion) {
  constexpr std::uint64_t n = (1ULL << 63) + 1;
  ScriptedGenerator g({0, 1});
  EXPECT_EQ(cdsb::uniform_below(g, n), 0u);
  EXPECT_EQ(g.used(), 2u);
  ScriptedGenerator top({~0ULL});
  EXPECT_EQ(cdsb::uniform_below(top, n), n - 1);  // the largest draw maps to the top value
}

TEST(Uniform, Unit01) {
  cdsb::Xoshiro256StarStar g;
  g.seed(3);
  double sum = 0;
  constexpr int count = 100000;
  for (int i = 0; i < count; ++i) {
    const double u = cdsb::uniform_01(g);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / count, 0.5, 5 * std::sqrt(1.0 / 12 / count));
  ScriptedGenerator top({~0ULL});
  EXPECT_LT(cdsb::uniform_01(top), 1.0);
}

// ---- Zipf ------------------------------------------------------------------------------

TEST(Zipf, HarmonicApproximationMatchesSummation) {
  constexpr std::uint64_t n = 1000000;
  for (double theta : {0.5, 0.99, 1.0, 1.2}) {
    double direct = 0;
    for (std::uint64_t k = n; k >= 1; --k) direct += std::pow(static_cast<double>(k), -theta);
    EXPECT_NEAR(cdsb::generalized_harmonic(n, theta) / direct, 1.0, 1e-12) << theta;
  }
  EXPECT_DOUBLE_EQ(cdsb::generalized_harmonic(1, 0.7), 1.0);
  EXPECT_DOUBLE_EQ(cdsb::generalized_harmonic(2, 1.0), 1.5);
}

TEST(Zipf, RejectsBadParameters) {
  EXPECT_THROW(cdsb::ZipfSampler(0, 1.0), std::invalid_argument);
  EXPECT_THROW(cdsb::ZipfSampler(10, 0.0), std::invalid_argument);
  EXPECT_THROW(cdsb::ZipfSampler(10, -1.0), std::invalid_argument);
  EXPECT_THROW(cdsb::ZipfSampler(10, std::nan("")), std::invalid_argument);
  EXPECT_THROW(cdsb::ZipfSampler(10, std::numeric_limits<double>::infinity()),
               std::invalid_argument);
}

struct ZipfCase {
  std::uint64_t n;
  double theta;
};

class ZipfFrequencies : public ::testing::TestWithParam<ZipfCase> {};

// The frequency of each of ranks 1..5 lies within 5 standard errors of its exact probability.
TEST_P(ZipfFrequencies, TopRanksMatchProbability) {
  const auto [n, theta] = GetParam();
  const cdsb::ZipfSampler zipf(n, theta);
  cdsb::Xoshiro256StarStar g;
  g.seed(static_cast<std::uint64_t>(n) ^ static_cast<std::uint64_t>(theta * 1000));
  constexpr int samples = 2000000;
  std::array<int, 6> top{};
  for (int i = 0; i < samples; ++i) {
    const std::uint64_t rank = zipf(g);
    ASSERT_GE(rank, 1u);
    ASSERT_LE(rank, n);
    if (rank <= 5) ++top[rank];
  }
  double total = 0;
  for (std::uint64_t rank = 1; rank <= n && rank <= 5; ++rank) {
    const double p = zipf.probability(rank);
    total += p;
    const double standard_error = std::sqrt(p * (1 - p) / samples);
    EXPECT_NEAR(top[rank] / static_cast<double>(samples), p, 5 * standard_error)
        << "n=" << n << " theta=" << theta << " rank=" << rank;
  }
  EXPECT_GT(total, 0.0);
  EXPECT_EQ(zipf.probability(0), 0.0);
  EXPECT_EQ(zipf.probability(n + 1), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Grid, ZipfFrequencies,
                         ::testing::Values(ZipfCase{1000, 0.5}, ZipfCase{1000, 0.99},
                                           ZipfCase{1000, 1.0}, ZipfCase{1000, 1.2},
                                           ZipfCase{1000000, 0.5}, ZipfCase{1000000, 0.99},
                                           ZipfCase{1000000, 1.0}, ZipfCase{1000000, 1.2}),
                         [](const ::testing::TestParamInfo<ZipfCase>& info) {
                           return "n" + std::to_string(info.param.n) + "_theta" +
                                  std::to_string(static_cast<int>(info.param.theta * 100));
                         });

// Chi-square over ranks 1..50 plus one bucket for ranks 51..1000: 51 buckets, 50 degrees of
// freedom, 0.999 quantile 86.66.
TEST(Zipf, ChiSquareFirst50RanksAndTail) {
  constexpr std::uint64_t n = 1000;
  const cdsb::ZipfSampler zipf(n, 0.99);
  cdsb::Xoshiro256StarStar g;
  g.seed(99);
  constexpr int samples = 2000000;
  std::vector<double> observed(51, 0.0);
  for (int i = 0; i < samples; ++i) {
    const std::uint64_t rank = zipf(g);
    observed[rank <= 50 ? rank - 1 : 50] += 1;
  }
  std::vector<double> expected(51, 0.0);
  double head = 0;
  for (std::uint64_t rank = 1; rank <= 50; ++rank) {
    expected[rank - 1] = zipf.probability(rank) * samples;
    head += zipf.probability(rank);
  }
  expected[50] = (1 - head) * samples;
  EXPECT_LT(chi_square(observed, expected), 86.66);
}

TEST(Zipf, EdgeCases) {
  cdsb::Xoshiro256StarStar g;
  g.seed(5);
  const cdsb::ZipfSampler single(1, 0.99);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(single(g), 1u);
  EXPECT_DOUBLE_EQ(single.probability(1), 1.0);

  // A huge exponent puts (almost) all the mass on rank 1.
  const cdsb::ZipfSampler steep(1000, 60.0);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(steep(g), 1u);

  // A tiny exponent is nearly uniform: the top rank is barely favoured.
  const cdsb::ZipfSampler flat(10, 1e-6);
  std::array<int, 11> counts{};
  for (int i = 0; i < 100000; ++i) ++counts[flat(g)];
  for (std::uint64_t rank = 1; rank <= 10; ++rank) {
    EXPECT_NEAR(counts[rank], 10000, 5 * std::sqrt(100000 * 0.1 * 0.9)) << rank;
  }
}

// Ranks up to 2^63: in range, and ranks beyond 2^53 are not confined to multiples of the
// double spacing there (the spread step). theta = 0.5 puts ~97% of the mass above 2^53.
TEST(Zipf, HugeRange) {
  constexpr std::uint64_t n = 1ULL << 63;
  cdsb::Xoshiro256StarStar g;
  g.seed(6);
  for (double theta : {0.5, 0.99, 1.0, 1.5}) {
    const cdsb::ZipfSampler zipf(n, theta);
    int odd_beyond_2_53 = 0;
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t rank = zipf(g);
      ASSERT_GE(rank, 1u);
      ASSERT_LE(rank, n);
      odd_beyond_2_53 += rank > (1ULL << 53) && (rank & 1) == 1;
    }
    if (theta == 0.5) {
      EXPECT_GT(odd_beyond_2_53, 5000);
    }
    EXPECT_GT(zipf.probability(1), 0.0);
  }
  const cdsb::ZipfSampler widest(std::numeric_limits<std::uint64_t>::max(), 0.5);
  for (int i = 0; i < 1000; ++i) EXPECT_GE(widest(g), 1u);
}

// ---- Feistel permutation ---------------------------------------------------------------

TEST(Feistel, BijectionOnSmallDomains) {
  for (std::uint64_t n : {1ULL, 2ULL, 3ULL, 7ULL, 1000ULL, 65536ULL, 100003ULL}) {
    const cdsb::FeistelPermutation perm(n, 0xFEED + n);
    std::vector<bool> seen(n, false);
    std::uint64_t fixed_points = 0;
    for (std::uint64_t x = 0; x < n; ++x) {
      const std::uint64_t y = perm(x);
      ASSERT_LT(y, n) << "n=" << n;
      ASSERT_FALSE(seen[y]) << "n=" << n << " collision at " << y;
      seen[y] = true;
      fixed_points += x == y;
    }
    if (n >= 1000) {
      EXPECT_LT(fixed_points, n / 100) << "n=" << n;
    }
  }
}

TEST(Feistel, SeedSelectsPermutationAndLargeDomains) {
  const cdsb::FeistelPermutation a(1000, 1), b(1000, 2);
  int same = 0;
  for (std::uint64_t x = 0; x < 1000; ++x) same += a(x) == b(x);
  EXPECT_LT(same, 20);

  for (std::uint64_t n : {std::uint64_t{1} << 63, std::uint64_t{3} << 62, ~std::uint64_t{0}}) {
    const cdsb::FeistelPermutation perm(n, 3);
    for (std::uint64_t x : {std::uint64_t{0}, std::uint64_t{1}, n / 2, n - 2, n - 1}) {
      EXPECT_LT(perm(x), n);
    }
  }
  EXPECT_THROW(cdsb::FeistelPermutation(0, 1), std::invalid_argument);
}

// ---- key distributions -----------------------------------------------------------------

DistributionSpec parsed(std::string_view text) {
  auto result = cdsb::parse_distribution(text);
  if (auto* error = std::get_if<std::string>(&result)) {
    ADD_FAILURE() << *error;
    return {};
  }
  return std::get<DistributionSpec>(result);
}

std::uint64_t most_frequent_key(const KeyDistribution& dist, int samples, std::uint64_t seed,
                                double* frequency) {
  cdsb::Xoshiro256StarStar g;
  g.seed(seed);
  std::vector<int> counts(dist.key_range() + 1, 0);
  for (int i = 0; i < samples; ++i) {
    const std::uint64_t key = dist(g);
    EXPECT_GE(key, 1u);
    EXPECT_LE(key, dist.key_range());
    ++counts[key];
  }
  const auto top = std::max_element(counts.begin(), counts.end());
  *frequency = *top / static_cast<double>(samples);
  return static_cast<std::uint64_t>(top - counts.begin());
}

TEST(KeyDistribution, ScramblingKeepsFrequencies) {
  constexpr std::uint64_t range = 1000;
  constexpr std::uint64_t scramble_seed = 31337;
  constexpr int samples = 500000;
  const KeyDistribution scrambled(parsed("zipf:0.99"), range, scramble_seed);
  const double p1 = scrambled.zipf().probability(1);
  const double tolerance = 5 * std::sqrt(p1 * (1 - p1) / samples);

  double frequency = 0;
  const std::uint64_t top = most_frequent_key(scrambled, samples, 8, &frequency);
  EXPECT_EQ(top, cdsb::FeistelPermutation(range, scramble_seed)(0) + 1);
  EXPECT_EQ(top, scrambled.key_of_rank(1));
  EXPECT_NE(top, 1u);  // holds for this seed; the point is that the hot key moved
  EXPECT_NEAR(frequency, p1, tolerance);

  const KeyDistribution unscrambled(parsed("zipf-unscrambled:0.99"), range, scramble_seed);
  EXPECT_EQ(most_frequent_key(unscrambled, samples, 8, &frequency), 1u);
  EXPECT_NEAR(frequency, p1, tolerance);
}

TEST(KeyDistribution, Hotspot) {
  constexpr std::uint64_t range = 1000;
  const KeyDistribution dist(parsed("hotspot:10:90"), range, 0);
  EXPECT_EQ(dist.hot_size(), 100u);
  cdsb::Xoshiro256StarStar g;
  g.seed(10);
  constexpr int samples = 200000;
  int hot = 0;
  for (int i = 0; i < samples; ++i) {
    const std::uint64_t key = dist(g);
    ASSERT_GE(key, 1u);
    ASSERT_LE(key, range);
    hot += key <= 100;
  }
  EXPECT_NEAR(hot / static_cast<double>(samples), 0.9, 5 * std::sqrt(0.9 * 0.1 / samples));

  // No cold keys: every draw is hot, whatever OPS_PCT says.
  const KeyDistribution all_hot(parsed("hotspot:100:50"), range, 0);
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t key = all_hot(g);
    ASSERT_GE(key, 1u);
    ASSERT_LE(key, range);
  }
  // A hot set rounds to at least one key.
  const KeyDistribution tiny(parsed("hotspot:0.01:100"), 10, 0);
  EXPECT_EQ(tiny.hot_size(), 1u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(tiny(g), 1u);
}

TEST(KeyDistribution, UniformCoversTheRange) {
  const KeyDistribution dist(parsed("uniform"), 10, 0);
  cdsb::Xoshiro256StarStar g;
  g.seed(11);
  std::array<int, 11> counts{};
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t key = dist(g);
    ASSERT_GE(key, 1u);
    ASSERT_LE(key, 10u);
    ++counts[key];
  }
  EXPECT_EQ(counts[0], 0);
  for (std::uint64_t k = 1; k <= 10; ++k) EXPECT_GT(counts[k], 800) << k;
}

TEST(KeyDistribution, HugeKeyRanges) {
  cdsb::Xoshiro256StarStar g;
  g.seed(12);
  for (std::uint64_t range : {1ULL << 63, 3ULL << 62}) {
    for (std::string_view text :
         {"uniform", "zipf:0.99", "zipf-unscrambled:1.2", "zipf:0.5", "hotspot:10:90"}) {
      const KeyDistribution dist(parsed(text), range, 13);
      for (int i = 0; i < 2000; ++i) {
        const std::uint64_t key = dist(g);
        ASSERT_GE(key, 1u) << text;
        ASSERT_LE(key, range) << text;
      }
    }
  }
}

TEST(KeyDistribution, SingleKey) {
  cdsb::Xoshiro256StarStar g;
  for (std::string_view text : {"uniform", "zipf:0.99", "zipf-unscrambled:2", "hotspot:50:50"}) {
    const KeyDistribution dist(parsed(text), 1, 0);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(dist(g), 1u) << text;
  }
  EXPECT_THROW(KeyDistribution(parsed("uniform"), 0, 0), std::invalid_argument);
}

// ---- parsing ---------------------------------------------------------------------------

TEST(ParseDistribution, AcceptsTheDocumentedForms) {
  const DistributionSpec uniform = parsed("uniform");
  EXPECT_EQ(uniform.kind, DistributionSpec::Kind::uniform);
  EXPECT_EQ(uniform.text, "uniform");

  const DistributionSpec zipf = parsed("zipf:0.99");
  EXPECT_EQ(zipf.kind, DistributionSpec::Kind::zipf);
  EXPECT_DOUBLE_EQ(zipf.theta, 0.99);
  EXPECT_TRUE(zipf.scrambled);
  EXPECT_EQ(zipf.text, "zipf:0.99");

  const DistributionSpec plain = parsed("zipf-unscrambled:1.2");
  EXPECT_EQ(plain.kind, DistributionSpec::Kind::zipf);
  EXPECT_DOUBLE_EQ(plain.theta, 1.2);
  EXPECT_FALSE(plain.scrambled);

  EXPECT_DOUBLE_EQ(parsed("zipf:1").theta, 1.0);
  EXPECT_DOUBLE_EQ(parsed("zipf:1e-3").theta, 0.001);

  const DistributionSpec hot = parsed("hotspot:10:90");
  EXPECT_EQ(hot.kind, DistributionSpec::Kind::hotspot);
  EXPECT_DOUBLE_EQ(hot.hot_fraction, 0.1);
  EXPECT_DOUBLE_EQ(hot.hot_ops_fraction, 0.9);
  EXPECT_DOUBLE_EQ(parsed("hotspot:100:100").hot_fraction, 1.0);
  EXPECT_DOUBLE_EQ(parsed("hotspot:0.5:99.5").hot_ops_fraction, 0.995);
}

TEST(ParseDistribution, RejectsMalformedInput) {
  for (std::string_view text :
       {"", "zipf", "zipf:", "zipf:0", "zipf:-1", "zipf:abc", "zipf:1.0x", "zipf:nan",
        "zipf:inf", "zipf:+1", "zipf: 1", "zipf:1e999", "zipf-unscrambled:", "hotspot:10",
        "hotspot:0:50", "hotspot:10:101", "hotspot:10:", "hotspot::90", "hotspot:10:90:5",
        "hotspot:-10:90", "gauss", "uniform:3", "Uniform", " uniform"}) {
    const auto result = cdsb::parse_distribution(text);
    const auto* error = std::get_if<std::string>(&result);
    ASSERT_NE(error, nullptr) << "accepted '" << text << "'";
    EXPECT_EQ(error->rfind("--distribution: '", 0), 0u) << *error;
    EXPECT_NE(error->find(std::string(text)), std::string::npos) << *error;
    EXPECT_NE(error->find("allowed: uniform, zipf:THETA"), std::string::npos) << *error;
    EXPECT_EQ(error->find('\n'), std::string::npos) << *error;
  }
  const auto result = cdsb::parse_distribution("zipf:abc");
  EXPECT_EQ(std::get<std::string>(result),
            "--distribution: 'zipf:abc' is malformed; allowed: uniform, zipf:THETA (THETA > 0), "
            "zipf-unscrambled:THETA, hotspot:HOT_PCT:OPS_PCT (each in (0,100])");
}

}  // namespace random_test
