// The dedup application's chunkers (apps/dedup/): RabinChunker cuts exactly where PARSEC 3.0's
// own dedup cuts (its pthreads and its serial build), checked against boundaries that PARSEC's
// binaries produced (tests/data/dedup/README.md says how), and at the edges its rules define.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "apps/dedup/gear_chunker.hpp"
#include "apps/dedup/rabin_chunker.hpp"
#include "support/dedup_inputs.hpp"

namespace dedup_chunkers_test {

using cdsb::dedup::GearChunker;
using cdsb::dedup::RabinChunker;

using cdsb::test::generated;

std::vector<std::size_t> reference_ends(const std::string& name) {
  std::ifstream in(std::string(CDSBENCH_TEST_DATA) + "/dedup/" + name);
  EXPECT_TRUE(in) << "missing test data " << name;
  std::vector<std::size_t> ends;
  for (std::size_t e; in >> e;) ends.push_back(e);
  return ends;
}

void expect_parsec_boundaries(const std::vector<std::uint8_t>& input, const std::string& name) {
  for (const bool coarse : {true, false}) {
    const auto expected = reference_ends(name + (coarse ? ".pthreads.ends" : ".serial.ends"));
    ASSERT_FALSE(expected.empty());
    const auto ends = RabinChunker::chunk_ends(input, coarse);
    EXPECT_EQ(ends.size(), expected.size()) << name << (coarse ? " pthreads" : " serial");
    EXPECT_TRUE(ends == expected) << name << (coarse ? " pthreads" : " serial") << ": boundaries differ";
  }
}

TEST(RabinChunker, CutsWherePARSECCutsOneFragment) { expect_parsec_boundaries(cdsb::test::dedup_input_b(), "B"); }

// Two copies of 3 MB: three coarse fragments, whose starts re-seed the chained scans (only 832
// of the pthreads build's 1,522 boundaries are also the serial build's).
TEST(RabinChunker, CutsWherePARSECCutsAcrossFragmentsAndRepeats) {
  expect_parsec_boundaries(cdsb::test::dedup_input_a(), "A");
}

// A 16-letter alphabet over 8 MB: four coarse fragments.
TEST(RabinChunker, CutsWherePARSECCutsLowEntropyText) {
  expect_parsec_boundaries(cdsb::test::dedup_input_c(), "C");
}

// The rules at the edges: nothing for an empty input, one chunk below 32 bytes, 32-byte chunks
// for zeros (the fingerprint stays 0), and coarse fragments of at least 2 MiB + 32 bytes (but
// the last) whose ends are chunk ends.
TEST(RabinChunker, EdgesFollowPARSECsRules) {
  EXPECT_TRUE(RabinChunker::chunk_ends({}).empty());
  const std::vector<std::uint8_t> short_input(31, 7);
  EXPECT_EQ(RabinChunker::chunk_ends(short_input), std::vector<std::size_t>{31});
  const std::vector<std::uint8_t> zeros(40'000, 0);
  const auto zero_ends = RabinChunker::chunk_ends(zeros);
  ASSERT_EQ(zero_ends.size(), 1'250u);
  for (std::size_t i = 0; i < zero_ends.size(); ++i) EXPECT_EQ(zero_ends[i], 32 * (i + 1));
  // Coarse fragments: at least 2 MiB + 32 bytes but the last; each end is a chunk end.
  std::vector<std::uint8_t> c = generated(8'000'000, 7);
  const auto ends = RabinChunker::chunk_ends(c);
  std::size_t fragments = 0;
  for (std::size_t start = 0; start < c.size(); ++fragments) {
    const std::size_t end = RabinChunker::fragment_end(c, start);
    if (end < c.size()) {
      EXPECT_GE(end - start, RabinChunker::anchor_jump + RabinChunker::first_block);
    }
    EXPECT_TRUE(std::binary_search(ends.begin(), ends.end(), end));
    start = end;
  }
  EXPECT_EQ(fragments, 4u);
}

// ---- gear (FastCDC-style) ---------------------------------------------------------------

// Every chunk but the last within [min, max]; the ends cover the input; sizes gather around
// `normal` (normalized chunking); settings it cannot use are refused.
TEST(GearChunker, ChunksStayWithinTheirSizesAndGatherAroundTheNormalSize) {
  const GearChunker gear;  // 2 KiB, 8 KiB, 64 KiB
  const auto input = generated(16'000'000, 5);
  const auto ends = gear.chunk_ends(input);
  ASSERT_FALSE(ends.empty());
  EXPECT_EQ(ends.back(), input.size());
  std::size_t near_normal = 0, previous = 0;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const std::size_t size = ends[i] - previous;
    previous = ends[i];
    if (i + 1 < ends.size()) {
      EXPECT_GE(size, gear.sizes().min);
      EXPECT_LE(size, gear.sizes().max);
    }
    near_normal += size >= gear.sizes().normal / 2 && size <= 2 * gear.sizes().normal;
  }
  const double mean = static_cast<double>(input.size()) / static_cast<double>(ends.size());
  EXPECT_GT(mean, 0.75 * 8192);
  EXPECT_LT(mean, 1.5 * 8192);
  EXPECT_GT(static_cast<double>(near_normal) / static_cast<double>(ends.size()), 0.8);
  // A run of one byte value never cuts on content: max-size chunks.
  const std::vector<std::uint8_t> same(300'000, 0x41);
  const auto flat = gear.chunk_ends(same);
  for (std::size_t i = 0; i + 1 < flat.size(); ++i) EXPECT_EQ(flat[i], (i + 1) * gear.sizes().max);
  EXPECT_THROW(GearChunker({.min = 8192, .normal = 8192, .max = 65536}), std::invalid_argument);
  EXPECT_THROW(GearChunker({.min = 2048, .normal = 6000, .max = 65536}), std::invalid_argument);
}

// Content-defined: a byte inserted near the start moves every later boundary by one, once the
// chunks around the edit have passed.
TEST(GearChunker, AnInsertionShiftsLaterBoundariesWithoutChangingThem) {
  const GearChunker gear;
  const auto input = generated(4'000'000, 9);
  std::vector<std::uint8_t> edited = input;
  edited.insert(edited.begin() + 1000, 0x5a);
  const auto before = gear.chunk_ends(input), after = gear.chunk_ends(edited);
  std::size_t kept = 0, later = 0;
  for (const std::size_t e : before) {
    if (e < 100'000) continue;
    ++later;
    kept += std::binary_search(after.begin(), after.end(), e + 1);
  }
  EXPECT_GT(later, 300u);
  EXPECT_EQ(kept, later);
}

// The chunker rolls two bytes a step; its cuts must be the plain one-byte Gear loop's (FastCDC's
// definition, written here the obvious way): on content cuts at odd and even offsets, spans
// ending inside either phase, odd lengths, and a cut on the last byte of the hard phase.
std::size_t one_byte_scan(const GearChunker& gear, std::span<const std::uint8_t> bytes, std::uint64_t hard, std::uint64_t easy) {
  const auto& s = gear.sizes();
  if (bytes.size() <= s.min) return bytes.size();
  const std::size_t end = std::min(bytes.size(), s.max), switch_at = std::min(bytes.size(), s.normal);
  std::uint64_t h = 0;
  for (std::size_t i = s.min; i < end; ++i) {
    h = (h << 1) + GearChunker::table[bytes[i]];
    if ((h & (i < switch_at ? hard : easy)) == 0) return i + 1;
  }
  return end;
}

TEST(GearChunker, RollingTwoBytesAStepCutsWhereOneByteAStepDoes) {
  for (const GearChunker::Sizes sizes : {GearChunker::Sizes{}, GearChunker::Sizes{.min = 64, .normal = 128, .max = 300}}) {
    const GearChunker gear(sizes);
    const int bits = std::countr_zero(sizes.normal);
    const std::uint64_t hard = ~std::uint64_t{0} << (64 - (bits + 2)), easy = ~std::uint64_t{0} << (64 - (bits - 2));
    std::size_t odd = 0, even = 0, at_switch = 0;
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
      const auto input = generated(2'000'000, seed);
      for (std::size_t at = 0; at < input.size();) {
        const std::span<const std::uint8_t> rest(input.data() + at, input.size() - at);
        const std::size_t want = one_byte_scan(gear, rest, hard, easy);
        ASSERT_EQ(gear.scan(rest), want) << "seed " << seed << " at " << at;
        // The same span cut short, to every length around the phase switch and the maximum.
        for (const std::size_t n : {sizes.min + 1, sizes.normal - 1, sizes.normal, sizes.normal + 1, sizes.max - 1}) {
          const auto part = rest.first(std::min(n, rest.size()));
          ASSERT_EQ(gear.scan(part), one_byte_scan(gear, part, hard, easy)) << "seed " << seed << " at " << at << " n " << n;
        }
        (want % 2 ? odd : even) += want < std::min(rest.size(), sizes.max);
        at_switch += want == sizes.normal && sizes.normal < rest.size();
        at += want;
      }
    }
    EXPECT_GT(odd, 100u);  // content cuts after odd and even offsets both happened
    EXPECT_GT(even, 100u);
    if (sizes.normal == 128) {
      EXPECT_GT(at_switch, 0u);  // a cut on the hard phase's last byte
    }
  }
}

}  // namespace dedup_chunkers_test
