#include "apps/dedup/fragmenter.hpp"

#include <algorithm>

namespace cdsb::dedup {

const char* chunker_name(ChunkerKind k) { return k == ChunkerKind::rabin ? "rabin" : "gear"; }

std::optional<ChunkerKind> parse_chunker(std::string_view name) {
  if (name == "rabin") return ChunkerKind::rabin;
  if (name == "gear") return ChunkerKind::gear;
  return std::nullopt;
}

std::size_t Chunking::coarse_scan(Bytes bytes) const {
  if (kind_ == ChunkerKind::rabin) return RabinChunker::scan(bytes);
  // Gear: the top 12 bits of the hash (the ones over the last 64 bytes) zero; the first 64
  // bytes are fed without a test, so the window is full at the first one.
  constexpr std::size_t window = 64;
  constexpr std::uint64_t mask = ~std::uint64_t{0} << 52;
  if (bytes.size() < window) return bytes.size();
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    h = (h << 1) + GearChunker::table[bytes[i]];
    if (i + 1 >= window && (h & mask) == 0) return i + 1;
  }
  return bytes.size();
}

void Fragmenter::fill(std::size_t want) {
  if (at_end_ || buffered_.size() >= want) return;
  const std::size_t had = buffered_.size();
  buffered_.resize(want);
  const std::size_t got = in_.read(std::span<std::uint8_t>(buffered_.data() + had, want - had));
  buffered_.resize(had + got);
  at_end_ = had + got < want;
}

bool Fragmenter::next(std::vector<std::uint8_t>& fragment) {
  std::size_t want = anchor_jump + (64 << 10);
  std::size_t end = 0;
  for (;;) {
    fill(std::min(want, fragment_cap + 1));
    const std::size_t n = buffered_.size();
    if (at_end_ && n <= fragment_cap) {
      // The rest of the input is here: PARSEC's rule, a cut only strictly before its end.
      end = n;
      if (n > anchor_jump) {
        const std::size_t cut = anchor_jump + chunking_.coarse_scan(Bytes(buffered_).subspan(anchor_jump));
        if (cut < n) end = cut;
      }
      break;
    }
    // More may follow: an anchor strictly inside the bytes read is strictly before the input's
    // end, as PARSEC requires; none within the cap cuts at the cap.
    const std::size_t cut = anchor_jump + chunking_.coarse_scan(Bytes(buffered_).subspan(anchor_jump));
    if (cut < n) {
      end = cut;
      break;
    }
    if (n > fragment_cap) {
      end = fragment_cap;
      break;
    }
    want *= 2;  // no anchor yet: read more and scan again from the same start
  }
  if (end == 0) return false;
  // The fragment leaves with its bytes; what follows its end starts the next one.
  fragment.assign(buffered_.begin() + static_cast<std::ptrdiff_t>(end), buffered_.end());
  buffered_.resize(end);
  std::swap(fragment, buffered_);
  return true;
}

}  // namespace cdsb::dedup
