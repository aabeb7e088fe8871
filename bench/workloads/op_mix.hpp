// Drawing an operation's type (P4): each operation independently, from per-type rates.
// Shared by every workload; the codes are generic (a set's search is a black box's read).
#pragma once

#include <cstdint>

namespace cdsb::bench {

// The operation types OpMix draws: reads (searches) are what the rates leave.
enum OpCode : int { op_read = 0, op_insert = 1, op_delete = 2, op_range_query = 3 };

// Op-type thresholds on 32 random bits: cumulative insert, delete, range query; the rest
// are reads.
struct OpMix {
  std::uint64_t insert_below = 0, delete_below = 0, rq_below = 0;

  static constexpr double scale = 4294967296.0;  // 2^32
  static OpMix from_percent(double ins, double del, double rq) {
    auto at = [](double pct) { return static_cast<std::uint64_t>(pct / 100.0 * scale + 0.5); };
    return {at(ins), at(ins + del), at(ins + del + rq)};
  }
  // Branch-free: the type is random, so a branch per threshold would often be mispredicted.
  // The thresholds are cumulative, so how many of them u is below names the type.
  int draw(std::uint64_t random) const noexcept {
    static constexpr int type_below[4] = {op_read, op_range_query, op_delete, op_insert};
    const std::uint64_t u = random >> 32;
    return type_below[int{u < insert_below} + int{u < delete_below} + int{u < rq_below}];
  }
};

}  // namespace cdsb::bench
