// Dedup's archives (apps/dedup/archive.hpp): in PARSEC's format our encoder writes what PARSEC
// 3.0's own encoder wrote, byte for byte (tests/data/dedup/README.md: SHA-1s of its archives
// of the reference inputs, and three small archives it wrote); both formats round-trip every
// codec and chunker through every way the decoder serves a repeat; every kind of bad archive
// ends in an ArchiveError at the right byte, with nothing inflated past its limit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "apps/dedup/archive.hpp"
#include "apps/dedup/codec.hpp"
#include "apps/dedup/encoder.hpp"
#include "apps/dedup/fragmenter.hpp"
#include "support/dedup_inputs.hpp"
#include "support/dedup_files.hpp"

namespace dedup_archive_test {

using namespace cdsb::dedup;
using Buffer = std::vector<std::uint8_t>;
using cdsb::test::MemFile;

Buffer encode(const Buffer& input, const EncodeSettings& settings, std::size_t read_buffer = 1 << 20) {
  return cdsb::test::encode_one_thread(input, settings, read_buffer);
}

struct Decoded {
  DecodeSummary summary;
  Buffer output;
};

// How the decoder gets its output: a file it can read back, one it cannot (write-only: the
// repeats come from a spool), or none (-t).
enum class Output { readable, write_only, none };

Decoded decode(const Buffer& archive, Output how = Output::readable) {
  MemFile in(archive);
  FdReader reader(in.fd(), "archive", 4096);  // small: records straddle refills
  Decoded d;
  if (how == Output::none) {
    d.summary = decode_archive(reader, nullptr, "/tmp");
    return d;
  }
  MemFile out;
  const int fd = how == Output::readable ? out.fd() : ::open(("/proc/self/fd/" + std::to_string(out.fd())).c_str(), O_WRONLY);
  {
    FdWriter writer(fd, "output", 4096);
    d.summary = decode_archive(reader, &writer, "/tmp");
  }
  if (fd != out.fd()) ::close(fd);
  d.output = out.contents();
  return d;
}

std::string sha1_hex(const Buffer& b) { return to_hex(Sha1().of(b)); }

Buffer read_test_file(const std::string& name) {
  std::ifstream in(std::string(CDSBENCH_TEST_DATA) + "/dedup/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing test data " << name;
  return Buffer(std::istreambuf_iterator<char>(in), {});
}

EncodeSettings parsec(Codec codec) {
  return {.format = Format::parsec, .codec = codec, .level = level_range(codec).default_level, .chunker = ChunkerKind::rabin};
}

// The SHA-1 of the archive PARSEC 3.0's pthreads build wrote for each reference input
// (tests/data/dedup/README.md). zlib 1.2.13 (Debian 12) compressed the gzip ones; another
// deflate (zlib-ng) would write other, valid streams.
struct ParsecArchive {
  const char* input;
  Codec codec;
  const char* sha1;
};
constexpr ParsecArchive parsec_archives[] = {
    {"A", Codec::gzip, "bc73433f8d70c2a2c047c579ace203eda9a665c9"},
    {"A", Codec::none, "a37332e4ef0d4b3a7524422b5e547ea649a2b829"},
    {"B", Codec::gzip, "26df6fe82cfca81a8c6ec998955d275059b0887a"},
    {"B", Codec::bzip2, "c42b13f2bcf70365054e32ed516018173b637089"},
    {"B", Codec::none, "7b50e400303a96f0cacb0ec5c7cf1ae5185cb8a5"},
    {"C", Codec::gzip, "87ca9386c2a2e207c599422e2ce93265432e7480"},
    {"C", Codec::none, "3666b228d03843d5c5b79c93141d1ce394239751"},
    {"Z", Codec::gzip, "b192f35a71132c1420cd76946bc4bf53d97f3dfb"},
    {"Z", Codec::bzip2, "b4bca8dd05a3a1cad3d7f8a4b1a2327b16ea4645"},
    {"Z", Codec::none, "0dfb99aea0bb51352853c6dff30edff0091823d2"},
};

Buffer reference_input(const std::string& name) {
  if (name == "A") return cdsb::test::dedup_input_a();
  if (name == "B") return cdsb::test::dedup_input_b();
  if (name == "C") return cdsb::test::dedup_input_c();
  if (name == "Z") return Buffer(40'000, 0);
  return cdsb::test::dedup_input_m();
}

TEST(DedupArchive, ParsecFormatIsByteIdenticalToPARSECsEncoder) {
  for (const ParsecArchive& p : parsec_archives) {
    const Buffer input = reference_input(p.input);
    const Buffer archive = encode(input, parsec(p.codec));
    EXPECT_EQ(sha1_hex(archive), p.sha1) << p.input << " " << codec_name(p.codec);
    const Decoded back = decode(archive);
    EXPECT_TRUE(back.output == input) << p.input << " " << codec_name(p.codec);
  }
  // The smallest one whole: "test\n\n" is one chunk, a 28-byte archive.
  const Buffer test_input{'t', 'e', 's', 't', '\n', '\n'};
  const Buffer expected{0x40, 0xE2, 0x01, 0x00, 0x00, 0x01, 0x0E, 0, 0, 0, 0, 0, 0, 0, 0x78, 0x9C, 0x2B, 0x49, 0x2D,
                        0x2E, 0xE1, 0xE2, 0x02, 0x00, 0x07, 0xFD, 0x01, 0xD5};
  EXPECT_EQ(encode(test_input, parsec(Codec::gzip)), expected);
  EXPECT_EQ(encode({}, parsec(Codec::gzip)), (Buffer{0x40, 0xE2, 0x01, 0x00, 0x00}));
}

// Archives PARSEC itself wrote decode to their input, and our encoder writes them again.
TEST(DedupArchive, DecodesArchivesPARSECWrote) {
  const Buffer input = cdsb::test::dedup_input_m();
  for (Codec c : {Codec::gzip, Codec::bzip2, Codec::none}) {
    const Buffer archive = read_test_file(std::string("M.") + codec_name(c) + ".ddp");
    for (Output how : {Output::readable, Output::write_only}) {
      const Decoded d = decode(archive, how);
      EXPECT_TRUE(d.output == input) << codec_name(c);
      EXPECT_EQ(d.summary.format, Format::parsec);
      EXPECT_EQ(d.summary.codec, c);
      EXPECT_EQ(d.summary.totals.chunks, 121u);
      EXPECT_EQ(d.summary.totals.unique_chunks, 10u);
      EXPECT_EQ(d.summary.totals.raw_bytes, input.size());
      EXPECT_EQ(d.summary.totals.archive_bytes, archive.size());
    }
    EXPECT_EQ(encode(input, parsec(c)), archive) << codec_name(c);
  }
}

// Every format, codec and chunker round-trips, the repeats served from the output itself, from
// a spool, or only counted (-t); a 4 KiB read buffer makes fragments straddle the encoder's reads.
TEST(DedupArchive, EveryFormatCodecAndChunkerRoundTrips) {
  // Repeats at chunk-aligned places for both chunkers: a zero run, and a block repeated after
  // a cut-inducing zero run. Two inputs: one of a single fragment for every combination, and
  // one of two fragments (past 2 MiB) for one combination per chunker and format.
  const Buffer block = cdsb::test::generated(100'000, 3);
  const Buffer zeros(70'000, 0);
  const Buffer small = cdsb::test::concatenated({block, zeros, block, zeros, block});
  const Buffer large = cdsb::test::concatenated({small, cdsb::test::generated(2'000'000, 4), block});
  const auto round_trip = [](const Buffer& input, const EncodeSettings& settings) {
    const std::string what = std::string(format_name(settings.format)) + " " + codec_name(settings.codec) + " " +
                             chunker_name(settings.chunker) + " " + std::to_string(input.size()) + " bytes";
    const Buffer archive = encode(input, settings, 4096);
    const Decoded a = decode(archive, Output::readable), b = decode(archive, Output::write_only), t = decode(archive, Output::none);
    EXPECT_TRUE(a.output == input) << what;
    EXPECT_TRUE(b.output == input) << what;
    EXPECT_EQ(t.summary.totals.raw_bytes, input.size()) << what;
    EXPECT_EQ(t.summary.totals.archive_bytes, archive.size()) << what;
    EXPECT_GT(t.summary.totals.chunks, t.summary.totals.unique_chunks) << what << ": no repeat found";
    EXPECT_EQ(a.summary.totals.chunks, t.summary.totals.chunks) << what;
  };
  for (Format f : {Format::cdsbench, Format::parsec})
    for (ChunkerKind k : {ChunkerKind::rabin, ChunkerKind::gear}) {
      for (Codec c : {Codec::gzip, Codec::bzip2, Codec::zstd, Codec::none}) {
        const EncodeSettings settings{.format = f, .codec = c, .level = level_range(c).default_level, .chunker = k};
        if (f == Format::parsec && c == Codec::zstd) EXPECT_THROW(encode(small, settings), std::invalid_argument);
        else round_trip(small, settings);
      }
      const Codec fast = f == Format::parsec ? Codec::none : Codec::zstd;
      round_trip(large, {.format = f, .codec = fast, .level = level_range(fast).min, .chunker = k});
    }
  // A compressible input shrinks with each codec, and each codec's levels reach it.
  std::string numbers;
  for (int i = 0; i < 20'000; ++i) numbers += std::to_string(i * i) + ' ';
  const Buffer text(numbers.begin(), numbers.end());
  const Buffer stored = encode(text, {.codec = Codec::none, .level = 0});
  for (Codec c : {Codec::gzip, Codec::bzip2, Codec::zstd}) {
    const LevelRange r = level_range(c);
    const Buffer low = encode(text, {.codec = c, .level = r.min}), high = encode(text, {.codec = c, .level = r.max});
    EXPECT_LT(low.size(), stored.size() * 2 / 3) << codec_name(c);
    EXPECT_NE(low, high) << codec_name(c);
    EXPECT_EQ(decode(high).output, text) << codec_name(c);
  }
}

// ---- bad archives ----

std::uint64_t load_u64(const Buffer& b, std::size_t at) {
  std::uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}
void store_u32(Buffer& b, std::size_t at, std::uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void store_u64(Buffer& b, std::size_t at, std::uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

// The decoder's verdict on `archive`, in each way it can write: the error's offset and text.
void expect_rejected(const Buffer& archive, std::uint64_t offset, const std::string& problem, const std::string& what) {
  for (Output how : {Output::readable, Output::write_only, Output::none}) {
    try {
      decode(archive, how);
      ADD_FAILURE() << what << ": accepted";
    } catch (const ArchiveError& e) {
      EXPECT_EQ(e.offset, offset) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << what << ": " << e.what();
    }
  }
}

// Our format's record offsets, for the cases below: a data record, then a reference.
struct OurLayout {
  Buffer archive;
  std::size_t first_data = 16, first_reference = 0, trailer = 0;
};
OurLayout small_ours(Codec codec = Codec::gzip) {
  // 40,000 zero bytes: 1,250 chunks of 32 (rabin); the first is data, the rest references.
  OurLayout l;
  l.archive = encode(Buffer(40'000, 0), {.codec = codec, .level = level_range(codec).default_level});
  const std::uint32_t stored = [&] {
    std::uint32_t v;
    std::memcpy(&v, l.archive.data() + 16 + 5, 4);
    return v;
  }();
  l.first_reference = 16 + 1 + 4 + 4 + 20 + stored;
  l.trailer = l.archive.size() - 1 - 24 - 4;
  EXPECT_EQ(l.archive[16], 'D');
  EXPECT_EQ(l.archive[l.first_reference], 'R');
  EXPECT_EQ(l.archive[l.trailer], 'E');
  return l;
}

TEST(DedupArchive, OurFormatRejectsEveryDamage) {
  const OurLayout l = small_ours();
  const Buffer& good = l.archive;
  ASSERT_EQ(decode(good).output, Buffer(40'000, 0));
  const auto with = [&](auto change) {
    Buffer b = good;
    change(b);
    return b;
  };
  expect_rejected({}, 0, "not a dedup archive", "empty");
  expect_rejected(with([](Buffer& b) { b[1] = 'X'; }), 0, "not a dedup archive", "magic");
  expect_rejected(with([](Buffer& b) { b[8] = 2; }), 8, "format version 2", "version");
  expect_rejected(with([](Buffer& b) { b[10] = 9; }), 10, "unknown compression 9", "codec");
  expect_rejected(with([](Buffer& b) { b[13] = 1; }), 11, "reserved", "reserved bytes");
  expect_rejected(with([](Buffer& b) { b.resize(12); }), 8, "ends inside its header", "short header");
  expect_rejected(with([&](Buffer& b) { b[l.first_data] = 'X'; }), l.first_data, "unknown record type 88", "type");
  expect_rejected(with([&](Buffer& b) { store_u32(b, l.first_data + 1, 0); }), l.first_data + 1, "chunk's length is 0", "raw 0");
  expect_rejected(with([&](Buffer& b) { store_u32(b, l.first_data + 1, (16u << 20) + 1); }), l.first_data + 1,
                  "(allowed: 1 to 16777216)", "raw too long");
  expect_rejected(with([&](Buffer& b) { store_u32(b, l.first_data + 5, 0xFFFFFFFF); }), l.first_data + 5,
                  "stored length is 4294967295", "stored too long");
  expect_rejected(with([&](Buffer& b) { store_u32(b, l.first_data + 1, 31); }), l.first_data,
                  "decompresses to more than 31 bytes", "raw shorter than the chunk");
  expect_rejected(with([&](Buffer& b) { store_u32(b, l.first_data + 1, 33); }), l.first_data,
                  "decompresses to 32 bytes, its record says 33", "raw longer than the chunk");
  expect_rejected(with([&](Buffer& b) { b[l.first_data + 9] ^= 1; }), l.first_data, "the chunk's SHA-1 is", "digest");
  expect_rejected(with([&](Buffer& b) { b[l.first_reference - 3] ^= 0x10; }), l.first_data, "zlib", "stream bit");
  expect_rejected(with([&](Buffer& b) { b[l.first_reference + 7] ^= 1; }), l.first_reference,
                  "which no earlier record holds", "reference digest");
  expect_rejected(with([&](Buffer& b) { store_u32(b, l.first_reference + 1, 64); }), l.first_reference,
                  "a reference's length is 64, its chunk's 32", "reference length");
  expect_rejected(with([&](Buffer& b) { b.resize(l.first_reference + 10); }), l.first_reference + 5,
                  "ends inside a reference's digest", "truncated in a record");
  expect_rejected(with([&](Buffer& b) { b.resize(l.trailer); }), l.trailer, "without its trailer", "no trailer");
  expect_rejected(with([&](Buffer& b) { b.resize(b.size() - 2); }), l.trailer + 25, "ends inside its trailer", "short trailer");
  expect_rejected(with([&](Buffer& b) { store_u64(b, l.trailer + 1, 1249); }), l.trailer, "the trailer counts 1249 chunks",
                  "trailer totals");
  expect_rejected(with([&](Buffer& b) { b[b.size() - 1] ^= 1; }), l.trailer + 25, "CRC-32", "checksum");
  expect_rejected(with([&](Buffer& b) { b.push_back(0); }), l.trailer + 29, "bytes follow the trailer", "trailing bytes");
  // A record repeating a chunk's data where a reference belongs.
  Buffer twice(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(l.first_reference));
  twice.insert(twice.end(), good.begin() + 16, good.begin() + static_cast<std::ptrdiff_t>(l.first_reference));
  expect_rejected(twice, l.first_reference, "repeats chunk", "repeated data");
}

// A stream that inflates far past the record's length stops at the limit: a bomb costs nothing.
TEST(DedupArchive, DecompressionStopsAtTheLimit) {
  const Buffer big(4 << 20, 'a');
  constexpr std::size_t limit = 1 << 20;
  for (Codec c : {Codec::gzip, Codec::bzip2, Codec::zstd}) {
    Compressor compressor(c, level_range(c).default_level);
    Buffer stored;
    compressor.compress(big, stored);
    ASSERT_LT(stored.size(), big.size() / 100) << codec_name(c);
    Decompressor d(c);
    std::size_t received = 0;
    std::string error;
    EXPECT_FALSE(d.decompress(stored, limit, [&](Bytes piece) { received += piece.size(); }, error));
    EXPECT_LE(received, limit) << codec_name(c);
    EXPECT_NE(error.find("more than 1048576"), std::string::npos) << error;
    // Whole streams still decompress (the decompressor's state reset after the failure), and
    // a truncated or extended stream is named as such.
    Buffer small_stored;
    compressor.compress(Buffer(1000, 'b'), small_stored);
    EXPECT_EQ(d.decompress(small_stored, 1000, [](Bytes) {}, error), 1000u) << codec_name(c) << ": " << error;
    EXPECT_FALSE(d.decompress(Bytes(small_stored).first(small_stored.size() - 3), 1000, [](Bytes) {}, error));
    EXPECT_NE(error.find("truncated"), std::string::npos) << codec_name(c) << ": " << error;
    Buffer extended = small_stored;
    extended.push_back(0);
    EXPECT_FALSE(d.decompress(extended, 1000, [](Bytes) {}, error));
    EXPECT_NE(error.find("after its"), std::string::npos) << codec_name(c) << ": " << error;
  }
}

TEST(DedupArchive, ParsecFormatRejectsWhatItCanDetect) {
  const Buffer good = read_test_file("M.gzip.ddp");
  const std::size_t first = 5;
  const std::uint64_t first_len = load_u64(good, first + 1);
  const auto with = [&](auto change) {
    Buffer b = good;
    change(b);
    return b;
  };
  expect_rejected(with([](Buffer& b) { b.resize(4); }), 4, "ends inside its header", "no codec byte");
  expect_rejected(with([](Buffer& b) { b[4] = 3; }), 4, "unknown compression 3 (allowed: 0 gzip, 1 bzip2, 2 none)", "codec");
  expect_rejected(with([&](Buffer& b) { b[first] = 2; }), first, "unknown record type 2", "type");
  expect_rejected(with([&](Buffer& b) { store_u64(b, first + 1, 0); }), first + 1, "length is 0", "empty data");
  expect_rejected(with([&](Buffer& b) { store_u64(b, first + 1, ~0ull); }), first + 1, "length is 18446744073709551615", "huge");
  // A length one short: the zlib stream loses its last byte.
  expect_rejected(with([&](Buffer& b) { store_u64(b, first + 1, first_len - 1); }), first, "is a truncated zlib stream",
                  "short length");
  expect_rejected(with([&](Buffer& b) { b[first + 9 + first_len - 1] ^= 1; }), first, "incorrect data check", "Adler-32");
  expect_rejected(with([&](Buffer& b) { b.resize(first + 9 + 10); }), first + 9, "ends inside a data record's chunk", "cut");
}

// Records that are whole but wrong, which PARSEC's format lets a decoder see.
TEST(DedupArchive, ParsecFormatRejectsBadReferences) {
  Buffer archive = read_test_file("M.none.ddp");
  // Find the first reference record.
  std::size_t at = 5;
  while (archive[at] != 0) at += 9 + load_u64(archive, at + 1);
  Buffer wrong_length = archive;
  store_u64(wrong_length, at + 1, 21);
  expect_rejected(wrong_length, at + 1, "a reference record's length is 21, not 20", "reference length");
  Buffer unknown = archive;
  unknown[at + 9] ^= 0xFF;
  expect_rejected(unknown, at, "which no earlier record holds", "unknown digest");
  Buffer cut = archive;
  cut.resize(at + 12);
  expect_rejected(cut, at + 9, "ends inside a reference's digest", "truncated");
}

// An input where no coarse scan the fragmenter makes finds an anchor: from 2 MiB into each
// 8 MiB stretch to the byte after it, each byte is chosen so that the hash, from a fresh state
// at the scan's start, fails the anchor test (any other byte is zero).
Buffer anchorless(ChunkerKind kind, std::size_t size) {
  Buffer b(size, 0);
  for (std::size_t start = anchor_jump; start < size; start += fragment_cap) {
    const std::size_t end = std::min(size, start - anchor_jump + fragment_cap + 1);
    std::uint32_t rabin = 0;
    std::uint64_t gear = 0;
    for (std::size_t i = start; i < end; ++i) {
      const std::size_t fed = i - start + 1;
      for (int c = 0;; ++c) {
        if (c == 256) throw std::logic_error("no byte avoids an anchor");
        const auto byte = static_cast<std::uint8_t>(c);
        if (kind == ChunkerKind::rabin) {
          const std::uint32_t h = RabinChunker::step(fed <= RabinChunker::first_block ? rabin : rabin ^ b[i - 32], byte);
          if (fed < RabinChunker::first_block || (h & RabinChunker::mask) != 0) {
            rabin = h, b[i] = byte;
            break;
          }
        } else {
          const std::uint64_t h = (gear << 1) + GearChunker::table[byte];
          if (fed < 64 || (h >> 52) != 0) {
            gear = h, b[i] = byte;
            break;
          }
        }
      }
    }
  }
  return b;
}

// A fragment stops at 8 MiB when no anchor comes (PARSEC's would run on), whatever the reads.
TEST(DedupFragmenter, CapsAFragmentWithoutAnchors) {
  for (ChunkerKind k : {ChunkerKind::rabin, ChunkerKind::gear}) {
    const Buffer input = anchorless(k, fragment_cap * 2 + 12345);
    const Chunking chunking(k);
    EXPECT_EQ(chunking.coarse_scan(Bytes(input).subspan(anchor_jump, fragment_cap - anchor_jump + 1)),
              fragment_cap - anchor_jump + 1) << chunker_name(k);
    MemFile file(input);
    FdReader reader(file.fd(), "input", 4096);
    Fragmenter fragmenter(reader, chunking);
    std::vector<std::size_t> sizes;
    for (Buffer f; fragmenter.next(f);) sizes.push_back(f.size());
    EXPECT_EQ(sizes, (std::vector<std::size_t>{fragment_cap, fragment_cap, 12345})) << chunker_name(k);
  }
}

}  // namespace dedup_archive_test
