#include "apps/dedup/codec.hpp"

#include <bzlib.h>
#include <openssl/evp.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <new>
#include <stdexcept>

namespace cdsb::dedup {

const char* codec_name(Codec c) {
  switch (c) {
    case Codec::gzip: return "gzip";
    case Codec::bzip2: return "bzip2";
    case Codec::none: return "none";
    case Codec::zstd: return "zstd";
  }
  return "?";
}

std::optional<Codec> parse_codec(std::string_view name) {
  for (Codec c : {Codec::gzip, Codec::bzip2, Codec::zstd, Codec::none})
    if (name == codec_name(c)) return c;
  return std::nullopt;
}

LevelRange level_range(Codec c) {
  switch (c) {
    case Codec::gzip: return {1, 9, 6};
    case Codec::bzip2: return {1, 9, 9};
    case Codec::zstd: return {1, 19, 3};
    case Codec::none: return {0, 0, 0};
  }
  return {0, 0, 0};
}

namespace {

// zstd's window for a frame we decode: our chunks are at most a few MiB, and a hostile frame
// must not make us allocate the library's default maximum (128 MiB).
constexpr int zstd_window_log_max = 24;
constexpr std::size_t piece_bytes = 64 << 10;

}  // namespace

// ---- Compressor ----

struct Compressor::Contexts {
  z_stream deflate{};
  bool deflate_ready = false;
  ZSTD_CCtx* zstd = nullptr;
  ~Contexts() {
    if (deflate_ready) deflateEnd(&deflate);
    ZSTD_freeCCtx(zstd);
  }
};

Compressor::Compressor(Codec codec, int level) : codec_(codec), level_(level), contexts_(std::make_unique<Contexts>()) {
  const LevelRange r = level_range(codec);
  if (level < r.min || level > r.max) throw std::invalid_argument("compression level out of range");
  if (codec == Codec::gzip) {
    // What zlib's compress2() sets up: the zlib format, a 32 KiB window, memLevel 8, the
    // default strategy; reset between chunks, the output is byte for byte compress2()'s.
    if (deflateInit(&contexts_->deflate, level) != Z_OK) throw std::bad_alloc();
    contexts_->deflate_ready = true;
  } else if (codec == Codec::zstd) {
    contexts_->zstd = ZSTD_createCCtx();
    if (!contexts_->zstd) throw std::bad_alloc();
  }
}

Compressor::~Compressor() = default;

void Compressor::compress(Bytes chunk, std::vector<std::uint8_t>& out) {
  switch (codec_) {
    case Codec::gzip: {
      z_stream& z = contexts_->deflate;
      if (deflateReset(&z) != Z_OK) throw std::logic_error("deflateReset failed");
      out.resize(deflateBound(&z, chunk.size()));
      z.next_in = const_cast<Bytef*>(chunk.data());
      z.avail_in = static_cast<uInt>(chunk.size());
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      if (deflate(&z, Z_FINISH) != Z_STREAM_END) throw std::logic_error("deflate did not finish within deflateBound");
      out.resize(out.size() - z.avail_out);
      return;
    }
    case Codec::bzip2: {
      // PARSEC's call: block size 9 (x 100 kB; the level), quiet, work factor 30.
      unsigned capacity = static_cast<unsigned>(chunk.size() + chunk.size() / 64 + 600);
      out.resize(capacity);
      const int rc = BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &capacity,
                                              const_cast<char*>(reinterpret_cast<const char*>(chunk.data())),
                                              static_cast<unsigned>(chunk.size()), level_, 0, 30);
      if (rc == BZ_MEM_ERROR) throw std::bad_alloc();
      if (rc != BZ_OK) throw std::logic_error("bzip2 compression failed");
      out.resize(capacity);
      return;
    }
    case Codec::zstd: {
      out.resize(ZSTD_compressBound(chunk.size()));
      const std::size_t n = ZSTD_compressCCtx(contexts_->zstd, out.data(), out.size(), chunk.data(), chunk.size(), level_);
      if (ZSTD_isError(n)) throw std::logic_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      out.resize(n);
      return;
    }
    case Codec::none: out.assign(chunk.begin(), chunk.end()); return;
  }
}

// ---- Decompressor ----

struct Decompressor::Contexts {
  z_stream inflate{};
  bool inflate_ready = false;
  ZSTD_DCtx* zstd = nullptr;
  ~Contexts() {
    if (inflate_ready) inflateEnd(&inflate);
    ZSTD_freeDCtx(zstd);
  }
};

Decompressor::Decompressor(Codec codec) : codec_(codec), contexts_(std::make_unique<Contexts>()), piece_(piece_bytes) {
  if (codec == Codec::gzip) {
    if (inflateInit(&contexts_->inflate) != Z_OK) throw std::bad_alloc();
    contexts_->inflate_ready = true;
  } else if (codec == Codec::zstd) {
    contexts_->zstd = ZSTD_createDCtx();
    if (!contexts_->zstd) throw std::bad_alloc();
    ZSTD_DCtx_setParameter(contexts_->zstd, ZSTD_d_windowLogMax, zstd_window_log_max);
  }
}

Decompressor::~Decompressor() = default;

std::optional<std::size_t> Decompressor::decompress(Bytes stored, std::size_t limit, const Sink& sink, std::string& error) {
  std::size_t total = 0;
  // Passes one produced piece on, unless it would take the chunk past the limit.
  const auto emit = [&](std::size_t n) {
    if (n > limit - total) {
      error = "decompresses to more than " + std::to_string(limit) + " bytes";
      return false;
    }
    total += n;
    if (n) sink(Bytes(piece_.data(), n));
    return true;
  };
  switch (codec_) {
    case Codec::none: {
      if (stored.size() > limit) {
        error = "holds more than " + std::to_string(limit) + " bytes";
        return std::nullopt;
      }
      if (!stored.empty()) sink(stored);
      return stored.size();
    }
    case Codec::gzip: {
      z_stream& z = contexts_->inflate;
      if (inflateReset(&z) != Z_OK) throw std::logic_error("inflateReset failed");
      z.next_in = const_cast<Bytef*>(stored.data());
      z.avail_in = static_cast<uInt>(stored.size());
      for (;;) {
        z.next_out = piece_.data();
        z.avail_out = static_cast<uInt>(piece_.size());
        const int rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_MEM_ERROR) throw std::bad_alloc();
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
          error = std::string("is not a valid zlib stream (") + (z.msg ? z.msg : "zlib error " + std::to_string(rc)) + ")";
          return std::nullopt;
        }
        if (!emit(piece_.size() - z.avail_out)) return std::nullopt;
        if (rc == Z_STREAM_END) {
          if (z.avail_in != 0) {
            error = "has " + std::to_string(z.avail_in) + " bytes after its zlib stream";
            return std::nullopt;
          }
          return total;
        }
        if (z.avail_in == 0 && z.avail_out != 0) {  // all input used, and inflate wants more
          error = "is a truncated zlib stream";
          return std::nullopt;
        }
      }
    }
    case Codec::bzip2: {
      bz_stream b{};
      if (BZ2_bzDecompressInit(&b, 0, 0) != BZ_OK) throw std::bad_alloc();
      struct End {
        bz_stream& b;
        ~End() { BZ2_bzDecompressEnd(&b); }
      } end{b};
      b.next_in = const_cast<char*>(reinterpret_cast<const char*>(stored.data()));
      b.avail_in = static_cast<unsigned>(stored.size());
      for (;;) {
        b.next_out = reinterpret_cast<char*>(piece_.data());
        b.avail_out = static_cast<unsigned>(piece_.size());
        const int rc = BZ2_bzDecompress(&b);
        if (rc == BZ_MEM_ERROR) throw std::bad_alloc();
        if (rc != BZ_OK && rc != BZ_STREAM_END) {
          error = "is not a valid bzip2 stream (bzip2 error " + std::to_string(rc) + ")";
          return std::nullopt;
        }
        if (!emit(piece_.size() - b.avail_out)) return std::nullopt;
        if (rc == BZ_STREAM_END) {
          if (b.avail_in != 0) {
            error = "has " + std::to_string(b.avail_in) + " bytes after its bzip2 stream";
            return std::nullopt;
          }
          return total;
        }
        if (b.avail_in == 0 && b.avail_out != 0) {
          error = "is a truncated bzip2 stream";
          return std::nullopt;
        }
      }
    }
    case Codec::zstd: {
      ZSTD_DCtx* d = contexts_->zstd;
      ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
      ZSTD_inBuffer in{stored.data(), stored.size(), 0};
      for (;;) {
        ZSTD_outBuffer out{piece_.data(), piece_.size(), 0};
        const std::size_t rc = ZSTD_decompressStream(d, &out, &in);
        if (ZSTD_isError(rc)) {
          error = std::string("is not a valid zstd frame (") + ZSTD_getErrorName(rc) + ")";
          return std::nullopt;
        }
        if (!emit(out.pos)) return std::nullopt;
        if (rc == 0) {  // the frame is complete
          if (in.pos != in.size) {
            error = "has " + std::to_string(in.size - in.pos) + " bytes after its zstd frame";
            return std::nullopt;
          }
          return total;
        }
        if (in.pos == in.size && out.pos < out.size) {
          error = "is a truncated zstd frame";
          return std::nullopt;
        }
      }
    }
  }
  return std::nullopt;
}

// ---- SHA-1 ----

struct Sha1::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha1::Sha1() : context_(std::make_unique<Context>()) {
  if (!context_->ctx) throw std::bad_alloc();
  reset();
}
Sha1::~Sha1() = default;

void Sha1::reset() {
  if (EVP_DigestInit_ex(context_->ctx, EVP_sha1(), nullptr) != 1) throw std::runtime_error("OpenSSL: SHA-1 unavailable");
}
void Sha1::update(Bytes bytes) { EVP_DigestUpdate(context_->ctx, bytes.data(), bytes.size()); }
Digest160 Sha1::finish() {
  Digest160 d;
  unsigned n = 0;
  EVP_DigestFinal_ex(context_->ctx, d.bytes.data(), &n);
  return d;
}

std::string to_hex(const Digest160& d) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : d.bytes) s += digits[b >> 4], s += digits[b & 15];
  return s;
}

}  // namespace cdsb::dedup
