#include "apps/dedup/archive.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

namespace cdsb::dedup {

namespace {

// Ours: "\x89CDD\r\n\x1a\n" (a non-ASCII first byte, and the line endings and ^Z a text-mode
// transfer would alter, as PNG's signature does), then the version.
constexpr std::array<std::uint8_t, 8> our_magic{0x89, 'C', 'D', 'D', '\r', '\n', 0x1a, '\n'};
constexpr std::uint16_t our_version = 1;
constexpr std::uint8_t our_data = 'D', our_reference = 'R', our_trailer = 'E';

// PARSEC's: the int 123456 in the byte order of its (x86) hosts; record types 1 and 0.
constexpr std::array<std::uint8_t, 4> parsec_magic{0x40, 0xE2, 0x01, 0x00};
constexpr std::uint8_t parsec_data = 1, parsec_reference = 0;

constexpr std::size_t digest_bytes = 20;

std::uint32_t load_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 | static_cast<std::uint32_t>(p[2]) << 16 |
         static_cast<std::uint32_t>(p[3]) << 24;
}
std::uint64_t load_u64(const std::uint8_t* p) {
  return static_cast<std::uint64_t>(load_u32(p)) | static_cast<std::uint64_t>(load_u32(p + 4)) << 32;
}

}  // namespace

const char* format_name(Format f) { return f == Format::cdsbench ? "cdsbench" : "parsec"; }

std::optional<Format> parse_format(std::string_view name) {
  if (name == "cdsbench") return Format::cdsbench;
  if (name == "parsec") return Format::parsec;
  return std::nullopt;
}

// ---- the writer ----

ArchiveWriter::ArchiveWriter(Format format, Codec codec, FdWriter& out) : format_(format), out_(out) {
  if (format == Format::parsec) {
    if (codec == Codec::zstd) throw std::invalid_argument("PARSEC's format has no zstd (it has gzip, bzip2 and none)");
    put(parsec_magic);
    put_u8(static_cast<std::uint8_t>(codec));
  } else {
    put(our_magic);
    put_u8(our_version & 0xff), put_u8(our_version >> 8);
    put_u8(static_cast<std::uint8_t>(codec));
    put_u8(0), put_u32(0);  // reserved: zero
  }
}

void ArchiveWriter::put(Bytes bytes) {
  out_.write(bytes);
  if (format_ == Format::cdsbench) crc_ = static_cast<std::uint32_t>(crc32_z(crc_, bytes.data(), bytes.size()));
  totals_.archive_bytes += bytes.size();
}

void ArchiveWriter::put_u32(std::uint32_t v) {
  const std::array<std::uint8_t, 4> b{std::uint8_t(v), std::uint8_t(v >> 8), std::uint8_t(v >> 16), std::uint8_t(v >> 24)};
  put(b);
}

void ArchiveWriter::put_u64(std::uint64_t v) {
  put_u32(static_cast<std::uint32_t>(v));
  put_u32(static_cast<std::uint32_t>(v >> 32));
}

void ArchiveWriter::data(const Digest160& digest, std::size_t raw_bytes, Bytes stored) {
  if (raw_bytes == 0 || raw_bytes > max_chunk_bytes || stored.size() > max_stored_bytes)
    throw std::logic_error("a chunk's size is outside what the format's decoder accepts");
  if (format_ == Format::parsec) {
    put_u8(parsec_data);
    put_u64(stored.size());
  } else {
    put_u8(our_data);
    put_u32(static_cast<std::uint32_t>(raw_bytes));
    put_u32(static_cast<std::uint32_t>(stored.size()));
    put(digest.bytes);
  }
  put(stored);
  ++totals_.chunks, ++totals_.unique_chunks, totals_.raw_bytes += raw_bytes;
}

void ArchiveWriter::reference(const Digest160& digest, std::size_t raw_bytes) {
  if (format_ == Format::parsec) {
    put_u8(parsec_reference);
    put_u64(digest_bytes);
  } else {
    put_u8(our_reference);
    put_u32(static_cast<std::uint32_t>(raw_bytes));
  }
  put(digest.bytes);
  ++totals_.chunks, totals_.raw_bytes += raw_bytes;
}

void ArchiveWriter::finish() {
  if (format_ == Format::cdsbench) {
    put_u8(our_trailer);
    put_u64(totals_.chunks);
    put_u64(totals_.unique_chunks);
    put_u64(totals_.raw_bytes);
    put_u32(crc_);  // of every byte before it
  }
  out_.flush();
}

// ---- the decoder ----

namespace {

// Where a unique chunk's bytes can be read back, and how many there are.
struct ChunkPlace {
  std::uint64_t offset;
  std::uint32_t bytes;
};

class Decoder {
 public:
  Decoder(FdReader& in, FdWriter* out, const std::string& spool_dir) : in_(in), out_(out) {
    if (!out_) return;
    struct stat st;
    const int mode = ::fcntl(out_->fd(), F_GETFL);
    // Offsets in the output are the writer's own: the file must start where the writer does.
    if (::fstat(out_->fd(), &st) == 0 && S_ISREG(st.st_mode) && mode >= 0 && (mode & O_ACCMODE) == O_RDWR &&
        !(mode & O_APPEND) && ::lseek(out_->fd(), 0, SEEK_CUR) == 0 && out_->offset() == 0) {
      store_ = out_;  // the output itself: a reference reads back what was written
      return;
    }
    // A pipe or a write-only output: the unique chunks are also kept in a spool file.
    spool_fd_ = ::open(spool_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (spool_fd_ < 0) throw IoError(spool_dir + ": cannot create a spool file there: " + std::strerror(errno));
    spool_ = std::make_unique<FdWriter>(spool_fd_, spool_dir + " (spool)", 64 << 10);
    store_ = spool_.get();
  }
  ~Decoder() {
    if (spool_fd_ >= 0) ::close(spool_fd_);
  }

  DecodeSummary run() {
    std::array<std::uint8_t, 8> magic{};
    const std::size_t got = in_.read(std::span(magic).first(4));
    if (got == 4 && std::memcmp(magic.data(), parsec_magic.data(), 4) == 0) {
      summary_.format = Format::parsec;
      parsec_records();
    } else if (got == 4 && std::memcmp(magic.data(), our_magic.data(), 4) == 0 && in_.read(std::span(magic).last(4)) == 4 &&
               magic == our_magic) {
      summary_.format = Format::cdsbench;
      crc_ = static_cast<std::uint32_t>(crc32_z(0, magic.data(), magic.size()));
      our_records();
    } else {
      throw ArchiveError(0, "not a dedup archive (its first bytes are neither cdsbench's nor PARSEC's magic)");
    }
    if (out_) out_->flush();
    summary_.totals.archive_bytes = in_.offset();
    return summary_;
  }

 private:
  // Reads exactly n bytes, or fails naming what was being read.
  void read_exact(std::uint8_t* p, std::size_t n, const char* what) {
    const std::uint64_t at = in_.offset();
    if (in_.read(std::span<std::uint8_t>(p, n)) != n) throw ArchiveError(at, std::string("the archive ends inside ") + what);
    if (summary_.format == Format::cdsbench) crc_ = static_cast<std::uint32_t>(crc32_z(crc_, p, n));
  }
  std::uint32_t read_u32(const char* what) {
    std::array<std::uint8_t, 4> b;
    read_exact(b.data(), b.size(), what);
    return load_u32(b.data());
  }
  std::uint64_t read_u64(const char* what) {
    std::array<std::uint8_t, 8> b;
    read_exact(b.data(), b.size(), what);
    return load_u64(b.data());
  }
  // A data record's stored bytes into stored_, read a MiB at a time: an archive that states a
  // long record and ends costs what it holds, not what it claims.
  void read_stored(std::size_t n) {
    stored_.clear();
    while (stored_.size() < n) {
      const std::size_t had = stored_.size(), step = std::min<std::size_t>(n - had, std::size_t{1} << 20);
      stored_.resize(had + step);
      read_exact(stored_.data() + had, step, "a data record's chunk");
    }
  }

  // One record's type byte; false at the end of the input.
  bool read_type(std::uint8_t& type) {
    if (in_.read(std::span<std::uint8_t>(&type, 1)) == 0) return false;
    if (summary_.format == Format::cdsbench) crc_ = static_cast<std::uint32_t>(crc32_z(crc_, &type, 1));
    return true;
  }

  void set_codec(std::uint8_t byte, std::uint64_t at) {
    const bool ours = summary_.format == Format::cdsbench;
    if (byte > static_cast<std::uint8_t>(ours ? Codec::zstd : Codec::none))
      throw ArchiveError(at, "unknown compression " + std::to_string(byte) + " (allowed: 0 gzip, 1 bzip2, 2 none" +
                                 (ours ? ", 3 zstd)" : ")"));
    summary_.codec = static_cast<Codec>(byte);
    decompressor_ = std::make_unique<Decompressor>(summary_.codec);
  }

  void parsec_records() {
    std::uint8_t codec;
    read_exact(&codec, 1, "its header");
    set_codec(codec, 4);
    for (;;) {
      const std::uint64_t at = in_.offset();
      std::uint8_t type;
      if (!read_type(type)) break;
      const std::uint64_t len = read_u64("a record's length");
      if (type == parsec_reference) {
        if (len != digest_bytes)
          throw ArchiveError(at + 1, "a reference record's length is " + std::to_string(len) + ", not 20");
        Digest160 d;
        read_exact(d.bytes.data(), digest_bytes, "a reference's digest");
        reference(d, std::nullopt, at);
      } else if (type == parsec_data) {
        if (len == 0 || len > max_stored_bytes)
          throw ArchiveError(at + 1, "a data record's length is " + std::to_string(len) + " (allowed: 1 to " +
                                         std::to_string(max_stored_bytes) + ")");
        read_stored(len);
        data(std::nullopt, std::nullopt, at);
      } else {
        throw ArchiveError(at, "unknown record type " + std::to_string(type) + " (allowed: 0 reference, 1 data)");
      }
    }
  }

  void our_records() {
    std::array<std::uint8_t, 8> rest;
    read_exact(rest.data(), rest.size(), "its header");
    const unsigned version = rest[0] | rest[1] << 8;
    if (version != our_version)
      throw ArchiveError(8, "format version " + std::to_string(version) + " (this decoder reads version 1)");
    set_codec(rest[2], 10);
    if (rest[3] || load_u32(rest.data() + 4)) throw ArchiveError(11, "reserved header bytes are not zero");
    for (;;) {
      const std::uint64_t at = in_.offset();
      std::uint8_t type;
      if (!read_type(type)) throw ArchiveError(at, "the archive ends without its trailer (truncated?)");
      if (type == our_trailer) return trailer(at);
      if (type != our_data && type != our_reference)
        throw ArchiveError(at, "unknown record type " + std::to_string(type) + " (allowed: 'D' data, 'R' reference, 'E' trailer)");
      const std::uint32_t raw = read_u32("a record's raw length");
      if (raw == 0 || raw > max_chunk_bytes)
        throw ArchiveError(at + 1, "a chunk's length is " + std::to_string(raw) + " (allowed: 1 to " +
                                       std::to_string(max_chunk_bytes) + ")");
      if (type == our_reference) {
        Digest160 d;
        read_exact(d.bytes.data(), digest_bytes, "a reference's digest");
        reference(d, raw, at);
      } else {
        const std::uint32_t stored = read_u32("a data record's stored length");
        if (stored == 0 || stored > max_stored_bytes)
          throw ArchiveError(at + 5, "a data record's stored length is " + std::to_string(stored) + " (allowed: 1 to " +
                                         std::to_string(max_stored_bytes) + ")");
        Digest160 d;
        read_exact(d.bytes.data(), digest_bytes, "a data record's digest");
        read_stored(stored);
        data(d, raw, at);
      }
    }
  }

  void trailer(std::uint64_t at) {
    const std::uint64_t chunks = read_u64("the trailer"), unique = read_u64("the trailer"), raw = read_u64("the trailer");
    const std::uint32_t computed = crc_;
    std::array<std::uint8_t, 4> b;
    const std::uint64_t crc_at = in_.offset();
    if (in_.read(b) != 4) throw ArchiveError(crc_at, "the archive ends inside its trailer");
    const ArchiveTotals& t = summary_.totals;
    if (chunks != t.chunks || unique != t.unique_chunks || raw != t.raw_bytes)
      throw ArchiveError(at, "the trailer counts " + std::to_string(chunks) + " chunks (" + std::to_string(unique) +
                                 " unique) of " + std::to_string(raw) + " bytes, the records " + std::to_string(t.chunks) +
                                 " (" + std::to_string(t.unique_chunks) + ") of " + std::to_string(t.raw_bytes));
    if (load_u32(b.data()) != computed) throw ArchiveError(crc_at, "the archive's CRC-32 does not match its bytes");
    std::uint8_t extra;
    if (in_.read(std::span<std::uint8_t>(&extra, 1)) != 0) throw ArchiveError(crc_at + 4, "bytes follow the trailer");
  }

  // A data record whose compressed chunk is in stored_: raw and digest are the record's (ours)
  // or nothing (PARSEC's).
  void data(const std::optional<Digest160>& digest, std::optional<std::uint32_t> raw, std::uint64_t at) {
    const std::uint64_t store_at = store_ ? store_->offset() : 0;
    sha1_.reset();
    std::string problem;
    const auto produced = decompressor_->decompress(
        stored_, raw.value_or(max_chunk_bytes),
        [&](Bytes piece) {
          sha1_.update(piece);
          if (out_) out_->write(piece);
          if (spool_) spool_->write(piece);
        },
        problem);
    if (!produced) throw ArchiveError(at, std::string("the chunk ") + problem);
    if (raw && *produced != *raw)
      throw ArchiveError(at, "the chunk decompresses to " + std::to_string(*produced) + " bytes, its record says " +
                                 std::to_string(*raw));
    if (*produced == 0) throw ArchiveError(at, "the chunk decompresses to 0 bytes");
    const Digest160 computed = sha1_.finish();
    if (digest && computed != *digest)
      throw ArchiveError(at, "the chunk's SHA-1 is " + to_hex(computed) + ", its record says " + to_hex(*digest));
    const auto [_, inserted] = index_.try_emplace(computed, ChunkPlace{store_at, static_cast<std::uint32_t>(*produced)});
    if (!inserted && summary_.format == Format::cdsbench)  // PARSEC's decoder allows it; our encoder never writes it
      throw ArchiveError(at, "a data record repeats chunk " + to_hex(computed) + " (a reference should)");
    ++summary_.totals.chunks, ++summary_.totals.unique_chunks, summary_.totals.raw_bytes += *produced;
  }

  void reference(const Digest160& digest, std::optional<std::uint32_t> raw, std::uint64_t at) {
    const auto it = index_.find(digest);
    if (it == index_.end()) throw ArchiveError(at, "a reference to chunk " + to_hex(digest) + ", which no earlier record holds");
    const ChunkPlace place = it->second;
    if (raw && *raw != place.bytes)
      throw ArchiveError(at, "a reference's length is " + std::to_string(*raw) + ", its chunk's " + std::to_string(place.bytes));
    if (out_) copy_back(place);
    ++summary_.totals.chunks, summary_.totals.raw_bytes += place.bytes;
  }

  // Writes a unique chunk again, read back from the store in pieces.
  void copy_back(ChunkPlace place) {
    if (place.offset + place.bytes > store_->flushed()) store_->flush();  // the chunk is still in the buffer
    piece_.resize(std::min<std::size_t>(place.bytes, 64 << 10));
    for (std::uint64_t done = 0; done < place.bytes;) {
      const std::size_t n = std::min<std::uint64_t>(piece_.size(), place.bytes - done);
      read_at(store_->fd(), store_->name(), place.offset + done, std::span<std::uint8_t>(piece_.data(), n));
      out_->write(Bytes(piece_.data(), n));
      done += n;
    }
  }

  FdReader& in_;
  FdWriter* out_;
  FdWriter* store_ = nullptr;
  int spool_fd_ = -1;
  std::unique_ptr<FdWriter> spool_;
  std::unique_ptr<Decompressor> decompressor_;
  Sha1 sha1_;
  std::vector<std::uint8_t> stored_, piece_;
  std::unordered_map<Digest160, ChunkPlace, DigestHash> index_;
  std::uint32_t crc_ = 0;
  DecodeSummary summary_;
};

}  // namespace

DecodeSummary decode_archive(FdReader& in, FdWriter* out, const std::string& spool_dir) {
  return Decoder(in, out, spool_dir).run();
}

}  // namespace cdsb::dedup
