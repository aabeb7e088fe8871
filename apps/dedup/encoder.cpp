#include "apps/dedup/encoder.hpp"

#include <unordered_set>
#include <vector>

namespace cdsb::dedup {

ArchiveTotals encode_sequential(FdReader& in, FdWriter& out, const EncodeSettings& settings) {
  const Chunking chunking(settings.chunker);
  Fragmenter fragmenter(in, chunking);
  ArchiveWriter writer(settings.format, settings.codec, out);
  Compressor compressor(settings.codec, settings.level);
  Sha1 sha1;
  std::unordered_set<Digest160, DigestHash> seen;
  std::vector<std::uint8_t> fragment, stored;
  std::vector<std::uint32_t> ends;
  while (fragmenter.next(fragment)) {
    ends.clear();
    chunking.chunk(fragment, ends);
    std::uint32_t begin = 0;
    for (std::uint32_t end : ends) {
      const Bytes chunk = Bytes(fragment).subspan(begin, end - begin);
      begin = end;
      const Digest160 digest = sha1.of(chunk);
      if (seen.insert(digest).second) {
        compressor.compress(chunk, stored);
        writer.data(digest, chunk.size(), stored);
      } else {
        writer.reference(digest, chunk.size());
      }
    }
  }
  writer.finish();
  return writer.totals();
}

}  // namespace cdsb::dedup
