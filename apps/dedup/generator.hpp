// `cdsbench-dedup --generate`: deterministic inputs for tests and sweeps, with a chosen share of
// repeated data and a chosen compressibility, the same bytes for the same parameters on any
// machine.
//
// The input is a sequence of blocks of 32 to 256 KiB. Each block is, with probability
// `dup_ratio`, a repeat of an earlier fresh block (uniformly chosen), else a fresh block. A fresh
// block is made of 4 KiB segments, each a share `compressibility` of words from a fixed
// vocabulary (text any compressor shrinks about fourfold) and the rest random bytes. Every block
// is a function of the seed and its index, so a repeat is generated again rather than kept: the
// generator's memory is one block. Repeats are byte-identical to their originals, but whether a
// chunker finds them depends on its boundaries (gear resynchronises within a chunk; PARSEC's
// chained Rabin scan only where its cuts happen to meet).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/dedup/io.hpp"

namespace cdsb::dedup {

struct GeneratorSettings {
  std::uint64_t bytes = 0;
  double dup_ratio = 0.0;        // [0, 1)
  double compressibility = 0.5;  // [0, 1]
  std::uint64_t seed = 1;
};

void generate(const GeneratorSettings& settings, FdWriter& out);

// "64MiB", "1GiB", "100MB", "4096": bytes (binary suffixes KiB/MiB/GiB/TiB, decimal kB/MB/GB/TB,
// B or none); nullopt when malformed or above 2^50.
std::optional<std::uint64_t> parse_size(std::string_view text);

}  // namespace cdsb::dedup
