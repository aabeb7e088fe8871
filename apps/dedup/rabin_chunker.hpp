// PARSEC 3.0 dedup's content-defined chunking, reproduced exactly (`--chunker rabin`): the
// boundaries its pthreads build cuts, quirks included, so that our archives in `--format parsec`
// are byte-identical to its encoder's. Written from a reading of its rabin.c and encoder.c
// (Bienia et al., PACT 2008), not from its code; tests/data/dedup holds boundaries that
// PARSEC's own binaries cut.
//
// The scan (PARSEC's rabinseg): a 32-bit Rabin fingerprint over GF(2) with the polynomial
// x^32 + 0x45C2B6A1 (its low 32 coefficient bits), fed byte by byte: h' = ((h << 8) | byte) XOR
// T[h >> 24], where T[b] is b(x) x^32 mod P. The first 32 bytes are fed without a test; then a
// cut falls after byte i when the low 12 bits of h are zero (1 in 4,096). Before each byte from
// the 33rd on, PARSEC XORs out the byte 32 positions back through a window table meant to hold
// b(x) x^248 mod P; but it builds that table for a window of 0 bytes, which makes it the
// identity: the XOR touches the low 8 bits only, so h depends on every byte since the scan
// began, not on the last 32. Cuts are therefore chained: each depends on where the scan
// started (the previous cut), as in PARSEC; a textbook sliding window would cut elsewhere.
// Hence also: no minimum but the 32-byte first block (zero runs give 32-byte chunks) and no
// maximum chunk size (this exact mode adds none).
//
// The pthreads build cuts in two stages (PARSEC's serial build, which has no first stage,
// cuts elsewhere once the input passes 2 MiB + 32 bytes):
// 1. coarse fragments: from a fragment's start S, skip 2 MiB and scan with a fresh state; a cut
//    strictly before the end of the input ends the fragment there, else it runs to the end;
// 2. inside each fragment, scans chained from its start, each from a fresh state; the
//    fragment's end is always a boundary.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cdsb::dedup {

class RabinChunker {
 public:
  static constexpr std::uint32_t polynomial = 0x45C2B6A1;  // x^32 + this
  static constexpr std::size_t first_block = 32;            // bytes fed before the first test
  static constexpr std::uint32_t mask = 0xFFF;              // a cut where h & mask == 0
  static constexpr std::size_t anchor_jump = std::size_t{2} << 20;  // the coarse stage's skip

  // The length of the first chunk of `bytes` (a scan from a fresh state): the offset just past
  // the first cut, or bytes.size() when no cut falls inside.
  static std::size_t scan(std::span<const std::uint8_t> bytes) noexcept {
    const std::size_t n = bytes.size();
    if (n < first_block) return n;
    std::uint32_t h = 0;
    for (std::size_t i = 0; i < first_block; ++i) h = step(h, bytes[i]);
    if ((h & mask) == 0) return first_block;
    for (std::size_t i = first_block; i < n; ++i) {
      h = step(h ^ bytes[i - first_block], bytes[i]);  // PARSEC's identity "window" term
      if ((h & mask) == 0) return i + 1;
    }
    return n;
  }

  // The end of the coarse fragment that starts at `start` (PARSEC's fragment stage).
  static std::size_t fragment_end(std::span<const std::uint8_t> input, std::size_t start) noexcept {
    const std::size_t left = input.size() - start;
    if (left <= anchor_jump) return input.size();
    const std::size_t cut = anchor_jump + scan(input.subspan(start + anchor_jump));
    return cut < left ? start + cut : input.size();
  }

  // Every chunk's end offset, in order, as PARSEC 3.0's pthreads build cuts `input` (or its
  // serial build, with `coarse` false). Empty for an empty input.
  static std::vector<std::size_t> chunk_ends(std::span<const std::uint8_t> input, bool coarse = true) {
    std::vector<std::size_t> ends;
    for (std::size_t start = 0; start < input.size();) {
      const std::size_t end = coarse ? fragment_end(input, start) : input.size();
      for (std::size_t at = start; at < end;) ends.push_back(at += scan(input.subspan(at, end - at)));
      start = end;
    }
    return ends;
  }

 // One byte into the fingerprint (the first 32 bytes of a scan; later bytes come in as
  // step(h ^ byte 32 back, byte)).
  static constexpr std::uint32_t step(std::uint32_t h, std::uint8_t byte) noexcept {
    return ((h << 8) | byte) ^ reduction[h >> 24];
  }

 private:

  // T[b] = b(x) x^32 mod P: b shifted left 32 times, reduced at each carry out of bit 31.
  static constexpr std::array<std::uint32_t, 256> reduction = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t b = 0; b < 256; ++b) {
      std::uint32_t v = b;
      for (int i = 0; i < 32; ++i) v = (v & 0x80000000u) ? (v << 1) ^ polynomial : v << 1;
      t[b] = v;
    }
    return t;
  }();
};

}  // namespace cdsb::dedup
