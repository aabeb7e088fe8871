// The result type most sequential structures here share: whether the operation found /
// changed something, and the value it returns (the min, the popped item, the found value,
// a rank, a score as two's-complement bits). Trivially copyable, so the black-box
// constructions can keep it in their response slots.
#pragma once

#include <cstdint>

namespace cdsb::seq {

struct Answer {
  bool ok = false;
  std::uint64_t value = 0;
  friend bool operator==(const Answer&, const Answer&) = default;
};

}  // namespace cdsb::seq
