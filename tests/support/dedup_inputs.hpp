// The dedup tests' reference inputs (tests/data/dedup/README.md defines them): PARSEC 3.0's own
// binaries cut and archived them, and the tests compare with what it wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cdsb::test {

// G(n, seed): s <- (s * 1103515245 + 12345) mod 2^31, then the byte (s >> 16) & 0xFF, n times.
inline std::vector<std::uint8_t> generated(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> bytes(n);
  std::uint32_t s = seed;
  for (auto& b : bytes) {
    s = (s * 1103515245u + 12345u) & 0x7fffffffu;
    b = static_cast<std::uint8_t>(s >> 16);
  }
  return bytes;
}

inline std::vector<std::uint8_t> concatenated(std::initializer_list<std::vector<std::uint8_t>> parts) {
  std::vector<std::uint8_t> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// A: G(3,000,000, 1) twice; three coarse fragments.
inline std::vector<std::uint8_t> dedup_input_a() {
  const auto half = generated(3'000'000, 1);
  return concatenated({half, half});
}
// B: G(1,000,000, 42); one fragment.
inline std::vector<std::uint8_t> dedup_input_b() { return generated(1'000'000, 42); }
// C: G(8,000,000, 7), each byte b as (b & 0x0F) | 0x40 (16 letters); four coarse fragments.
inline std::vector<std::uint8_t> dedup_input_c() {
  auto c = generated(8'000'000, 7);
  for (auto& b : c) b = static_cast<std::uint8_t>((b & 0x0F) | 0x40);
  return c;
}
// M: G(20,000, 5), 12,000 zero bytes, the first 9,000 bytes of G(20,000, 5) and "test\n\n":
// 121 chunks, 111 of them repeats (32-byte runs of zeros).
inline std::vector<std::uint8_t> dedup_input_m() {
  const auto g = generated(20'000, 5);
  return concatenated({g, std::vector<std::uint8_t>(12'000, 0), std::vector<std::uint8_t>(g.begin(), g.begin() + 9'000),
                       std::vector<std::uint8_t>{'t', 'e', 's', 't', '\n', '\n'}});
}

}  // namespace cdsb::test
