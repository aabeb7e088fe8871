// Dedup's two archive formats (docs/dedup-format.md gives them byte by byte), their writer and
// their decoder.
//
// - `cdsbench` (ours, the default): a 16-byte header (magic, version, codec); per chunk in
//   stream order a data record (raw length, stored length, SHA-1, the compressed chunk) for the
//   first occurrence of a digest and a reference record (raw length, SHA-1) for every later one;
//   a trailer with the totals and a CRC-32 of every byte before it. Truncation, corruption and
//   trailing bytes are all detected.
// - `parsec`: PARSEC 3.0's (magic 123456, a codec byte; records of a type byte, a 64-bit length
//   and the compressed chunk or a reference's 20-byte SHA-1; little-endian), exchangeable with
//   PARSEC's own encoder and decoder. It stores no raw length, no digest of a unique chunk and no
//   trailer: a decoder detects a corrupt compressed stream, a record cut short, an unknown type,
//   a reference to a digest never defined and a reference's wrong length, but not an archive
//   truncated between records, a flipped bit in a reference's digest that names another
//   defined chunk, nor bytes changed in a `none` chunk.
//
// The decoder reads either format (told apart by the magic), verifies each chunk's SHA-1 (the
// digest a record carries, or for PARSEC's data records the one its references must name),
// and holds no chunk whole: a chunk streams from the decompressor to the output, and a
// reference is served by reading the chunk back, from the output when it is a regular file it
// can read, else from a spool file of the unique chunks. What grows with the input is the
// digest index (a digest, an offset and a length per unique chunk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "apps/dedup/codec.hpp"
#include "apps/dedup/io.hpp"

namespace cdsb::dedup {

enum class Format { cdsbench, parsec };
const char* format_name(Format);
std::optional<Format> parse_format(std::string_view name);

// A chunk the decoder accepts holds at most this many bytes, compressed or not (a bound on its
// memory per record, and on a decompression bomb): above every chunk our encoder cuts (its
// fragments stop at 8 MiB) and every chunk PARSEC's own decoder can restore (10,000,000 bytes).
inline constexpr std::size_t max_chunk_bytes = std::size_t{16} << 20;
// A compressed chunk can be a little larger than its input (a stored block's overhead).
inline constexpr std::size_t max_stored_bytes = max_chunk_bytes + (max_chunk_bytes >> 6) + 1024;

struct ArchiveTotals {
  std::uint64_t chunks = 0, unique_chunks = 0, raw_bytes = 0, archive_bytes = 0;
};

// Writes records in stream order; which occurrence of a digest is its first is the caller's
// to decide (the encoder's deduplication), and so is the compression of the data.
class ArchiveWriter {
 public:
  ArchiveWriter(Format format, Codec codec, FdWriter& out);  // writes the header
  void data(const Digest160& digest, std::size_t raw_bytes, Bytes stored);
  void reference(const Digest160& digest, std::size_t raw_bytes);
  void finish();  // writes the trailer (ours) and flushes; nothing may follow
  const ArchiveTotals& totals() const { return totals_; }

 private:
  void put(Bytes bytes);
  void put_u8(std::uint8_t v) { put(Bytes(&v, 1)); }
  void put_u32(std::uint32_t v);
  void put_u64(std::uint64_t v);

  Format format_;
  FdWriter& out_;
  std::uint32_t crc_ = 0;
  ArchiveTotals totals_;
};

// A problem of the archive itself, at a byte offset of it.
struct ArchiveError : std::runtime_error {
  ArchiveError(std::uint64_t offset, const std::string& problem)
      : std::runtime_error("byte " + std::to_string(offset) + ": " + problem), offset(offset) {}
  std::uint64_t offset;
};

struct DecodeSummary {
  Format format = Format::cdsbench;
  Codec codec = Codec::none;
  ArchiveTotals totals;
};

// Restores the input of the archive `in` to `out`, or with no `out` checks the archive only
// (-t). Throws ArchiveError for a bad archive, IoError for a failing file. A spool, when one is
// needed, is an unlinked temporary file in `spool_dir`.
DecodeSummary decode_archive(FdReader& in, FdWriter* out, const std::string& spool_dir);

}  // namespace cdsb::dedup
