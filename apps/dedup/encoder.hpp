// Dedup's encoder on one thread, in stream order: fragment, chunk, SHA-1, look the digest up,
// compress a chunk seen for the first time, write. The archive it writes is what the threaded
// pipeline must write too, byte for byte, whatever its threads, map and queues (the first
// occurrence of a digest in stream order carries the data, as in PARSEC's writer).
#pragma once

#include "apps/dedup/archive.hpp"
#include "apps/dedup/codec.hpp"
#include "apps/dedup/fragmenter.hpp"
#include "apps/dedup/io.hpp"

namespace cdsb::dedup {

struct EncodeSettings {
  Format format = Format::cdsbench;
  Codec codec = Codec::gzip;
  int level = 6;  // gzip's: PARSEC's
  ChunkerKind chunker = ChunkerKind::rabin;
};

ArchiveTotals encode_sequential(FdReader& in, FdWriter& out, const EncodeSettings& settings);

}  // namespace cdsb::dedup
