// `--chunker gear`: content-defined chunking in the style of FastCDC (Xia et al., "FastCDC: a Fast
// and Efficient Content-Defined Chunking Approach for Data Deduplication", USENIX ATC 2016).
//
// The Gear rolling hash: h' = (h << 1) + G[byte], G a table of 256 fixed pseudo-random 64-bit
// words; bit k of h depends on the last k + 1 bytes only, so a cut test on the top bits is a
// content-defined test over a window of about 50 bytes, at one shift, one add and one load a
// byte. The paper's three speed-ups, all here:
// - cut-point skipping: the first `min` bytes of a chunk are not hashed (no cut can fall there);
// - normalized chunking: below the `normal` size the test needs more zero bits (mask_hard, two
//   bits more than log2(normal)), from it on fewer (mask_easy, two bits fewer), so chunk sizes
//   gather around `normal` instead of spreading geometrically;
// - a `max` size, where a chunk is cut whatever its content.
// The masks take the hash's top bits (the ones with the longest window). Not PARSEC's chunking
// (that is RabinChunker's).
//
// Speed: the hash is one dependency chain through every byte, so the loop rolls two bytes a step
// (FastCDC 2020's idea): h2 = (h << 2) + (G[b0] << 1) + G[b1] needs one shift and one add of h,
// the byte terms summed beside it, and h1 = (h << 1) + G[b0] is tested off the chain. The cuts
// are exactly the one-byte loop's.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdsb::dedup {

// A gear chunker's chunk sizes, in bytes (FastCDC's defaults for an 8 KiB average).
struct GearSizes {
  std::size_t min = 2 << 10, normal = 8 << 10, max = 64 << 10;
};

class GearChunker {
 public:
  using Sizes = GearSizes;

  explicit GearChunker(Sizes sizes = {}) : sizes_(sizes) {
    if (!(sizes.min >= 64 && sizes.min < sizes.normal && sizes.normal < sizes.max && std::has_single_bit(sizes.normal)))
      throw std::invalid_argument("gear chunk sizes: need 64 <= min < normal < max and normal a power of two (got " +
                                  std::to_string(sizes.min) + ", " + std::to_string(sizes.normal) + ", " +
                                  std::to_string(sizes.max) + ")");
    const int bits = std::countr_zero(sizes.normal);
    mask_hard_ = top_bits(bits + 2);
    mask_easy_ = top_bits(bits - 2);
  }

  const Sizes& sizes() const noexcept { return sizes_; }

  // The length of the first chunk of `bytes`: the offset just past its cut, `max` when the
  // content gives none before it, or bytes.size() when the span ends first (no cut inside: a
  // caller with more input to come scans again with more; at the end of the input it is the
  // last chunk).
  std::size_t scan(std::span<const std::uint8_t> bytes) const noexcept {
    const std::size_t n = bytes.size();
    if (n <= sizes_.min) return n;
    const std::size_t end = n < sizes_.max ? n : sizes_.max;
    const std::size_t switch_at = n < sizes_.normal ? n : sizes_.normal;
    std::uint64_t h = 0;
    if (const std::size_t cut = roll(bytes, sizes_.min, switch_at, mask_hard_, h)) return cut;
    if (const std::size_t cut = roll(bytes, switch_at, end, mask_easy_, h)) return cut;
    return end;
  }

  // Every chunk's end offset, in order.
  std::vector<std::size_t> chunk_ends(std::span<const std::uint8_t> input) const {
    std::vector<std::size_t> ends;
    for (std::size_t at = 0; at < input.size();) ends.push_back(at += scan(input.subspan(at)));
    return ends;
  }

 private:
  static constexpr std::uint64_t top_bits(int k) noexcept { return ~std::uint64_t{0} << (64 - k); }

  // Hashes bytes [from, to) into h: the offset just past the first byte after which h & mask is
  // 0, or 0 when none is (a cut is never at 0).
  static std::size_t roll(std::span<const std::uint8_t> bytes, std::size_t from, std::size_t to, std::uint64_t mask,
                          std::uint64_t& h) noexcept {
    std::size_t i = from;
    for (; i + 2 <= to; i += 2) {
      const std::uint64_t a = table[bytes[i]], b = table[bytes[i + 1]];
      const std::uint64_t h1 = (h << 1) + a;
      h = (h << 2) + ((a << 1) + b);
      if ((h1 & mask) == 0) return i + 1;
      if ((h & mask) == 0) return i + 2;
    }
    if (i < to) {
      h = (h << 1) + table[bytes[i]];
      if ((h & mask) == 0) return i + 1;
    }
    return 0;
  }

 public:
  // G: splitmix64 from a fixed seed (any fixed table works; this one is ours).
  static constexpr std::array<std::uint64_t, 256> table = [] {
    std::array<std::uint64_t, 256> t{};
    std::uint64_t s = 0x6765617243444321ULL;  // "gearCDC!"
    for (auto& g : t) {
      std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      g = z ^ (z >> 31);
    }
    return t;
  }();

 private:
  Sizes sizes_;
  std::uint64_t mask_hard_ = 0, mask_easy_ = 0;
};

}  // namespace cdsb::dedup
