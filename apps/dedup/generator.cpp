#include "apps/dedup/generator.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "cdsbench/random/generators.hpp"

namespace cdsb::dedup {

namespace {

constexpr std::size_t segment_bytes = 4096;
constexpr std::size_t min_block = 32 << 10, max_block = 256 << 10;

// A generator for one purpose of one index, its start a mix of (seed, purpose, index): each block
// is regenerated from its own index alone.
SplitMix64 stream(std::uint64_t seed, std::uint64_t purpose, std::uint64_t index) {
  return SplitMix64(detail::splitmix64_mix(seed ^ detail::splitmix64_mix(purpose * 0x100000001b3ULL + index)));
}

// 256 words of 2 to 9 lowercase letters, followed by a space: fixed for every seed.
const std::array<std::string, 256>& vocabulary() {
  static const std::array<std::string, 256> words = [] {
    std::array<std::string, 256> w;
    SplitMix64 r(0x766f636162756c61ULL);
    for (auto& word : w) {
      const std::size_t n = 2 + r.next() % 8;
      for (std::size_t i = 0; i < n; ++i) word += static_cast<char>('a' + r.next() % 26);
      word += ' ';
    }
    return w;
  }();
  return words;
}

std::size_t block_size(std::uint64_t seed, std::uint64_t fresh_index) {
  SplitMix64 r = stream(seed, 1, fresh_index);
  return min_block + r.next() % (max_block - min_block + 1);
}

void fresh_block(std::uint64_t seed, std::uint64_t fresh_index, double compressibility, std::vector<std::uint8_t>& out) {
  out.resize(block_size(seed, fresh_index));
  SplitMix64 r = stream(seed, 2, fresh_index);
  const auto& words = vocabulary();
  const auto text_bytes = static_cast<std::size_t>(std::lround(compressibility * segment_bytes));
  for (std::size_t at = 0; at < out.size(); at += segment_bytes) {
    const std::size_t end = std::min(out.size(), at + segment_bytes);
    std::size_t i = at;
    for (const std::size_t text_end = std::min(end, at + text_bytes); i < text_end;) {
      const std::string& w = words[r.next() & 255];
      const std::size_t n = std::min(w.size(), text_end - i);
      std::memcpy(out.data() + i, w.data(), n);
      i += n;
    }
    for (; i + 8 <= end; i += 8) {
      const std::uint64_t v = r.next();
      std::memcpy(out.data() + i, &v, 8);
    }
    for (const std::uint64_t v = r.next(); i < end; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * (i % 8)));
  }
}

}  // namespace

void generate(const GeneratorSettings& s, FdWriter& out) {
  std::vector<std::uint8_t> block;
  std::uint64_t fresh = 0, written = 0;
  for (std::uint64_t index = 0; written < s.bytes; ++index) {
    SplitMix64 r = stream(s.seed, 3, index);
    const double draw = static_cast<double>(r.next() >> 11) * 0x1.0p-53;
    if (fresh > 0 && draw < s.dup_ratio) fresh_block(s.seed, r.next() % fresh, s.compressibility, block);
    else fresh_block(s.seed, fresh++, s.compressibility, block);
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), s.bytes - written));
    out.write(std::span<const std::uint8_t>(block.data(), n));
    written += n;
  }
  out.flush();
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  struct Unit {
    std::string_view name;
    std::uint64_t bytes;
  };
  static constexpr Unit units[] = {{"", 1},          {"B", 1},           {"KiB", 1ull << 10},   {"MiB", 1ull << 20},
                                   {"GiB", 1ull << 30}, {"TiB", 1ull << 40}, {"kB", 1000},          {"KB", 1000},
                                   {"MB", 1000'000},  {"GB", 1000'000'000}, {"TB", 1000'000'000'000}};
  for (const Unit& u : units)
    if (unit == u.name) {
      if (value > (std::uint64_t{1} << 50) / u.bytes) return std::nullopt;
      return value * u.bytes;
    }
  return std::nullopt;
}

}  // namespace cdsb::dedup
