// The fingerprint of a sequence of operations: the generic sequential oracle of the
// linearizability checker (tools/lincheck, model `oracle`).
//
// fp(empty) = 0; fp(s . update(a_1, ..., a_k)) = step(fp(s), a_1, ..., a_k) with
//   step(h, a_1..a_k): for i = 1..k: h = splitmix64_mix(h XOR (a_i + i * 0x9e3779b97f4a7c15))
// (all arithmetic modulo 2^64). A structure that returns, for each update, the fingerprint of
// the updates applied so far including it, and for each read the current fingerprint, lets
// the checker verify exactly what a black-box construction must guarantee whatever the
// structure: one total order of the updates, each applied once, that every read observes a
// prefix of, consistent with real time. The Go model computes the same function; the C++
// and Go tests pin one known value so the two cannot drift apart.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "cdsbench/random/generators.hpp"

namespace cdsb::seq {

constexpr std::uint64_t fingerprint_step(std::uint64_t h, std::initializer_list<std::uint64_t> args) noexcept {
  std::uint64_t i = 1;
  for (std::uint64_t a : args) h = cdsb::detail::splitmix64_mix(h ^ (a + i++ * cdsb::detail::splitmix64_gamma));
  return h;
}

}  // namespace cdsb::seq
