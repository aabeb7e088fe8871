// The compressors of dedup's chunks, and the SHA-1 that names a chunk.
//
// Each chunk is compressed on its own. gzip is PARSEC's: zlib's one-shot compress() (the zlib
// format of RFC 1950, despite the name) at PARSEC's level 6 by default; bzip2 is PARSEC's
// optional one (block size 9, work factor 30); zstd is ours. A Compressor or Decompressor keeps
// its library contexts between chunks (a thread owns one), since dedup's chunks are a few KiB
// and a fresh zstd or zlib context per chunk would cost more than the chunk.
//
// Decompression streams: the chunk's bytes go to a sink piece by piece, so a caller verifies a
// chunk's digest and writes it out without holding it whole, and a stream that would inflate
// past a limit (a decompression bomb, or a length that does not match the record's) stops
// there with an error, having produced at most the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cdsbench/set/hash/hashes.hpp"

namespace cdsb::dedup {

using Bytes = std::span<const std::uint8_t>;

// PARSEC's numbering for the first three (its archive header's byte); zstd is ours.
enum class Codec : std::uint8_t { gzip = 0, bzip2 = 1, none = 2, zstd = 3 };

const char* codec_name(Codec);
std::optional<Codec> parse_codec(std::string_view name);  // gzip, bzip2, zstd, none
constexpr const char* codec_names = "gzip, bzip2, zstd or none";

struct LevelRange {
  int min, max, default_level;
};
// gzip 1..9 (6, PARSEC's), bzip2 1..9 (9, PARSEC's block size), zstd 1..19 (3), none 0..0.
LevelRange level_range(Codec);

class Compressor {
 public:
  Compressor(Codec codec, int level);  // the level within level_range(codec)
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  // Replaces `out` with the compressed form of `chunk`.
  void compress(Bytes chunk, std::vector<std::uint8_t>& out);
  Codec codec() const { return codec_; }
  int level() const { return level_; }

 private:
  struct Contexts;
  Codec codec_;
  int level_;
  std::unique_ptr<Contexts> contexts_;
};

class Decompressor {
 public:
  using Sink = std::function<void(Bytes piece)>;

  explicit Decompressor(Codec codec);
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  // Feeds the decompressed bytes of `stored` (one chunk's whole stream) to `sink` in pieces and
  // returns their count; or returns nullopt with `error` set when the stream is corrupt,
  // truncated, followed by extra bytes, or would produce more than `limit` bytes (the sink
  // then has received at most `limit`).
  std::optional<std::size_t> decompress(Bytes stored, std::size_t limit, const Sink& sink, std::string& error);

 private:
  struct Contexts;
  Codec codec_;
  std::unique_ptr<Contexts> contexts_;
  std::vector<std::uint8_t> piece_;
};

// SHA-1 through OpenSSL: dedup's chunk names (PARSEC bundles OpenSSL 0.9.8's SHA-1; the digests
// are the standard ones). Incremental, so a chunk decompressed in pieces is hashed as it comes.
class Sha1 {
 public:
  Sha1();
  ~Sha1();
  Sha1(const Sha1&) = delete;
  Sha1& operator=(const Sha1&) = delete;

  void reset();
  void update(Bytes bytes);
  Digest160 finish();  // then reset() before the next message
  Digest160 of(Bytes bytes) {
    reset();
    update(bytes);
    return finish();
  }

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

std::string to_hex(const Digest160&);

// A digest's hash for dedup's own tables (the decoder's index, the sequential encoder's set):
// SHA-1's bits are uniform already.
struct DigestHash {
  std::size_t operator()(const Digest160& d) const noexcept { return hash::load64(d.bytes.data()); }
};

}  // namespace cdsb::dedup
