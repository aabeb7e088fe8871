// The command line of `cdsbench`: parsed with CLI11, every value checked here, so a bad value
// ends in one line naming the option, the value and what is allowed (exit status 2).
#pragma once

#include <charconv>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <variant>

#include <CLI/CLI.hpp>

#include "bench/harness/config.hpp"
#include "bench/registry/registry.hpp"

namespace cdsb::bench {

struct UsageError {
  std::string message;  // one line, no trailing newline
};
struct HelpShown {};     // --help or --version printed; exit 0

// An integer option value in [min, max]; throws UsageError naming the option otherwise.
template <class Int>
Int parse_integer(const std::string& option, const std::string& text, Int min, Int max) {
  Int value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const std::string allowed = "; allowed: an integer in " + std::to_string(min) + ".." + std::to_string(max);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end)
    throw UsageError{option + ": '" + text + "' is not an integer" + allowed};
  if (ec == std::errc::result_out_of_range || value < min || value > max)
    throw UsageError{option + ": " + text + " is out of range" + allowed};
  return value;
}

// Runs CLI11 on the command line: nullopt when parsed, else --help (printed) or a one-line
// usage error. Shared by every binary of the harness so their errors read alike.
std::optional<std::variant<UsageError, HelpShown>> parse_with_cli11(CLI::App& app, int argc,
                                                                    const char* const* argv);

// Runs body() (an int: the exit status) and turns what it throws into one line on stderr,
// "PROGRAM: what", and the exit status: HelpShown 0, UsageError 2, any other exception 1.
template <class Body>
int exit_status_of(const char* program, Body&& body) {
  try {
    return body();
  } catch (const HelpShown&) {
    return 0;
  } catch (const UsageError& e) {
    std::cerr << program << ": " << e.message << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << '\n';
    return 1;
  }
}

std::variant<Config, UsageError, HelpShown> parse_command_line(int argc, const char* const* argv,
                                                               const Registry& registry);

}  // namespace cdsb::bench
