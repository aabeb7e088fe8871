// A generator chosen at run time (`--prng NAME`), for the harness's one measured loop.
//
// The concrete generators live in a std::variant whose alternatives are in GeneratorKind
// order, so the variant's index is the kind. next() is a switch on that index: a jump table
// (or, for the default, a compare and a predicted branch) in front of an inlined next(),
// instead of a virtual call that would block inlining of the ~1 ns xoshiro step.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "cdsbench/random/generators.hpp"

namespace cdsb {

enum class GeneratorKind {
  xoshiro256starstar,
  splitmix64,
  xorshift64star,
  murmur3_counter,
  murmur2_counter,
  mt19937_64,
  fnv1a_counter,
  rdrand,
};

namespace detail {

// Alternative i is the generator of GeneratorKind i (checked below).
using GeneratorVariant = std::variant<Xoshiro256StarStar, SplitMix64, Xorshift64Star,
                                      Murmur3Counter, Murmur2Counter, Mt19937_64, Fnv1aCounter,
                                      Rdrand>;

inline constexpr std::size_t generator_count = std::variant_size_v<GeneratorVariant>;
static_assert(static_cast<std::size_t>(GeneratorKind::rdrand) + 1 == generator_count);

template <GeneratorKind K, class G>
inline constexpr bool kind_is =
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(K), GeneratorVariant>, G>;
static_assert(kind_is<GeneratorKind::xoshiro256starstar, Xoshiro256StarStar>);
static_assert(kind_is<GeneratorKind::splitmix64, SplitMix64>);
static_assert(kind_is<GeneratorKind::xorshift64star, Xorshift64Star>);
static_assert(kind_is<GeneratorKind::murmur3_counter, Murmur3Counter>);
static_assert(kind_is<GeneratorKind::murmur2_counter, Murmur2Counter>);
static_assert(kind_is<GeneratorKind::mt19937_64, Mt19937_64>);
static_assert(kind_is<GeneratorKind::fnv1a_counter, Fnv1aCounter>);
static_assert(kind_is<GeneratorKind::rdrand, Rdrand>);

// Names come from the generator classes themselves: one spelling of each name.
template <std::size_t... I>
constexpr std::array<std::string_view, sizeof...(I)> names_of(std::index_sequence<I...>) {
  return {std::variant_alternative_t<I, GeneratorVariant>::name...};
}
inline constexpr auto generator_names = names_of(std::make_index_sequence<generator_count>{});

template <std::size_t... I>
constexpr std::array<GeneratorKind, sizeof...(I)> kinds_of(std::index_sequence<I...>) {
  return {static_cast<GeneratorKind>(I)...};
}
inline constexpr auto generator_kinds = kinds_of(std::make_index_sequence<generator_count>{});

template <std::size_t... I>
GeneratorVariant make_generator(std::size_t index, std::index_sequence<I...>) {
  GeneratorVariant v;
  ((I == index ? static_cast<void>(v.template emplace<I>()) : static_cast<void>(0)), ...);
  return v;
}

}  // namespace detail

// Every kind, in declaration order (xoshiro256starstar, the default, first).
constexpr std::span<const GeneratorKind> all_generators() noexcept {
  return detail::generator_kinds;
}

constexpr std::string_view generator_name(GeneratorKind kind) noexcept {
  return detail::generator_names[static_cast<std::size_t>(kind)];
}

constexpr std::optional<GeneratorKind> generator_from_name(std::string_view name) noexcept {
  for (GeneratorKind kind : detail::generator_kinds) {
    if (generator_name(kind) == name) return kind;
  }
  return std::nullopt;
}

// False only for rdrand on a CPU without the instruction.
inline bool generator_available(GeneratorKind kind) noexcept {
  return kind != GeneratorKind::rdrand || Rdrand::available();
}

class AnyGenerator {
 public:
  // Throws std::invalid_argument for a kind this machine cannot run (rdrand without the
  // CPU flag): better than SIGILL in the middle of a trial.
  AnyGenerator(GeneratorKind kind, std::uint64_t seed)
      : state_(detail::make_generator(static_cast<std::size_t>(kind),
                                      std::make_index_sequence<detail::generator_count>{})) {
    if (!generator_available(kind)) {
      throw std::invalid_argument(std::string(generator_name(kind)) +
                                  ": not available on this CPU");
    }
    this->seed(seed);
  }

  GeneratorKind kind() const noexcept { return static_cast<GeneratorKind>(state_.index()); }
  std::string_view name() const noexcept { return generator_name(kind()); }

  // The default kind is inlined; the others go through one out-of-line call, which keeps
  // the measured loop small. Always inlined: the measured loop draws twice per operation,
  // and GCC left the second draw out of line there (about 1 ns per operation).
  [[gnu::always_inline]] std::uint64_t next() {
    if (state_.index() == 0) [[likely]] return std::get_if<0>(&state_)->next();
    return next_other();
  }

  void seed(std::uint64_t s) {
    std::visit([s](auto& g) { g.seed(s); }, state_);
  }

 private:
  // In each case the index is established, so get_if cannot be null.
  [[gnu::noinline]] std::uint64_t next_other() {
    switch (state_.index()) {
      case 0: return std::get_if<0>(&state_)->next();
      case 1: return std::get_if<1>(&state_)->next();
      case 2: return std::get_if<2>(&state_)->next();
      case 3: return std::get_if<3>(&state_)->next();
      case 4: return std::get_if<4>(&state_)->next();
      case 5: return std::get_if<5>(&state_)->next();
      case 6: return std::get_if<6>(&state_)->next();
      case 7: return std::get_if<7>(&state_)->next();
    }
    // Reached only by a valueless variant: a copy-assignment whose allocation threw.
    std::fputs("cdsbench: AnyGenerator used after a failed assignment\n", stderr);
    std::abort();
  }

  static_assert(detail::generator_count == 8, "next_other() lists every alternative");
  detail::GeneratorVariant state_;
};

static_assert(Generator<AnyGenerator>);
static_assert(sizeof(AnyGenerator) <= 64, "one cache line: the harness holds one per thread");

}  // namespace cdsb
