// Dedup's first two stages, as PARSEC 3.0 splits them: the fragmenter reads the input and cuts
// it into coarse fragments (about 2 MiB: skip 2 MiB from the fragment's start, then cut at the
// first coarse anchor), one thread; refining cuts a fragment into chunks, many fragments at once.
// A fragment's end is always a chunk's end.
//
// - rabin: PARSEC's own rules (RabinChunker): the coarse anchor is its Rabin cut, scanned from a
//   fresh state 2 MiB into the fragment, and chunks are its chained Rabin scans. Exact, but for
//   one limit of ours: a fragment stops at 8 MiB (fragment_cap) when PARSEC's would run on (no
//   anchor in 6 MiB: never on real data, always on a long run of a byte whose hash never cuts),
//   so that memory stays bounded and every chunk stays within what a decoder accepts.
// - gear: the coarse anchor is a Gear hash cut 2 MiB into the fragment (a local hash over the
//   last 64 bytes, a 1 in 4,096 test), and chunks are GearChunker's.
//
// The fragmenter reads a little past 2 MiB and more only while no anchor shows, so a fragment
// costs about one read and one scan of a few KiB, whatever the cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "apps/dedup/codec.hpp"
#include "apps/dedup/gear_chunker.hpp"
#include "apps/dedup/io.hpp"
#include "apps/dedup/rabin_chunker.hpp"

namespace cdsb::dedup {

enum class ChunkerKind { rabin, gear };
const char* chunker_name(ChunkerKind);
std::optional<ChunkerKind> parse_chunker(std::string_view name);

inline constexpr std::size_t anchor_jump = RabinChunker::anchor_jump;  // 2 MiB
inline constexpr std::size_t fragment_cap = std::size_t{8} << 20;

class Chunking {
 public:
  explicit Chunking(ChunkerKind kind) : kind_(kind) {}
  ChunkerKind kind() const { return kind_; }

  // The length up to the first coarse anchor of `bytes` (a scan from a fresh state), or
  // bytes.size() when none falls inside.
  std::size_t coarse_scan(Bytes bytes) const;
  // The length of the first chunk of `bytes` (PARSEC: from a fresh state), bytes.size() at most.
  std::size_t scan(Bytes bytes) const { return kind_ == ChunkerKind::rabin ? RabinChunker::scan(bytes) : gear_.scan(bytes); }
  // Appends the end offset of each chunk of `fragment`, in order.
  void chunk(Bytes fragment, std::vector<std::uint32_t>& ends) const {
    for (std::size_t at = 0; at < fragment.size();) ends.push_back(static_cast<std::uint32_t>(at += scan(fragment.subspan(at))));
  }

 private:
  ChunkerKind kind_;
  GearChunker gear_;
};

class Fragmenter {
 public:
  Fragmenter(FdReader& in, const Chunking& chunking) : in_(in), chunking_(chunking) {}
  // Replaces `fragment` with the input's next fragment; false at the end of the input.
  bool next(std::vector<std::uint8_t>& fragment);
  std::uint64_t bytes_read() const { return in_.offset(); }

 private:
  // Reads until `buffered_` holds `want` bytes or the input ends.
  void fill(std::size_t want);

  FdReader& in_;
  const Chunking& chunking_;
  std::vector<std::uint8_t> buffered_;  // the next fragment's bytes read so far
  bool at_end_ = false;
};

}  // namespace cdsb::dedup
