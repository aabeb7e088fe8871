// The command line of `cdsbench`: parsed with CLI11, every value checked here, so a bad value
// ends in one line naming the option, the value and what is allowed (exit status 2).
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "bench/config.hpp"
#include "bench/registry.hpp"

namespace cdsb::bench {

struct UsageError {
  std::string message;  // one line, no trailing newline
};
struct HelpShown {};     // --help printed; exit 0

std::variant<Config, UsageError, HelpShown> parse_command_line(int argc, const char* const* argv,
                                                               const Registry& registry);

}  // namespace cdsb::bench
