// Drawing an operation's type (P4): each operation independently, from per-type rates.
// Shared by every workload; the codes are generic (a set's search is a black box's read).
#pragma once

#include <array>
#include <cstdint>

namespace cdsb::bench {

// The operation types OpMix draws: reads (searches) are what the rates leave. The last two
// are a map's (the set workload runs them on structures that model ConcurrentMap).
enum OpCode : int { op_read = 0, op_insert = 1, op_delete = 2, op_range_query = 3, op_find_or_insert = 4, op_assign = 5 };

// Op-type thresholds on 32 random bits, cumulative in the order of `drawn`; the rest are
// reads.
struct OpMix {
  static constexpr int rated_types = 5;
  static constexpr std::array<OpCode, rated_types> drawn{op_insert, op_delete, op_range_query, op_find_or_insert, op_assign};
  std::array<std::uint64_t, rated_types> below{};

  static constexpr double scale = 4294967296.0;  // 2^32
  static OpMix from_percent(double ins, double del, double rq, double find_or_insert = 0, double assign = 0) {
    auto at = [](double pct) { return static_cast<std::uint64_t>(pct / 100.0 * scale + 0.5); };
    const double cumulative[rated_types] = {ins, ins + del, ins + del + rq, ins + del + rq + find_or_insert,
                                            ins + del + rq + find_or_insert + assign};
    OpMix m;
    for (int i = 0; i < rated_types; ++i) m.below[i] = at(cumulative[i]);
    return m;
  }

  // Draws among reads and the first Types rated types (the others' rates must be 0), so a
  // workload pays only for the types it runs. Branch-free: the type is random, so a branch
  // per threshold would often be mispredicted. The thresholds are cumulative, so how many of
  // them u is below names the type.
  template <int Types = 3>
  int draw(std::uint64_t random) const noexcept {
    static_assert(Types >= 1 && Types <= rated_types);
    static constexpr auto type_below = [] {
      std::array<int, Types + 1> t{};
      t[0] = op_read;
      for (int below_count = 1; below_count <= Types; ++below_count) t[below_count] = drawn[Types - below_count];
      return t;
    }();
    const std::uint64_t u = random >> 32;
    int below_count = 0;
    for (int i = 0; i < Types; ++i) below_count += int{u < below[i]};
    return type_below[below_count];
  }
};

}  // namespace cdsb::bench
